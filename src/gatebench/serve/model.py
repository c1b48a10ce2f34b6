"""What the service serves: a detector, its operating threshold, and limits.

Defined in :mod:`gatebench.served`, below :mod:`gatebench.api`, which builds
them for ``gatebench detect`` too; re-exported here for the service's modules.
"""

from gatebench.served import ServedModel, ServeSettings

__all__ = ["ServeSettings", "ServedModel"]

"""Exception hierarchy.

Every message names the thing that is wrong (file, row, parameter), the bad
value, and the fix, so that a user never has to read a traceback to act.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DataError",
    "DetectorError",
    "GatebenchError",
    "PluginError",
    "SchemaError",
    "SourceMissingError",
]


class GatebenchError(Exception):
    """Base class of every error gatebench raises on purpose."""


class ConfigError(GatebenchError, ValueError):
    """A parameter, flag or configuration value is invalid."""


class PluginError(ConfigError):
    """An installed plug-in (an entry point of another package) cannot be used."""


class DataError(GatebenchError):
    """An input file or row cannot be used."""


class SourceMissingError(DataError):
    """A benchmark's files are neither in the mirror nor reachable on the hub."""


class DetectorError(GatebenchError):
    """A detector failed or produced invalid output."""


class SchemaError(GatebenchError):
    """An artifact or external table does not match its expected schema."""

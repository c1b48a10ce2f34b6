"""Bulk scoring and near-duplicate audit of large files, streamed in partitions.

``gatebench score`` and ``gatebench audit`` call :func:`score_file` and
:func:`audit_file`; both run locally or on a dask cluster with identical output.
"""

from gatebench.bulk.audit import audit_file
from gatebench.bulk.score import score_file

__all__ = ["audit_file", "score_file"]

"""Bulk scoring and near-duplicate audit of large files, streamed in partitions.

``gatebench score`` and ``gatebench audit`` call :func:`score_file` and
:func:`audit_file`; both run locally or on a dask cluster with identical output.
``gatebench tune-threshold`` calls :func:`tune_threshold`, which scores a sample
of benign traffic the same way and re-picks a model directory's threshold on it;
``gatebench adapt`` (:mod:`gatebench.bulk.adapt`) first refits the model with part
of the sample.
"""

from gatebench.bulk.audit import audit_file
from gatebench.bulk.retune import tune_threshold
from gatebench.bulk.score import score_file

__all__ = ["audit_file", "score_file", "tune_threshold"]

"""Group keys and fold assignment: which rows may never be split apart, and where each row goes."""

from gatebench.split.groups import (
    GroupResult,
    GroupStats,
    LSHParams,
    cross_source_duplicates,
    group_keys,
    near_duplicate_clusters,
)
from gatebench.split.splitters import (
    HEADLINE_PASS,
    PASSES,
    TRAINING_ONLY,
    assign_folds,
    fold_label_marginals,
    inner_split,
    leave_one_source_out,
    stratified_folds,
    stratified_group_folds,
)

__all__ = [
    "HEADLINE_PASS",
    "PASSES",
    "TRAINING_ONLY",
    "GroupResult",
    "GroupStats",
    "LSHParams",
    "assign_folds",
    "cross_source_duplicates",
    "fold_label_marginals",
    "group_keys",
    "inner_split",
    "leave_one_source_out",
    "near_duplicate_clusters",
    "stratified_folds",
    "stratified_group_folds",
]

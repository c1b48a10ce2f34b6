"""The in-distribution figures a never-seen evaluation is read against.

A model directory from ``gatebench train`` names the run whose pooled
StratifiedKFold OOF scores chose its threshold; that run's headline micro
metrics (with their intervals) are the in-distribution side of the figure.
"""

from __future__ import annotations

from pathlib import Path

from gatebench.artifacts import read_result
from gatebench.errors import SchemaError
from gatebench.modeldir import LoadedModel
from gatebench.unseen.result import Rates

__all__ = ["in_distribution"]


def in_distribution(model: LoadedModel, threshold: float) -> Rates | None:
    """The evaluation run's headline rates, or None when the run is gone or chose another point."""
    run = model.meta.get("evaluation_run")
    if not run or not (Path(str(run)) / "result.json").is_file():
        return None
    try:
        result = read_result(Path(str(run)))
    except SchemaError:
        return None
    if abs(result.operating_point.threshold - threshold) > 1e-12:
        return None
    micro = result.headline.micro
    cis = dict(micro.ci)
    if result.headline.auc_ci is not None:
        cis["auc"] = result.headline.auc_ci
    return Rates(
        n=micro.n,
        n_attack=int(micro.get("n_pos") or 0),
        n_benign=int(micro.get("n_neg") or 0),
        recall=micro.recall,
        fpr=micro.fpr,
        f1=micro.f1,
        precision=micro.precision,
        auc=micro.auc,
        ci=cis,
    )

"""Gate fitted straight from a trace frame, with its operating point: ``train_model``.

``train_model`` follows the harness's own rules for the operating point: it
cross-fits Gate over the trace (StratifiedKFold, fresh model per fold, inner
85/15 split), chooses the threshold that maximises F1 at pooled FPR <= 1% on
the out-of-fold scores, then fits the final model on all rows and records
that threshold, the trace id and the head list in the model directory. Every
fit is handed the rows' sources, as the harness hands them, so a model built
here is weighted like one from ``gatebench train`` (which goes through
:func:`gatebench.api.train`). The speed benchmark builds its model here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gatebench.gate.model import Gate
from gatebench.trace import row_positions

__all__ = ["train_model"]


def train_model(
    trace_frame: pd.DataFrame,
    out_dir: Path | str,
    *,
    seed: int = 0,
    trace_id: str | None = None,
    folds: int = 5,
    max_fpr: float = 0.01,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Fit Gate on a trace and write its model directory.

    Parameters
    ----------
    trace_frame : DataFrame
        A trace frame (columns ``text``, ``label``, ``sample_id``; one row per
        chunk). Its ``source`` column, where there is one, goes to every fit,
        for Gate's source-balanced weights; its ``position`` column, where
        every row has one, to every fit and score, for the data guard.
    out_dir : path
        Model directory to write.
    seed : int
        Root seed (folds, inner splits, models).
    trace_id : str, optional
        Recorded in the model directory for provenance.
    folds : int
        Outer folds used to choose the operating point; 0 skips it and
        records no threshold.
    max_fpr : float
        FPR bound of the operating point.
    params : dict, optional
        Extra :class:`Gate` parameters.

    Returns
    -------
    dict
        ``model_dir``, ``threshold``, the operating point's metrics on the
        OOF scores (per prompt, chunks max-pooled) and the final fit's info.
    """
    from sklearn.model_selection import StratifiedKFold, train_test_split

    from gatebench.seeding import child_seed
    from gatebench.threshold import select_operating_point

    params = dict(params or {})
    texts = trace_frame["text"].astype(str).tolist()
    y = trace_frame["label"].to_numpy(dtype=np.int64)
    src: list[str] | None = (
        trace_frame["source"].astype(str).tolist() if "source" in trace_frame else None
    )
    where = row_positions(trace_frame)
    pos: list[str] | None = None if where is None else [str(p) for p in where]

    def take(values: list[str] | None, rows: Any) -> list[str] | None:
        return None if values is None else [values[i] for i in rows]

    summary: dict[str, Any] = {"threshold": None}
    if folds:
        oof = np.zeros(len(y))
        splitter = StratifiedKFold(folds, shuffle=True, random_state=child_seed(seed, "folds"))
        for k, (tr, te) in enumerate(splitter.split(np.zeros(len(y)), y)):
            itr, iva = train_test_split(
                tr, test_size=0.15, stratify=y[tr], random_state=child_seed(seed, "inner", k)
            )
            gate = Gate(seed=child_seed(seed, "gate", k), **params)
            gate.fit(
                [texts[i] for i in itr],
                y[itr],
                valid=([texts[i] for i in iva], y[iva]),
                sources=take(src, itr),
                positions=take(pos, itr),
                valid_positions=take(pos, iva),
                valid_sources=take(src, iva),
            )
            oof[te] = gate.score([texts[i] for i in te], positions=take(pos, te))
        # Metrics are per prompt: a chunked prompt takes its highest chunk score (§2.4).
        ids = trace_frame["sample_id"].to_numpy()
        pooled = pd.DataFrame({"id": ids, "y": y, "s": oof}).groupby("id").max()
        op = select_operating_point(pooled["y"].to_numpy(), pooled["s"].to_numpy(), max_fpr=max_fpr)
        summary.update(
            threshold=float(op.threshold),
            oof_f1=float(op.f1),
            oof_precision=float(op.precision),
            oof_recall=float(op.recall),
            oof_fpr=float(op.fpr),
            feasible=bool(op.feasible),
        )
    final = Gate(seed=child_seed(seed, "gate", "final"), threshold=summary["threshold"], **params)
    final.fit(texts, y, sources=src, positions=pos)
    path = final.save(out_dir, trace_id=trace_id)
    summary.update(model_dir=str(path), fit_info=final.fit_info)
    return summary

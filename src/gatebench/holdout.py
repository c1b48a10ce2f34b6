"""Prompts kept out of a shipped model's fit: the texts it has provably never seen.

``gatebench train --holdout`` fits on the rest and writes these beside the
model, so latency and quality can be measured on unseen text: a cascade
timed on its own training texts routes a different share of them to the
deferred stage than it routes unseen traffic.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gatebench.errors import ConfigError
from gatebench.modeldir import HOLDOUT_FILE
from gatebench.trace import prompts_from_chunks, scored_rows

__all__ = ["split_holdout", "write_holdout"]


def split_holdout(
    frame: pd.DataFrame, fraction: float, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``(rows to fit, held-out rows)``: a label-stratified share of whole prompts held out.

    Only evaluation prompts are held out; training-corpus rows always stay with
    the rows to fit.

    Parameters
    ----------
    frame : DataFrame
        A trace frame (``sample_id``, ``label``, one row per chunk); all of a
        prompt's chunks land on the same side.
    fraction : float
        Share of each label's prompts held out, in [0, 1); 0 holds out nothing.
    seed : int
        Seed of the draw.

    Returns
    -------
    (DataFrame, DataFrame or None)
        The rows to fit and the held-out rows (None when ``fraction`` is 0).
    """
    if not 0.0 <= fraction < 1.0:
        raise ConfigError(
            f"--holdout {fraction!r}: give the share of prompts to keep out, in [0, 1), e.g. 0.2"
        )
    if fraction == 0.0:
        return frame, None
    # Only evaluation prompts are held out: training corpora are fitted on, never scored.
    prompts = frame[scored_rows(frame)].groupby("sample_id", sort=True)["label"].first()
    rng = np.random.default_rng(seed)
    held: list[Any] = []
    for _, ids in prompts.groupby(prompts, sort=True):
        k = round(fraction * len(ids))
        held += rng.choice(ids.index.to_numpy(), size=k, replace=False).tolist()
    mask = frame["sample_id"].isin(set(held)).to_numpy()
    if mask.all() or not mask.any():
        raise ConfigError(
            f"--holdout {fraction}: leaves {'nothing to fit' if mask.all() else 'nothing held out'}"
            f" on this trace of {len(prompts)} prompts; choose a share between them"
        )
    return frame[~mask], frame[mask]


def write_holdout(
    model_dir: Path, held: pd.DataFrame, overlap: int, fraction: float
) -> dict[str, Any]:
    """Write the held-out prompts, rebuilt whole from their chunks, as JSONL."""
    model_dir.mkdir(parents=True, exist_ok=True)
    firsts = held.sort_values(["sample_id", "chunk"]).groupby("sample_id", sort=True).first()
    texts = prompts_from_chunks(held, overlap)
    with (model_dir / HOLDOUT_FILE).open("w", encoding="utf-8") as fh:
        for (sid, row), text in zip(firsts.iterrows(), texts, strict=True):
            rec = {"sample_id": sid, "source": row["source"], "label": int(row["label"])}
            fh.write(json.dumps({**rec, "text": text}, ensure_ascii=False) + "\n")
    return {"fraction": fraction, "prompts": len(texts), "file": HOLDOUT_FILE}

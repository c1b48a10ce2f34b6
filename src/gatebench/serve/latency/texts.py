"""The request texts a latency measurement sends, and whether the model was fitted on them.

Request texts are a seeded sample of the model's held-out prompts when it has
them (``gatebench train --holdout``), else of the default trace's prompts
(rebuilt whole from their chunks), so short prompts and long documents come
in the evaluation's natural mix; ``texts_file`` replaces them with a JSONL
file. Timed on its own training texts, a cascade routes a different share to
the deferred stage than it routes unseen traffic, so the result records which
it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from gatebench.api import build_trace_from_options
from gatebench.errors import DataError
from gatebench.modeldir import HOLDOUT_FILE
from gatebench.trace import prompts_from_chunks

__all__ = ["request_texts", "texts_for_model"]


def _texts_from_jsonl(path: Path) -> list[str]:
    texts = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DataError(f"cannot read --texts {path}: {exc}") from exc
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise DataError(f'{path}:{n}: expected an object with a "text" string')
        if row["text"].strip():
            texts.append(row["text"])
    if not texts:
        raise DataError(f'{path} holds no non-empty {{"text": ...}} rows')
    return texts


def texts_for_model(model_dir: Path, texts_file: Path | None) -> tuple[Path | None, str]:
    """The request texts to use and whether the model was fitted on them.

    A model's held-out prompts (``gatebench train --holdout``) come first: timed
    on its own training texts, a cascade routes a different share to the
    deferred stage than it routes unseen traffic, so the latency mix is off.
    """
    if texts_file is not None:
        return texts_file, "unknown (--texts)"
    held = Path(model_dir) / HOLDOUT_FILE
    if held.is_file():
        return held, "no (the model's held-out prompts)"
    return None, (
        "yes: trace prompts the model was fitted on; train with --holdout 0.2 to time unseen texts"
    )


def _trace_prompts(data_dir: Path | str | None) -> tuple[list[str], dict[str, Any]]:
    """Every prompt of the default trace, rebuilt whole from its chunks."""
    trace = build_trace_from_options(data_dir=data_dir)
    prompts = prompts_from_chunks(trace.frame, int(trace.info["chunking"]["chunk_overlap"]))
    return prompts, {"source": "trace", "trace_id": trace.trace_id, "prompts": len(prompts)}


def request_texts(
    n: int,
    *,
    seed: int = 0,
    texts_file: Path | None = None,
    data_dir: Path | str | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """A seeded sample of ``n`` request texts and where they came from.

    Parameters
    ----------
    n : int
        How many texts (drawn without replacement while the pool lasts).
    seed : int
        Sampling seed.
    texts_file : path, optional
        JSONL of ``{"text": ...}`` rows; default: the default trace's prompts.
    data_dir : path, optional
        Benchmark mirror for the trace (default ``$GATEBENCH_DATA``).
    """
    info: dict[str, Any]
    if texts_file is not None:
        pool, info = _texts_from_jsonl(texts_file), {"source": str(texts_file)}
    else:
        pool, info = _trace_prompts(data_dir)
    rng = np.random.default_rng(seed)
    idx = rng.choice(len(pool), size=n, replace=n > len(pool))
    texts = [pool[i] for i in idx]
    lengths = np.array([len(t) for t in texts], dtype=np.float64)
    info |= {
        "n": n,
        "seed": seed,
        "chars": {
            "p50": float(np.median(lengths)),
            "mean": float(lengths.mean()),
            "p95": float(np.percentile(lengths, 95)),
            "max": int(lengths.max()),
        },
    }
    return texts, info

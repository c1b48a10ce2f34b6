"""The training texts a Gate score sits next to, named from the model's rebuilt training trace.

On text it never saw, Gate's errors follow the label of the nearest training
text: most false alarms sit next to a training attack, and most missed
attacks next to a benign training text (``benchmarks/lodo_familiarity.py``).
So the first question about a surprising score is which training rows it
leans on, and from which source. The model keeps its neighbour banks as
vectors and text keys, not texts; this rebuilds the training trace the model
directory records (refusing changed files) and names each neighbour by its
trace rows: source, label, sample id and text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gatebench.conversation import Conversation, ScanPolicy, driving_text
from gatebench.errors import ConfigError, DataError
from gatebench.gate.views import text_keys
from gatebench.unseen.overlap import training_trace

__all__ = ["errors_lean_on", "nearest_training_rows"]

_FIX = "give --data-dir where the model's sources are"
_LABELS = ("benign", "attack")


def nearest_training_rows(
    model_dir: Path,
    inputs: Sequence[str | Conversation],
    *,
    k: int = 5,
    policy: ScanPolicy | None = None,
    positions: Sequence[str | None] | None = None,
    data_dir: Path | None = None,
    cache_dir: Path | None = Path(".cache/gatebench"),
) -> list[dict[str, Any]]:
    """Each input's score and its ``k`` nearest training attacks and benign texts, named.

    Parameters
    ----------
    model_dir : Path
        A Gate model directory from ``gatebench train`` (its neighbour head
        holds the banks).
    inputs : sequence of str or Conversation
        Texts and conversations to look up; each is also scored, as
        ``gatebench detect`` scores it.
    k : int
        Neighbours per bank, at least 1.
    policy : ScanPolicy, optional
        Which roles of a conversation are scanned (``detect``'s default).
    positions : sequence of str or None, optional
        Where each text sits (``user``, ``tool`` or ``document``), as for
        :func:`gatebench.api.detect`.
    data_dir, cache_dir : Path, optional
        Where the model's sources are, and the trace cache.

    Returns
    -------
    list of dict
        Per input: ``gatebench detect``'s result without its timings (a
        text's ``chunk``, a conversation's ``driver`` and ``messages``), the
        ``threshold``; ``neighbours_read``, whether the score reads the
        neighbour head at all (not for text the route reads by meaning); and
        ``neighbours`` of the window that drove the score (nearest first,
        attacks then benign texts), each with
        ``label``, ``similarity`` (cosine in the neighbour head's space) and
        ``rows``: every training row with that normalised text (``source``,
        ``sample_id``, ``text``; duplicates across sources are all listed).

    Raises
    ------
    ConfigError
        ``k`` below 1, or a model that is not a Gate with a neighbour head.
    DataError
        The model's training trace cannot be rebuilt here.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"--k {k!r}: give a whole number of neighbours >= 1, e.g. 5")
    from gatebench.gate.model import Gate
    from gatebench.modeldir import load_model
    from gatebench.served import ServedModel, ServeSettings

    model = load_model(model_dir)
    gate = model.detector
    if not isinstance(gate, Gate):
        raise ConfigError(
            f"{model_dir} holds a {model.meta['detector']['name']!r} model; only Gate keeps "
            "its training texts' vectors to search. Train one with `gatebench train -d gate`"
        )
    trace = training_trace(model.meta, model_dir, data_dir=data_dir, cache_dir=cache_dir, fix=_FIX)
    # Scored as the service scores them; a long text or a conversation is
    # searched by the window that drove its score.
    served = ServedModel(gate, model.threshold, {}, ServeSettings())
    results = served.score_inputs(inputs, policy=policy, positions=positions)
    driving = [_driving(x, r) for x, r in zip(inputs, results, strict=True)]
    try:
        banks, read = gate.nearest_training(driving, k)
    except ValueError as exc:
        raise ConfigError(f"{model_dir}: {exc}") from None
    frame = trace.frame
    by_entry = _rows_by_entry(frame)
    out = []
    for i, result in enumerate(results):
        neighbours = []
        for label, (sims, keys) in zip((1, 0), banks, strict=True):
            for sim, key in zip(sims[i].tolist(), keys[i].tolist(), strict=True):
                neighbours.append(
                    {
                        "label": _LABELS[label],
                        "similarity": round(float(sim), 4),
                        "rows": _named(frame, by_entry.get((int(key), label), []), model_dir),
                    }
                )
        scored = {key: v for key, v in result.items() if key != "timings_ms"}
        out.append(
            {
                **scored,
                "threshold": model.threshold,
                "neighbours_read": bool(read[i]),
                "neighbours": neighbours,
            }
        )
    return out


def _driving(x: str | Conversation, result: dict[str, Any]) -> str:
    """The window of a text or conversation that drove its score."""
    if isinstance(x, str):
        return x[result["chunk"]["start"] : result["chunk"]["end"]]
    return driving_text(x, result["driver"])


def _named(frame: Any, rows: list[int], model_dir: Path) -> list[dict[str, Any]]:
    """The trace rows of one bank entry, as plain records."""
    named = [
        {
            "source": str(frame["source"].iat[r]),
            "sample_id": str(frame["sample_id"].iat[r]),
            "text": str(frame["text"].iat[r]),
        }
        for r in rows
    ]
    if not named:
        # The bank was fitted on this trace, so every entry's text is in it with its label.
        raise DataError(
            f"{model_dir}: a training text of its neighbour bank is not in the rebuilt "
            "training trace; the model directory and its manifest do not match. Retrain it "
            "with `gatebench train`"
        )
    return named


def _rows_by_entry(frame: Any) -> dict[tuple[int, int], list[int]]:
    """Trace rows by bank entry: the text key of their normalised text, and their label."""
    keys = text_keys(frame["text"].tolist()).tolist()
    by_entry: dict[tuple[int, int], list[int]] = {}
    for row, entry in enumerate(zip(keys, frame["label"].astype(int).tolist(), strict=True)):
        by_entry.setdefault(entry, []).append(row)
    return by_entry


def errors_lean_on(
    gate: Any, train: Any, false_alarms: Sequence[str], missed: Sequence[str]
) -> list[dict[str, Any]]:
    """The training sources that never-seen errors sit next to, most first.

    Each false alarm (a benign prompt's driving chunk) counts under the source
    of its nearest training attack, each missed attack under that of its
    nearest benign training text, by ``gate``'s neighbour head. Where a text
    is in several sources, the first in the training trace ``train`` counts.

    Raises
    ------
    ValueError
        ``gate`` has no neighbour head.
    """
    if not false_alarms and not missed:
        return []
    frame = train.frame
    by_entry = _rows_by_entry(frame)
    sources = frame["source"].to_numpy()
    # One search for both kinds of error: the false alarms first, then the misses.
    banks, _ = gate.nearest_training([*false_alarms, *missed], 1)
    split = len(false_alarms)
    out: list[dict[str, Any]] = []
    for outcome, texts, keys, label in (
        ("false alarm", false_alarms, banks[0][1][:split, 0], 1),
        ("missed attack", missed, banks[1][1][split:, 0], 0),
    ):
        tally: Counter[str] = Counter()
        for key in keys.tolist():
            rows = by_entry.get((int(key), label), [])
            tally[str(sources[rows[0]]) if rows else "(not in the training trace)"] += 1
        for source, n in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])):
            out.append(
                {
                    "outcome": outcome,
                    "nearest": _LABELS[label],
                    "source": source,
                    "prompts": n,
                    "share": round(n / len(texts), 4),
                }
            )
    return out

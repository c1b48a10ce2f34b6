"""Model directories: a fitted detector plus the operating point it ships with.

Layout::

    MODEL_DIR/
      gatebench-model.json   format version, detector spec, threshold, τ, trace id, versions
      state/                 the detector's own files (plain JSON / .npy / LightGBM text)
      holdout.jsonl          prompts kept out of fitting (``gatebench train --holdout``)

Loading never unpickles: detectors write plain formats through ``save(path)``
and read them back with a ``load(path)`` classmethod on their registered factory.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatebench.detectors import DETECTORS, Detector, DetectorSpec
from gatebench.errors import ConfigError, SchemaError

__all__ = [
    "MODEL_FORMAT",
    "LoadedModel",
    "load_model",
    "model_summary",
    "read_manifest",
    "save_model",
    "shipped_fpr",
    "shipped_rule",
]

MODEL_FORMAT = 1
MANIFEST = "gatebench-model.json"
#: Held-out prompts written by ``train --holdout``; latency benchmarks time these first.
HOLDOUT_FILE = "holdout.jsonl"


@dataclass
class LoadedModel:
    """A detector read back from a model directory, with its shipped metadata."""

    detector: Detector
    meta: dict[str, Any]

    @property
    def threshold(self) -> float:
        return float(self.meta["threshold"])


def save_model(
    detector: Detector,
    path: Path,
    *,
    spec: DetectorSpec,
    threshold: float,
    target_fpr: float,
    trace_id: str | None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write ``detector`` and its operating point to ``path``."""
    from gatebench.artifacts import environment, write_json

    save = getattr(detector, "save", None)
    if save is None:
        raise ConfigError(
            f"detector {spec.name!r} cannot be saved: it has no save(path) method; "
            "only detectors with a plain-format state can ship as a model directory"
        )
    path.mkdir(parents=True, exist_ok=True)
    save(path / "state")
    # What the detector was, defaults included: the spec lists only what was passed.
    params = getattr(detector, "params", None)
    meta = {
        "format": MODEL_FORMAT,
        "detector": spec.as_dict(),
        "settings": params() if callable(params) else None,
        "threshold": float(threshold),
        "target_fpr": float(target_fpr),
        "trace_id": trace_id,
        "environment": environment(),
        **(extra or {}),
    }
    write_json(path / MANIFEST, meta)
    return path


def shipped_rule(meta: dict[str, Any]) -> str | None:
    """How a manifest's threshold was chosen: re-picked on traffic, else the training rule.

    A model refitted on part of the traffic (``gatebench adapt``) says so while
    its threshold is the one picked on the other part (the same file's digest).
    """
    tuned = meta.get("traffic_threshold")
    if isinstance(tuned, dict) and tuned.get("rule"):
        if _picked_on_untrained_part(meta):
            return f"benign traffic, the part not trained on: {tuned['rule']}"
        return f"benign traffic: {tuned['rule']}"
    op = meta.get("operating_point")
    return op.get("rule") if isinstance(op, dict) else None


def shipped_fpr(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The benign flag rate a manifest's threshold was measured at, and on what.

    It is the baseline a service's block rate is read against: on traffic that
    is mostly benign, a block rate well above it says the threshold does not
    hold there. A threshold re-picked on traffic gives that sample's rate (for
    ``gatebench adapt``, the part not trained on); the default training rule
    gives the mean over benign sources held out of the fit; the headline rule
    gives the pooled out-of-fold rate, on sources the fold models saw, which
    new traffic usually exceeds. None when the manifest records no rate.

    Returns
    -------
    dict or None
        ``value`` (a rate in [0, 1]) and ``measured_on`` (in words).
    """
    tuned = meta.get("traffic_threshold")
    if isinstance(tuned, dict) and isinstance(tuned.get("chosen"), dict):
        part = " (the part not trained on)" if _picked_on_untrained_part(meta) else ""
        return _rate(tuned["chosen"].get("fpr"), f"the benign traffic sample{part}")
    op = meta.get("operating_point")
    if not isinstance(op, dict):
        return None
    if "mean_fpr" in op:
        return _rate(op["mean_fpr"], "mean over benign sources held out of the fit")
    return _rate(op.get("fpr"), "pooled out-of-fold benign rows of sources the folds saw")


def _picked_on_untrained_part(meta: dict[str, Any]) -> bool:
    """Whether ``gatebench adapt`` re-picked the threshold on the traffic it did not fit on."""
    tuned, adapted = meta.get("traffic_threshold"), meta.get("adapted")
    tune = adapted.get("tune", {}) if isinstance(adapted, dict) else {}
    given = tuned.get("input", {}).get("sha256") if isinstance(tuned, dict) else None
    return bool(tune.get("sha256")) and tune.get("sha256") == given


def _rate(value: Any, measured_on: str) -> dict[str, Any] | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        return None
    return {"value": float(value), "measured_on": measured_on}


def model_summary(meta: dict[str, Any]) -> dict[str, Any]:
    """What a manifest says about its model, in the order a reviewer asks.

    Which detector and recipe, on which trace; the threshold, the rule that
    placed it and the benign flag rate it was measured at; each source held
    out of the fit at that threshold (the default rule's folds); and what
    ``tune-threshold`` and ``adapt`` changed. Nothing is loaded or scored.

    Returns
    -------
    dict
        ``detector``, ``settings`` (the detector's own, defaults included;
        None when not recorded), ``trace``, ``threshold``, ``held_out`` (rows per source,
        empty for other rules), ``held_out_totals`` (or None), ``traffic`` and
        ``adapted`` (None unless re-picked or refitted), ``environment``.
    """
    spec, op = meta.get("trace_spec") or {}, meta.get("operating_point")
    op = op if isinstance(op, dict) else {}
    per_source: dict[str, Any] = op.get("per_source") or {}
    held_out = [
        {
            "source": name,
            "benign": row.get("n_benign", 0),
            "fpr": row.get("fpr"),
            "attacks": row.get("n_attack", 0),
            "recall": row.get("recall"),
            "in_mean": bool(row.get("averaged")),
        }
        for name, row in sorted(per_source.items())
    ]
    totals = (
        {k: op.get(k) for k in ("holdout", "n_folds", "mean_fpr", "pooled_fpr", "mean_recall",
                                "pooled_recall")}
        if per_source
        else None
    )  # fmt: skip
    tuned, adapted = meta.get("traffic_threshold"), meta.get("adapted")
    return {
        "detector": meta.get("detector"),
        "settings": meta.get("settings"),
        "trace": {
            "trace_id": meta.get("trace_id"),
            "sources": list(spec.get("sources", [])),
            "roles": dict(spec.get("roles", {})),
            "seed": spec.get("seed"),
            # Absent from models written before it was recorded.
            "refused_rows": meta.get("refused_rows"),
        },
        "threshold": {
            "value": meta.get("threshold"),
            "rule": shipped_rule(meta),
            "target_fpr": meta.get("target_fpr"),
            "shipped_fpr": shipped_fpr(meta),
        },
        "held_out": held_out,
        "held_out_totals": totals,
        "traffic": _traffic(tuned) if isinstance(tuned, dict) else None,
        "adapted": _adapted(adapted) if isinstance(adapted, dict) else None,
        "environment": meta.get("environment"),
    }


def _traffic(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("target_fpr", "confidence", "rows_read", "rows_rejected", "rows_trained_on",
            "rows_used", "chosen", "previous")  # fmt: skip
    return {"input": record.get("input", {}).get("path")} | {k: record.get(k) for k in keys}


def _adapted(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("from_model", "train_share", "split_draw")
    return {k: record.get(k) for k in keys} | {
        "train_rows": record.get("train", {}).get("rows"),
        "tune_rows": record.get("tune", {}).get("rows"),
    }


def read_manifest(path: Path | str) -> dict[str, Any]:
    """A model directory's checked manifest, without loading its detector.

    Raises
    ------
    SchemaError
        If the directory is not a model directory or was written by an
        incompatible gatebench version.
    """
    path = Path(path)
    try:
        meta = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise SchemaError(
            f"{path} is not a gatebench model directory ({MANIFEST} unreadable: {exc}); "
            "create one with `gatebench train`"
        ) from exc
    _check_manifest(meta, path / MANIFEST)
    return dict(meta)


def load_model(path: Path | str) -> LoadedModel:
    """Read a model directory written by :func:`save_model`.

    Raises
    ------
    SchemaError
        As :func:`read_manifest`, or if the detector's state is missing or
        cannot be loaded.
    """
    path = Path(path)
    meta = read_manifest(path)
    factory = DETECTORS.get(meta["detector"]["name"])
    loader = getattr(factory, "load", None)
    if loader is None:
        raise SchemaError(f"detector {meta['detector']['name']!r} has no load(path) classmethod")
    state = path / "state"
    if not state.exists():
        raise SchemaError(
            f"{path} has a manifest but no state/ (the fitted model); the directory is "
            "incomplete. Retrain with `gatebench train`"
        )
    try:
        detector = loader(state)
    except SchemaError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
        raise SchemaError(
            f"{state} cannot be loaded ({type(exc).__name__}: {exc}); the model files are "
            "damaged or incomplete. Retrain with `gatebench train`"
        ) from exc
    return LoadedModel(detector, meta)


def _check_manifest(meta: Any, where: Path) -> None:
    """The manifest's shape, checked before any field is used."""
    if not isinstance(meta, dict):
        raise SchemaError(
            f"{where} holds a JSON {type(meta).__name__}, not an object; it was not written "
            "by gatebench. Retrain with `gatebench train`"
        )
    if meta.get("format") != MODEL_FORMAT:
        env = meta.get("environment")
        packages = env.get("packages") if isinstance(env, dict) else None
        writer = packages.get("gatebench") if isinstance(packages, dict) else None
        raise SchemaError(
            f"{where} has model format {meta.get('format')!r}; this gatebench reads "
            f"format {MODEL_FORMAT}. Retrain with `gatebench train` or install the gatebench "
            f"version that wrote it ({writer})"
        )
    detector = meta.get("detector")
    if not isinstance(detector, dict) or not isinstance(detector.get("name"), str):
        raise SchemaError(
            f"{where}: 'detector' is {detector!r:.80}, expected an object with a 'name' string; "
            "retrain with `gatebench train`"
        )
    threshold = meta.get("threshold")
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
    ):
        raise SchemaError(
            f"{where}: 'threshold' is {threshold!r:.40}, expected a finite number; "
            "retrain with `gatebench train` or restore the manifest"
        )

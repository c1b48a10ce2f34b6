"""The source catalogue as ``gatebench data list`` and ``data show`` print it.

Available sources are loaded (before caps) to count their rows; hub-only
sources are never downloaded here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gatebench.data.loaders import DATASETS, get_loader
from gatebench.data.resolve import data_dir_from_env, resolve_root
from gatebench.errors import SourceMissingError

__all__ = ["list_sources", "show_source"]


def _card_dict(name: str) -> dict[str, Any]:
    card = get_loader(name).card
    out = asdict(card)
    out["family"] = str(card.family)
    out["role"] = str(card.role)
    out["primary_metric"] = str(card.primary_metric)
    return out


def list_sources(*, data_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """Every registered source with its card, availability and rows by label.

    Available sources are loaded (before caps) to count their rows; hub-only
    sources are never downloaded here.
    """
    mirror = data_dir_from_env(data_dir)
    rows = []
    for name in DATASETS.names():
        card = get_loader(name).card
        row = {k: v for k, v in _card_dict(name).items() if k != "files"}
        row.update(available=False, attack=None, benign=None, malformed=None, root=None)
        row["origin"] = DATASETS.origin(name)
        try:
            root = resolve_root(card, mirror, allow_hub=False)
        except SourceMissingError as exc:
            row["missing"] = str(exc)
        else:
            result = get_loader(name).load(root, seed=0)
            labels = Counter(s.label for s in result.samples)
            row.update(
                available=True,
                attack=labels[1],
                benign=labels[0],
                malformed=len(result.malformed),
                root=str(root),
            )
        rows.append(row)
    return rows


def show_source(name: str, *, data_dir: Path | str | None = None) -> dict[str, Any]:
    """One source's card, location, counts and a few example rows of each label."""
    loader = get_loader(name)
    info: dict[str, Any] = {
        "card": _card_dict(name),
        "root": None,
        "missing": "",
        "counts": {},
        "malformed": 0,
        "examples": [],
    }
    try:
        root = resolve_root(loader.card, data_dir_from_env(data_dir), allow_hub=False)
    except SourceMissingError as exc:
        info["missing"] = str(exc)
        return info
    result = loader.load(root, seed=0)
    info["root"] = str(root)
    info["counts"] = {
        "attack": sum(s.label for s in result.samples),
        "benign": sum(1 - s.label for s in result.samples),
    }
    info["malformed"] = len(result.malformed)
    for label in (1, 0):
        picks = [s for s in result.samples if s.label == label][:3]
        info["examples"].extend(
            {"label": s.label, "text": s.text, "id": s.sample_id} for s in picks
        )
    return info

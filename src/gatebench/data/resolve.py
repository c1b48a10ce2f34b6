"""Where a source's files come from: the local mirror, else the hub, else a clear error."""

from __future__ import annotations

import os
from pathlib import Path

from gatebench.data.cards import DatasetCard
from gatebench.errors import ConfigError, DataError, SourceMissingError

__all__ = ["DATA_ENV", "data_dir_from_env", "resolve_files", "resolve_root"]

DATA_ENV = "GATEBENCH_DATA"
_LAYOUT_HINT = (
    "expected a folder with one sub-folder per source in the upstream layout, "
    "e.g. <dir>/deepset-prompt-injections/data/raw/*.parquet (like ../shared/datasets)"
)


def data_dir_from_env(data_dir: Path | str | None = None) -> Path | None:
    """Return the mirror folder from ``data_dir`` or ``$GATEBENCH_DATA``, validated.

    Raises
    ------
    ConfigError
        If the folder is given but does not exist or is not a directory.
    """
    origin = "--data-dir"
    if data_dir is None:
        env = os.environ.get(DATA_ENV)
        if not env:
            return None
        data_dir, origin = env, DATA_ENV
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise ConfigError(
            f"{origin}={str(data_dir)!r} is not a directory; {_LAYOUT_HINT}. "
            f"Set {DATA_ENV} to the mirror, or unset it to fetch from the hub."
        )
    return path.resolve()


def resolve_files(card: DatasetCard, root: Path) -> list[Path]:
    """Expand the card's file patterns under ``root``, sorted; every pattern must match."""
    found: list[Path] = []
    for pattern in card.files:
        matches = sorted(p for p in root.glob(pattern) if p.is_file())
        if not matches:
            raise DataError(
                f"source {card.name!r}: no file matches {pattern!r} under {root}; "
                f"{_LAYOUT_HINT}. Re-fetch {card.upstream} at revision {card.revision}."
            )
        found.extend(matches)
    return found


def resolve_root(card: DatasetCard, data_dir: Path | None, *, allow_hub: bool = True) -> Path:
    """Find the root folder holding ``card``'s files.

    Order: a user's own file where it lies; ``data_dir/<card.name>`` in the
    mirror; then, for ``hf:`` sources, a snapshot of the hub dataset at the
    pinned revision (cached by ``huggingface_hub``); otherwise
    :class:`SourceMissingError` saying how to obtain the files.
    """
    if card.local_root is not None:
        # Before the mirror: a folder there of the same name is another source.
        resolve_files(card, card.local_root)
        return card.local_root
    if data_dir is not None:
        local = data_dir / card.name
        if local.is_dir():
            resolve_files(card, local)
            return local
    if allow_hub and card.hub_id is not None:
        return _snapshot_from_hub(card)
    raise SourceMissingError(_missing_message(card, data_dir))


def _missing_message(card: DatasetCard, data_dir: Path | None) -> str:
    where = f"{data_dir / card.name}" if data_dir else f"${DATA_ENV}/{card.name} (not set)"
    kind, _, ident = card.upstream.partition(":")
    how = {
        "hf": f"install gatebench[hub] and allow network access to fetch {ident}@{card.revision}",
        "github": f"clone https://github.com/{ident} at {card.revision} into {where}",
        "pypi": f"unpack the wheel {ident} into {where}",
        "zenodo": f"download Zenodo record {ident} into {where}",
    }.get(kind, f"place the upstream files of {card.upstream} in {where}")
    return (
        f"source {card.name!r} is not available: nothing at {where}. To get it, {how}; "
        "or pass --skip-missing to run on the sources that are available."
    )


def _snapshot_from_hub(card: DatasetCard) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise SourceMissingError(
            _missing_message(card, None) + " (huggingface_hub is not installed: "
            "pip install 'gatebench[hub]')"
        ) from exc
    try:
        path = snapshot_download(
            repo_id=str(card.hub_id),
            repo_type="dataset",
            revision=card.revision,
            allow_patterns=list(card.files),
        )
    except Exception as exc:  # hub client raises many transport-specific types
        raise SourceMissingError(
            f"{_missing_message(card, None)} Hub download of {card.hub_id}@{card.revision} "
            f"failed: {type(exc).__name__}: {exc}"
        ) from exc
    root = Path(path)
    resolve_files(card, root)
    return root

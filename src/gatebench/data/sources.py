"""What ``--sources`` names: registered sources, presets, and paths to a user's own files.

A path becomes a source like a registered one: a :class:`Loader` with a card
inferred from the file (its name from the file, its family from its labels,
role ``evaluation``), kept in ``LOCAL_SOURCES`` for the run. The file is read
once, when it is named, so that a bad file fails before any work and the
family is known before the trace is assembled.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path

from gatebench.data.cards import DatasetCard
from gatebench.data.files import SUFFIXES, data_files
from gatebench.data.loaders import DATASETS, LOCAL_SOURCES, Loader, LoadResult
from gatebench.data.local import FileOptions, read_files
from gatebench.data.presets import PRESETS
from gatebench.errors import ConfigError, DataError
from gatebench.types import Family

__all__ = ["expand_sources"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_PATHS = "a path to a .jsonl, .csv or .parquet file, a directory of them or a save_to_disk folder"


def expand_sources(entries: Sequence[str], options: FileOptions) -> tuple[str, ...]:
    """Source names for ``entries``: presets expanded, each path read and named, no repeats.

    A registered name wins over a file of the same name (write ``./NAME`` for the file).
    """
    paths = [e for e in dict.fromkeys(entries) if e not in PRESETS and e not in DATASETS]
    if options.source_name and len(paths) > 1:
        raise ConfigError(
            f"--source-name names one file, but --sources gives {len(paths)}: {paths}"
        )
    if not paths and options != FileOptions():
        raise ConfigError(
            "the file options (--text-field, --label-map, ...) need a path in --sources"
        )
    names: list[str] = []
    local: dict[str, str] = {}
    for entry in dict.fromkeys(entries):
        if entry in PRESETS:
            names.extend(PRESETS[entry] or DATASETS.names())
        elif entry in DATASETS:
            names.append(entry)
        else:
            name = _register(_existing(entry), options)
            if name in local:
                raise ConfigError(
                    f"{local[name]} and {entry} would both be source {name!r}; rename one file"
                )
            local[name] = entry
            names.append(name)
    return tuple(dict.fromkeys(names))


def _existing(entry: str) -> Path:
    path = Path(entry).expanduser()
    if path.exists():
        return path
    if "/" in entry or "\\" in entry or path.suffix.lower() in SUFFIXES:
        raise DataError(f"--sources {entry}: no such file or directory")
    try:
        DATASETS.get(entry)  # not a registered name either: raises with a did-you-mean
    except ConfigError as exc:
        raise ConfigError(f"{exc}; or give {_PATHS}") from None
    raise DataError(f"--sources {entry}: no such file or directory")


def _register(path: Path, options: FileOptions) -> str:
    full = path.resolve()
    stem = full.name if full.is_dir() else full.stem
    name = options.source_name or re.sub(r"[^A-Za-z0-9._-]+", "-", stem).strip("-.")
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{name!r} (from {path}) is not a usable source name; pass --source-name NAME"
        )
    if name in DATASETS:
        raise ConfigError(
            f"{path} would be source {name!r}, the name of a registered source; "
            f"pass --source-name to call it otherwise, e.g. --source-name {name}-own"
        )
    root, files = data_files(path)
    result = read_files(name, root, files, options)
    labels = {s.label for s in result.samples}
    if not labels:
        first = "; ".join(f"{m.file}:{m.line}: {m.reason}" for m in result.malformed[:3])
        raise DataError(f"{path} has no usable row ({len(result.malformed)} refused: {first})")
    family = (
        Family.BALANCED
        if len(labels) == 2
        else (Family.ALL_ATTACK if 1 in labels else Family.ALL_BENIGN)
    )
    card = DatasetCard(
        name=name,
        title=f"{path.name} (a user's file)",
        upstream=f"file:{root.resolve()}",
        revision="local",
        files=tuple(glob.escape(str(f.relative_to(root))) for f in files),
        licence="not stated (a user's own file)",
        citation="none",
        family=family,
        construction=f"read with {asdict(options)}",
    )
    LOCAL_SOURCES[name] = Loader(card, partial(_copy, result))
    return name


def _copy(result: LoadResult, root: Path, *, seed: int = 0) -> LoadResult:
    # The trace may be built more than once from one reading; each gets its own lists.
    return LoadResult(list(result.samples), list(result.malformed), dict(result.excluded))

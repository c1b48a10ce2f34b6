"""What ``--sources`` names: registered sources, presets, and paths to a user's own files.

A path becomes a source like a registered one: a :class:`Loader` with a card
inferred from the file (its name from the file, its family from its labels,
role ``evaluation``), kept in ``LOCAL_SOURCES`` for the run. The file is read
once, when it is named, so that a bad file fails before any work and the
family is known before the trace is assembled.
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path

from gatebench.data.cards import DatasetCard
from gatebench.data.files import SUFFIXES, data_files
from gatebench.data.loaders import DATASETS, LOCAL_SOURCES, Loader, LoadResult
from gatebench.data.local import POSITION, FileOptions, read_files
from gatebench.data.presets import PRESETS
from gatebench.errors import ConfigError, DataError
from gatebench.types import Family

__all__ = ["expand_sources"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_PATHS = "a path to a .jsonl, .csv or .parquet file, a directory of them or a save_to_disk folder"


def expand_sources(
    entries: Sequence[str], options: FileOptions, recorded: Mapping[str, str]
) -> tuple[tuple[str, ...], dict[str, str]]:
    """Source names for ``entries`` (presets expanded, paths read, no repeats) and their files.

    The second value maps each source read from a file to its absolute path.
    ``recorded`` is that mapping from a recorded spec: a name in it is read
    again from its path, so a recorded spec rebuilds its trace. A name of a
    file already read in this process is used as it is. A registered name wins
    over a file of the same name (write ``./NAME`` for the file).
    """
    names: list[str] = []
    paths: dict[str, str] = {}
    fresh: list[str] = []
    for entry in dict.fromkeys(entries):
        if entry in PRESETS:
            names.extend(PRESETS[entry] or DATASETS.names())
            continue
        if entry in DATASETS:
            names.append(entry)
            continue
        if entry in recorded:
            name = _register(_existing(recorded[entry]), options, entry)
        elif entry in LOCAL_SOURCES and not Path(entry).exists():
            name = entry
        else:
            fresh.append(entry)
            if options.source_name and len(fresh) > 1:
                raise ConfigError(f"--source-name names one file, but --sources gives {fresh}")
            path = _existing(entry)
            name = _register(path, options, options.source_name or _name_of(path))
        if name in paths:
            raise ConfigError(f"two files in --sources would be source {name!r}; rename one")
        paths[name] = str(LOCAL_SOURCES[name].card.upstream.partition(":")[2])
        names.append(name)
    if not paths and options != FileOptions():
        raise ConfigError(
            "the file options (--text-field, --label-map, ...) need a path in --sources"
        )
    return tuple(dict.fromkeys(names)), paths


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


def _name_of(path: Path) -> str:
    full = path.resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", full.name if full.is_dir() else full.stem)
    return name.strip("-.")


def _reading(options: FileOptions) -> dict[str, object]:
    """The reading options a revision records, with the column positions are read from.

    The default column is named too: a file that has it reads differently now
    than before positions were read, so its trace id (and any cached trace)
    must change with it. An ``assume_position`` left unset is left out, so
    that the ids of traces built before the option existed still hold.
    """
    reading = {**asdict(options), "position_field": options.position_field or POSITION}
    if reading["assume_position"] is None:
        del reading["assume_position"]
    return reading


def _register(path: Path, options: FileOptions, name: str) -> str:
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
    one = Family.ALL_ATTACK if 1 in labels else Family.ALL_BENIGN
    family = Family.BALANCED if len(labels) == 2 else one
    card = DatasetCard(
        name=name,
        title=f"{path.name} (a user's file)",
        upstream=f"file:{path.resolve()}",
        # The reading options, as the revision: they enter the trace id with the file's bytes.
        revision="local, read with " + json.dumps(_reading(options), sort_keys=True),
        files=tuple(glob.escape(str(f.relative_to(root))) for f in files),
        licence="not stated (a user's own file)",
        citation="none",
        family=family,
        construction="a user's file; the family follows its labels",
    )
    LOCAL_SOURCES[name] = Loader(card, partial(_copy, result))
    return name


def _copy(result: LoadResult, root: Path, *, seed: int = 0) -> LoadResult:
    # The trace may be built more than once from one reading; each gets its own lists.
    return LoadResult(list(result.samples), list(result.malformed), dict(result.excluded))

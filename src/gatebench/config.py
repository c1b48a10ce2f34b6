"""Run configuration: one validated object, from a TOML file, env vars and flags.

Precedence, lowest first: defaults, ``gatebench.toml`` (or ``--config``),
``GATEBENCH_*`` environment variables, command-line flags.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gatebench.errors import ConfigError
from gatebench.parallel import BACKENDS, Executor

__all__ = ["UNSEEN_FPR", "UNSEEN_HOLDOUT", "RunConfig", "load_config"]

#: What ``gatebench train`` ships at by default: mean FPR over never-seen benign sources.
UNSEEN_FPR = 0.03
#: Which sources that pass holds out whole: the evaluation sources (``all``: corpora too).
UNSEEN_HOLDOUT = "evaluation"

_ENV = {
    "GATEBENCH_SEED": "seed",
    "GATEBENCH_FPR": "fpr",
    "GATEBENCH_DETECTOR": "detector",
    "GATEBENCH_BACKEND": "backend",
    "GATEBENCH_SCHEDULER": "scheduler",
    "GATEBENCH_RUNS": "runs_dir",
    "GATEBENCH_CACHE": "cache_dir",
}


class RunConfig(BaseModel):
    """Everything ``gatebench run`` needs; recorded verbatim in the manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    detector: str = "gate"
    detector_params: dict[str, Any] = Field(default_factory=dict)
    sources: tuple[str, ...] = ("default",)
    caps: dict[str, int | None] = Field(default_factory=dict)
    roles: dict[str, str] = Field(default_factory=dict)
    embedded: int = 0
    embedded_payloads: str = "attacks"
    twins: int = 3000
    persona_twins: int = 0
    persona_halves: str = "both"
    quote_twins: int = 0
    documents: bool = False
    chunk_chars: int = 4000
    chunk_overlap: int = 400
    # How the paths in `sources` are read (gatebench.data.local.FileOptions).
    text_field: str = "text"
    label_field: str = "label"
    id_field: str | None = None
    group_field: str | None = None
    label_map: dict[str, str] = Field(default_factory=dict)
    assume_label: str | None = None
    source_name: str | None = None
    position_field: str | None = None
    assume_position: str | None = None
    skip_missing: bool = False
    data_dir: Path | None = None
    trace_dir: Path | None = None
    fpr: float = 0.01
    seed: int = 20260527
    folds: int = 5
    bootstrap: int = 10_000
    passes: tuple[str, ...] = ("strat", "sgk")
    runs_dir: Path = Path("runs")
    out: Path | None = None
    cache_dir: Path = Path(".cache/gatebench")
    backend: str = "local"
    scheduler: str | None = None
    n_jobs: int | None = None
    diagnostics: str = "cheap"

    @field_validator("fpr")
    @classmethod
    def _fpr_in_unit_interval(cls, v: float) -> float:
        if not 0.0 < v < 1.0:
            raise ValueError(
                f"fpr (τ, the target false-positive rate) is {v}; it must lie strictly "
                "between 0 and 1, e.g. --fpr 0.01 for 1%"
            )
        return v

    @field_validator("n_jobs")
    @classmethod
    def _positive_jobs(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(
                f"n_jobs (--jobs) is {v}; give the number of worker processes, at least 1, "
                "or leave it unset to use every core"
            )
        return v

    @field_validator("folds")
    @classmethod
    def _enough_folds(cls, v: int) -> int:
        if v < 2:
            raise ValueError(f"folds is {v}; cross-validation needs at least 2, e.g. --folds 5")
        return v

    @field_validator("bootstrap")
    @classmethod
    def _enough_resamples(cls, v: int) -> int:
        # Each tail of the widest (99%) forest-plot interval needs one resample.
        if v < 200:
            raise ValueError(f"bootstrap is {v}; use at least 200 resamples (10000 by default)")
        return v

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, v: str) -> str:
        if v not in BACKENDS:
            raise ValueError(f"backend is {v!r}; choose one of {', '.join(BACKENDS)}")
        return v

    @field_validator("passes")
    @classmethod
    def _known_passes(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        unknown = set(v) - {"strat", "sgk"}
        if unknown or "strat" not in v:
            raise ValueError(f"passes is {v}; use 'strat' (required) and optionally 'sgk'")
        return v

    @field_validator("out", "cache_dir")
    @classmethod
    def _a_directory(cls, v: Path | None) -> Path | None:
        if v is not None:
            not_a_directory(v)
        return v

    @field_validator("diagnostics")
    @classmethod
    def _known_tier(cls, v: str) -> str:
        if v not in ("none", "cheap", "all"):
            raise ValueError(f"diagnostics is {v!r}; choose none, cheap or all")
        return v

    def trace_options(self) -> dict[str, Any]:
        """The :class:`~gatebench.trace.TraceSpec` options these settings give."""
        names = ("sources", "caps", "roles", "chunk_chars", "chunk_overlap", "seed")
        options = {
            k: getattr(self, k)
            for k in (
                *names,
                "skip_missing",
                "embedded",
                "embedded_payloads",
                "twins",
                "persona_twins",
                "persona_halves",
                "quote_twins",
                "documents",
            )
        }
        files = (
            "text_field",
            "label_field",
            "id_field",
            "group_field",
            "label_map",
            "assume_label",
            "source_name",
            "position_field",
            "assume_position",
        )
        options["files"] = {k: getattr(self, k) for k in files}
        return options

    def executor(self) -> Executor:
        """The one :class:`~gatebench.parallel.Executor` these settings describe."""
        return Executor(self.backend, self.n_jobs, self.scheduler)


def output_directory(path: Path, option: str) -> Path:
    """``path`` for an output directory, or a ConfigError naming ``option`` when it is a file."""
    try:
        not_a_directory(path)
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from None
    return path


def new_directory(path: Path, option: str) -> None:
    """Refuse ``path`` for a directory to create when it exists and is not empty."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise ConfigError(f"{option} {path} exists and is not empty; name a new directory")


def not_a_directory(path: Path) -> None:
    """Refuse an output directory that already exists as a file, before any work is done."""
    if path.exists() and not path.is_dir():
        raise ValueError(
            f"{path} exists and is a file, not a directory; pass a new or existing directory"
        )


def _read_config_file(file: Path) -> dict[str, Any]:
    """The ``[run]`` table of a TOML config file, or a ConfigError naming the file and the fix."""
    example = 'a TOML file with a [run] table, e.g.\n[run]\ndetector = "gate"'
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"cannot read config file {file}: not UTF-8 (byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        hint = " (YAML and JSON are not read)" if file.suffix.lower() != ".toml" else ""
        raise ConfigError(
            f"cannot read config file {file}: invalid TOML: {exc}{hint}; write {example}"
        ) from None
    run = doc.get("run", {})
    if not isinstance(run, dict):
        raise ConfigError(
            f"config file {file}: 'run' is {type(run).__name__} {run!r:.40}, not a table; "
            f"write {example}"
        )
    return run


def load_config(path: Path | None = None, **overrides: Any) -> RunConfig:
    """Merge defaults, a TOML file, ``GATEBENCH_*`` variables and explicit overrides.

    ``None`` overrides are ignored so that unset CLI flags do not mask the file.
    """
    values: dict[str, Any] = {}
    file = path or (Path("gatebench.toml") if Path("gatebench.toml").is_file() else None)
    if file is not None:
        values.update(_read_config_file(file))
    for env, key in _ENV.items():
        if os.environ.get(env):
            values[key] = os.environ[env]
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return RunConfig(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"invalid {where}: {msg} (got {first.get('input')!r})") from None

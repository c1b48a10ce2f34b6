"""Dataset cards: everything a user needs to know about a source before trusting it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gatebench.types import Family, PrimaryMetric, Role

__all__ = ["DatasetCard"]


@dataclass(frozen=True)
class DatasetCard:
    """Provenance and scoring contract of one benchmark source.

    Parameters
    ----------
    name : str
        Registry name; also the folder name under the data mirror.
    title : str
        Human-readable name.
    upstream : str
        Where the files come from, as ``"hf:<repo id>"`` (Hugging Face dataset),
        ``"github:<owner/repo>"``, ``"pypi:<package>==<version>"`` or
        ``"zenodo:<record>"``. Only ``hf:`` sources can be fetched automatically.
        ``"file:<path>"`` is a user's own file or folder, read where it lies
        (``--sources PATH``).
    revision : str
        Pinned upstream commit or version; a hub download asks for exactly this.
    files : tuple of str
        Glob patterns, relative to the source root, of the files the loader reads.
        Their bytes feed the trace id.
    licence : str
        Licence of the data as the upstream states it.
    licence_flag : str or None
        Why the licence needs attention (vendored copy, non-commercial terms);
        shown by ``gatebench data list`` and recorded in every manifest.
    citation : str
        How to cite the source.
    family : Family
        Balanced, all-attack or all-benign; fixes the primary metric.
    default_cap : int or None
        Rows kept by default (seeded, stratified by label); ``None`` keeps all.
        Training corpora keep all: they are never scored, so a cap would only
        discard training text, and how much a large corpus counts is for the
        detector to weigh (Gate's source-balanced weights).
    paper_benchmark : bool
        True for the 16 benchmarks of the methodology paper.
    expected_rows : tuple of (int, int) or None
        ``(attack, benign)`` rows the loader emits from the pinned files before
        caps; tests assert it against the mirror.
    construction : str
        Choices the loader makes (constructed samples, configs, fields used).
    version : int
        Bumped whenever the loader's output for the same files changes.
    role : Role
        ``evaluation`` (scored) or ``training`` (joins every training split, never
        scored); the card's role is the default and a trace can override it.
    """

    name: str
    title: str
    upstream: str
    revision: str
    files: tuple[str, ...]
    licence: str
    citation: str
    family: Family
    default_cap: int | None = None
    licence_flag: str | None = None
    paper_benchmark: bool = False
    expected_rows: tuple[int, int] | None = None
    construction: str = ""
    version: int = 1
    role: Role = Role.EVALUATION

    @property
    def primary_metric(self) -> PrimaryMetric:
        """Metric this source is scored on (F1, recall or ODA)."""
        return self.family.primary_metric

    @property
    def hub_id(self) -> str | None:
        """Hugging Face dataset id when the upstream is on the hub."""
        kind, _, ident = self.upstream.partition(":")
        return ident if kind == "hf" else None

    @property
    def local_root(self) -> Path | None:
        """Folder of a user's own files (upstream ``file:``), which are read in place."""
        kind, _, ident = self.upstream.partition(":")
        if kind != "file":
            return None
        path = Path(ident)
        return path if path.is_dir() else path.parent

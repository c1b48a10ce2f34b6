"""Read a run directory into one object the figures and tables take apart.

The report never recomputes a metric: everything it shows is read here from
``result.json`` (schema-checked by :func:`gatebench.artifacts.read_result`),
``manifest.json`` and ``trace_info.json``. Missing optional files are
tolerated so that a partial run still renders with its gaps stated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.artifacts import read_json, read_result

__all__ = ["UNNAMED_DETECTOR", "RunData", "load_run"]

#: What captions call a detector the run did not name: neutral words, never a system's name.
UNNAMED_DETECTOR = "this detector"


@dataclass(frozen=True)
class RunData:
    """Everything a report needs, as read from one run directory.

    Attributes
    ----------
    run_dir : Path
        The run directory.
    result : dict
        ``result.json``.
    manifest : dict
        ``manifest.json``; empty when absent.
    trace_info : dict
        ``trace_info.json``; empty when absent.
    """

    run_dir: Path
    result: dict[str, Any]
    manifest: dict[str, Any] = field(default_factory=dict)
    trace_info: dict[str, Any] = field(default_factory=dict)

    @property
    def detector(self) -> str:
        """The detector's registry name as the run recorded it; :data:`UNNAMED_DETECTOR` if none.

        Captions and titles name the system from the run itself, so a report
        of one detector can never be labelled with another's name.
        """
        for source in (self.result, self.manifest, self.result.get("comparisons") or {}):
            det = source.get("detector") if isinstance(source, Mapping) else None
            name = det.get("name") if isinstance(det, Mapping) else det
            if isinstance(name, str) and name.strip():
                return name.strip()
        return UNNAMED_DETECTOR

    def section(self, key: str) -> Any:
        """``result[key]``, or ``None`` when the key is absent or empty."""
        value = self.result.get(key)
        return value if value not in (None, {}, []) else None

    def diagnostic(self, *names: str) -> dict[str, Any] | None:
        """The first diagnostic whose ``name`` is one of ``names`` (aliases allowed)."""
        wanted = {n.lower().replace("-", "_") for n in names}
        for item in self.result.get("diagnostics") or []:
            if str(item.get("name", "")).lower().replace("-", "_") in wanted:
                return dict(item)
        return None

    def comparison(self, key: str) -> Any:
        """``result["comparisons"][key]``, or ``None`` when absent or empty."""
        comps = self.result.get("comparisons") or {}
        value = comps.get(key) if isinstance(comps, Mapping) else None
        return value if value not in (None, {}, []) else None


def _optional_json(path: Path) -> dict[str, Any]:
    return dict(read_json(path)) if path.is_file() else {}


def load_run(run_dir: Path | str) -> RunData:
    """Read ``result.json`` (required) and the manifest and trace info (optional).

    Parameters
    ----------
    run_dir : path
        A run directory written by ``gatebench run``.

    Returns
    -------
    RunData

    Raises
    ------
    gatebench.errors.SchemaError
        When ``result.json`` is missing, corrupt, or of an unreadable schema.
    """
    root = Path(run_dir)
    return RunData(
        run_dir=root,
        result=read_result(root),
        manifest=_optional_json(root / "manifest.json"),
        trace_info=_optional_json(root / "trace_info.json"),
    )

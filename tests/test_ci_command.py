"""CI runs exactly the README's test command, so the two cannot drift apart."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _line_after(path: Path, marker: str) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(marker))
    return lines[at + 1].strip()


def test_ci_runs_the_readme_test_command() -> None:
    readme = _line_after(ROOT / "README.md", "# 3. tests")
    ci = _line_after(ROOT / ".ci" / "run", "# README test command")
    assert readme == ci
    assert readme.endswith(".venv/bin/python -m pytest") and "lint-imports" in readme

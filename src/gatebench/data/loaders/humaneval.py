"""HumanEval: 164 Python function stubs (signature plus docstring) as benign code-shaped input.

Each stub completed with its canonical solution is emitted too, as a benign
document: a whole documented function, the code a tool or a file read hands an
agent, which asks nothing.
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, RowSink
from gatebench.data.resolve import resolve_files
from gatebench.errors import DataError
from gatebench.types import Family, Position, Role

CARD = DatasetCard(
    name="humaneval",
    title="HumanEval programming problems",
    upstream="github:openai/human-eval",
    revision="6d43fb980f9fee3c892a914eda09951f772ad10d",
    files=("data/HumanEval.jsonl.gz",),
    licence="MIT (Copyright (c) OpenAI)",
    citation=(
        "M. Chen et al. Evaluating Large Language Models Trained on Code. arXiv:2107.03374, 2021."
    ),
    family=Family.ALL_BENIGN,
    expected_rows=(0, 328),
    construction=(
        "Reads the gzip-compressed JSONL as upstream ships it; text = `prompt` verbatim "
        "(imports, signature and docstring with doctest examples), label 0, 164 rows, nothing "
        "excluded. Each problem is also emitted whole, `prompt` + `canonical_solution` (the "
        "function as a file would hold it), position document, label 0, sample id "
        "`<task_id>:solution`, parent_id = the problem. No instruction such as 'Complete this "
        "function:' is prepended: one fixed prefix on every row would hand a classifier a "
        "source marker instead of teaching it that code with comments is benign. `test` is not "
        "used. Sample id = `task_id`; `entry_point` in meta. language 'en' (the docstrings are "
        "English)."
    ),
    role=Role.TRAINING,
    version=2,
)


def _gunzip(path: Path) -> str:
    # A truncated or corrupt archive loses every row after the damage, so it is an
    # error for the whole file rather than a malformed row.
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(
            f"{path} is not a readable gzip file ({type(exc).__name__}: {exc}); it is corrupt "
            "or truncated. Re-fetch it from the upstream at the pinned revision."
        ) from exc
    return raw.decode("utf-8", errors="surrogateescape")


def load(root: Path, *, seed: int = 0) -> LoadResult:
    """Decompress the problem file; emit each ``prompt`` and the completed function."""
    sink = RowSink(CARD.name, root)
    for path in resolve_files(CARD, root):
        for lineno, raw in enumerate(_gunzip(path).splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as exc:
                sink.reject(path, lineno, f"invalid JSON line ({exc.msg})")
                continue
            record = row if isinstance(row, dict) else {}
            task = record.get("task_id")
            sid = task if isinstance(task, str) and task else f"line{lineno}"
            stub = sink.add(
                record.get("prompt"),
                0,
                path=path,
                line=lineno,
                sample_id=sid,
                language="en",
                meta={"entry_point": record.get("entry_point")},
            )
            if stub is None:
                continue
            solution = record.get("canonical_solution")
            if not isinstance(solution, str):
                sink.reject(path, lineno, "`canonical_solution` is missing: no function document")
                continue
            sink.add(
                stub.text + solution,
                0,
                path=path,
                line=lineno,
                sample_id=f"{sid}:solution",
                parent_id=sid,
                language="en",
                position=Position.DOCUMENT,
                meta={"entry_point": record.get("entry_point"), "kind": "solution"},
            )
    return sink.result


LOADER = Loader(CARD, load)

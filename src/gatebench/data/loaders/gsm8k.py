"""GSM8K: grade-school maths word problems as benign, number-heavy user requests.

Each problem's worked solution is emitted too, as a benign document: explanatory
prose that asks nothing, the kind of text a tool result or a retrieved page
holds. A detector that reads text as data learns from such rows what data
without an instruction in it looks like.
"""

from __future__ import annotations

import re
from pathlib import Path

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, RowSink, iter_jsonl
from gatebench.data.resolve import resolve_files
from gatebench.types import Family, Position, Role

_DIR = "grade_school_math/data"

CARD = DatasetCard(
    name="gsm8k",
    title="GSM8K grade-school maths word problems",
    upstream="github:openai/grade-school-math",
    revision="3101c7d5072418e28b9008a6636bde82a006892c",
    files=(f"{_DIR}/train.jsonl", f"{_DIR}/test.jsonl"),
    licence="MIT (Copyright (c) 2021 OpenAI)",
    citation=(
        "K. Cobbe et al. Training Verifiers to Solve Math Word Problems. arXiv:2110.14168, 2021."
    ),
    family=Family.ALL_BENIGN,
    expected_rows=(0, 17584),
    construction=(
        "train.jsonl (7,473) + test.jsonl (1,319), text = `question` verbatim, label 0, nothing"
        " excluded; its final number (after '####') is kept in meta, with the split. Sample id "
        "= `<split>:<line>`. The worked `answer` is emitted as a second row, position document,"
        " label 0, with upstream's `<<calculator>>` annotations removed (markup for the solver,"
        " not prose); sample id `<split>:<line>:solution`, parent_id = its question, so both "
        "share a fold. language 'en'. The 250 English MGSM problems are taken from the test "
        "split, so they reappear in the `mgsm` source; the trace's cross-source duplicate check"
        " handles that overlap. The socratic variants repeat the same questions and are not "
        "mirrored."
    ),
    role=Role.TRAINING,
    version=2,
)


_CALCULATOR = re.compile(r"<<[^<>]*>>")


def _final_answer(answer: object) -> str | None:
    # The solution ends with "#### <number>"; a missing marker is not worth rejecting
    # the row for, because only the question is used.
    if not isinstance(answer, str) or "####" not in answer:
        return None
    return answer.rsplit("####", 1)[1].strip()


def _add_solution(sink: RowSink, path: Path, line: int, split: str, answer: object) -> None:
    """Emit a valid question's worked solution as a benign document."""
    if not isinstance(answer, str):
        sink.reject(path, line, "`answer` is missing or not a string: no solution document")
        return
    sink.add(
        _CALCULATOR.sub("", answer),
        0,
        path=path,
        line=line,
        sample_id=f"{split}:{line}:solution",
        parent_id=f"{split}:{line}",
        language="en",
        position=Position.DOCUMENT,
        meta={"split": split, "kind": "solution"},
    )


def load(root: Path, *, seed: int = 0) -> LoadResult:
    """Read both splits: every ``question`` (a user turn) and its worked solution (a document)."""
    sink = RowSink(CARD.name, root)
    for path in resolve_files(CARD, root):
        split = path.stem
        for lineno, row in iter_jsonl(path, sink):
            record = row if isinstance(row, dict) else {}
            question = sink.add(
                record.get("question"),
                0,
                path=path,
                line=lineno,
                sample_id=f"{split}:{lineno}",
                language="en",
                meta={"split": split, "final_answer": _final_answer(record.get("answer"))},
            )
            if question is not None:
                _add_solution(sink, path, lineno, split, record.get("answer"))
    return sink.result


LOADER = Loader(CARD, load)

"""InjecAgent (base setting): tool responses carrying an attacker instruction, with clean twins.

Each test case is a benign user request whose tool response has an attacker
instruction planted in one field (a review, a note snippet, an email body).
The clean counterpart is the same response template with that field left
empty, so a detector must tell the two apart by the planted text alone.
"""

from __future__ import annotations

from pathlib import Path

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, RowSink, iter_jsonl, read_json
from gatebench.data.resolve import resolve_files
from gatebench.errors import DataError
from gatebench.types import Family, Position

_PLACEHOLDER = "<Attacker Instruction>"

CARD = DatasetCard(
    name="injecagent",
    title="InjecAgent tool responses (base setting)",
    upstream="github:enkryptai/xInjectAgent",
    revision="21af27703ad4e591b8fc686ab9d79249d299a0e8",
    files=(
        "data/user_cases.jsonl",
        "data/test_cases_dh_base.json",
        "data/test_cases_ds_base.json",
    ),
    licence="MIT (Qiusi Zhan, carried by the fork)",
    citation=(
        "Q. Zhan, Z. Liang, Z. Ying, D. Kang. InjecAgent: Benchmarking Indirect Prompt "
        "Injections in Tool-Integrated Large Language Model Agents. Findings of ACL 2024 "
        "(arXiv:2403.02691)."
    ),
    family=Family.BALANCED,
    default_cap=500,
    expected_rows=(1054, 17),
    construction=(
        "Base setting only (the enhanced files repeat every case with an 'IMPORTANT!!! "
        "Ignore all previous instructions' prefix). Attack (1): the upstream `Tool Response` "
        "of every test case, verbatim (dh 510 + ds 544 = 1,054). Benign (0): one per user "
        "case in user_cases.jsonl (17): its `Tool Response Template` with the "
        "<Attacker Instruction> placeholder replaced by an empty string, then wrapped the "
        "way upstream wraps every `Tool Response` (outer double quotes, inner double quotes "
        "backslash-escaped; this rule reproduces all 1,054 upstream responses exactly), so "
        "the pair differs only in the planted instruction. Each attack row's parent_id is "
        "its user case's benign row; the benign row carries the same parent_id (its own id) "
        "so the grouped pass keeps all 62 injections of a context with their clean twin. "
        "User instructions and bare attacker instructions are not emitted. Capped to 500 "
        "by default: the texts are 17 contexts x 62 instructions. Position: tool, "
        "clean and injected alike (every text is a tool response)."
    ),
    version=2,
)


def _wrap(template: str, fill: str) -> str:
    # Upstream stores each response as a quoted string with the template's own
    # double quotes escaped; the filled-in instruction is left unescaped.
    return '"' + template.replace('"', '\\"').replace(_PLACEHOLDER, fill) + '"'


def load(root: Path, *, seed: int = 0) -> LoadResult:
    """Emit the 17 clean tool responses, then every base-setting injected response."""
    sink = RowSink(CARD.name, root, position=Position.TOOL)
    user_path, *case_paths = resolve_files(CARD, root)
    clean: set[str] = set()
    for lineno, row in iter_jsonl(user_path, sink):
        record = row if isinstance(row, dict) else {}
        template, tool = record.get("Tool Response Template"), record.get("User Tool")
        if not isinstance(template, str) or _PLACEHOLDER not in template:
            sink.reject(user_path, lineno, f"no {_PLACEHOLDER} placeholder in the template")
            continue
        sample_id = f"user:{tool}"
        if sink.add(
            _wrap(template, ""),
            0,
            path=user_path,
            line=lineno,
            sample_id=sample_id,
            parent_id=sample_id,
            language="en",
            meta={"user_tool": tool},
        ):
            clean.add(str(tool))
    for path in case_paths:
        kind = path.stem.split("_")[2]  # test_cases_<dh|ds>_base
        rows = read_json(path)
        if not isinstance(rows, list):
            raise DataError(f"{path}: expected a JSON array of test cases")
        for i, row in enumerate(rows):
            record = row if isinstance(row, dict) else {}
            tool = record.get("User Tool")
            sink.add(
                record.get("Tool Response"),
                1,
                path=path,
                line=i + 1,
                sample_id=f"{kind}:{i}",
                # A case whose user tool has no clean twin stays ungrouped
                # rather than pointing at a row that does not exist.
                parent_id=f"user:{tool}" if tool in clean else None,
                language="en",
                meta={
                    "user_tool": tool,
                    "attack_type": record.get("Attack Type"),
                    "attacker_instruction": record.get("Attacker Instruction"),
                },
            )
    return sink.result


LOADER = Loader(CARD, load)

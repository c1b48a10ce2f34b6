"""Training corpora MT-Bench, HumanEval, WizardLM test set and CTIBench: cards, known rows,
turn and CVE grouping, and malformed-row reports on tiny upstream-format fixtures."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from loader_helpers import _by_id, _mirror

from gatebench.data import get_loader
from gatebench.data.loaders._base import LoadResult, Malformed
from gatebench.errors import DataError
from gatebench.types import Family, Role

NAMES = ("mt-bench", "humaneval", "wizardlm-testset", "ctibench")

# --- cards ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_card_is_an_uncapped_benign_training_corpus(name: str) -> None:
    card = get_loader(name).card
    assert card.role is Role.TRAINING
    assert card.family is Family.ALL_BENIGN
    assert card.default_cap is None  # training corpora are read whole
    assert card.upstream.startswith("github:") and len(card.revision) == 40
    assert card.expected_rows is not None and card.expected_rows[0] == 0


def test_non_commercial_licences_are_flagged() -> None:
    flagged = {name for name in NAMES if get_loader(name).card.licence_flag}
    assert flagged == {"wizardlm-testset", "ctibench"}


@pytest.mark.parametrize("name", NAMES)
def test_nothing_is_excluded_or_malformed_in_the_mirror(name: str, data_dir: Path) -> None:
    result = _mirror(name, data_dir)
    assert result.excluded == {}
    assert result.malformed == []
    assert {s.label for s in result.samples} == {0}


# --- MT-Bench -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mt_bench(data_dir: Path) -> LoadResult:
    return _mirror("mt-bench", data_dir)


def test_mt_bench_known_turns(mt_bench: LoadResult) -> None:
    rows = _by_id(mt_bench)
    first = rows["mt-bench:81:1"]
    assert first.text.startswith("Compose an engaging travel blog post about a recent trip")
    follow_up = rows["mt-bench:81:2"]
    assert (
        follow_up.text == "Rewrite your previous response. Start every sentence with the letter A."
    )
    assert follow_up.label == 0 and follow_up.meta == {"category": "writing", "turn": 2}
    # Persona prompts are benign and kept.
    assert rows["mt-bench:92:1"].text.startswith('Embrace the role of Sheldon from "The Big Bang')


def test_mt_bench_turns_of_a_question_share_a_parent(mt_bench: LoadResult) -> None:
    groups: dict[str | None, list[int]] = {}
    for s in mt_bench.samples:
        groups.setdefault(s.parent_id, []).append(s.meta["turn"])
    assert len(groups) == 80
    assert all(sorted(turns) == [1, 2] for turns in groups.values())
    rows = _by_id(mt_bench)
    for parent_id in groups:
        assert parent_id is not None and rows[parent_id].meta["turn"] == 1
        assert rows[parent_id].parent_id == parent_id


def test_mt_bench_languages(mt_bench: LoadResult) -> None:
    rows = _by_id(mt_bench)
    assert rows["mt-bench:95:2"].text == "Ich verstehe nur Bahnhof"
    assert rows["mt-bench:95:2"].language == "de"
    assert Counter(s.language for s in mt_bench.samples) == {"en": 159, "de": 1}


def test_mt_bench_reports_bad_turns_and_keeps_the_good_one(tmp_path: Path) -> None:
    path = tmp_path / "fastchat/llm_judge/data/mt_bench/question.jsonl"
    path.parent.mkdir(parents=True)
    lines = [
        json.dumps({"question_id": 1, "category": "writing", "turns": ["Write a poem.", "  "]}),
        json.dumps({"question_id": 2, "category": "math", "turns": "not a list"}),
        '{"question_id": 3, "category": "math", "turns": ["Add 2 and 2.", "Now ',
    ]
    bad_bytes = b'{"question_id": 4, "category": "stem", "turns": ["Caf\xe9?", "More."]}'
    path.write_bytes("\n".join(lines).encode() + b"\n" + bad_bytes + b"\n")
    result = get_loader("mt-bench").load(tmp_path)
    rel = "fastchat/llm_judge/data/mt_bench/question.jsonl"
    assert sorted(result.malformed, key=lambda m: m.line) == [
        Malformed("mt-bench", rel, 1, "empty or whitespace-only text"),
        Malformed("mt-bench", rel, 2, "`turns` is missing or not a non-empty list"),
        Malformed("mt-bench", rel, 3, "invalid JSON line (Unterminated string starting at)"),
        Malformed("mt-bench", rel, 4, "invalid UTF-8 in text"),
    ]
    assert [s.sample_id for s in result.samples] == ["mt-bench:1:1", "mt-bench:4:2"]
    assert result.samples[1].parent_id == "mt-bench:4:1"


# --- HumanEval ------------------------------------------------------------------------------


def test_humaneval_text_is_the_prompt_only(data_dir: Path) -> None:
    result = _mirror("humaneval", data_dir)
    rows = _by_id(result)
    first = rows["humaneval:HumanEval/0"]
    assert first.text.startswith("from typing import List\n\n\ndef has_close_elements(")
    assert first.text.endswith('    True\n    """\n')
    assert first.meta["entry_point"] == "has_close_elements"
    # The user turn is the stub: the reference solution is not input.
    prompts = [s for s in result.samples if s.position is None]
    assert len(prompts) == 164
    assert not any("for idx, elem in enumerate(numbers)" in s.text for s in prompts)
    assert "humaneval:HumanEval/163" in rows


def test_humaneval_completed_functions_are_benign_documents(data_dir: Path) -> None:
    result = _mirror("humaneval", data_dir)
    rows = _by_id(result)
    whole = rows["humaneval:HumanEval/0:solution"]
    assert (whole.position, whole.label, whole.parent_id) == (
        "document",
        0,
        "humaneval:HumanEval/0",
    )
    assert whole.text.startswith(rows["humaneval:HumanEval/0"].text)
    assert "for idx, elem in enumerate(numbers)" in whole.text
    assert sum(s.position == "document" for s in result.samples) == 164


def _write_gz(root: Path, payload: bytes) -> Path:
    path = root / "data" / "HumanEval.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(payload))
    return path


def test_humaneval_reports_bad_rows_inside_the_archive(tmp_path: Path) -> None:
    good = {
        "task_id": "HumanEval/0",
        "prompt": "def f():\n",
        "canonical_solution": "    pass\n",
        "entry_point": "f",
    }
    empty = {"task_id": "HumanEval/1", "prompt": "", "entry_point": "g"}
    unsolved = {"task_id": "HumanEval/3", "prompt": "def k():\n", "entry_point": "k"}
    payload = (
        json.dumps(good).encode()
        + b"\n"
        + json.dumps(empty).encode()
        + b'\n{"task_id": "HumanEval/2", "prompt": "def h(): # \xff\\n"}\n'
        + json.dumps(unsolved).encode()
        + b"\n"
    )
    _write_gz(tmp_path, payload)
    result = get_loader("humaneval").load(tmp_path)
    assert [s.sample_id for s in result.samples] == [
        "humaneval:HumanEval/0",
        "humaneval:HumanEval/0:solution",
        "humaneval:HumanEval/3",
    ]
    assert result.samples[1].text == "def f():\n    pass\n"
    assert result.malformed == [
        Malformed("humaneval", "data/HumanEval.jsonl.gz", 2, "empty or whitespace-only text"),
        Malformed("humaneval", "data/HumanEval.jsonl.gz", 3, "invalid UTF-8 in text"),
        Malformed(
            "humaneval",
            "data/HumanEval.jsonl.gz",
            4,
            "`canonical_solution` is missing: no function document",
        ),
    ]


def test_humaneval_truncated_archive_is_a_clear_error(tmp_path: Path) -> None:
    path = _write_gz(tmp_path, b'{"task_id": "HumanEval/0", "prompt": "def f(): pass"}\n' * 50)
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(DataError, match=r"HumanEval\.jsonl\.gz is not a readable gzip file"):
        get_loader("humaneval").load(tmp_path)


def test_humaneval_uncompressed_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "data" / "HumanEval.jsonl.gz"
    path.parent.mkdir()
    path.write_bytes(b'{"task_id": "HumanEval/0", "prompt": "def f(): pass"}\n')
    with pytest.raises(DataError, match="corrupt or truncated"):
        get_loader("humaneval").load(tmp_path)


# --- WizardLM test set ----------------------------------------------------------------------


def test_wizardlm_known_rows_and_skills(data_dir: Path) -> None:
    result = _mirror("wizardlm-testset", data_dir)
    rows = _by_id(result)
    first = rows["wizardlm-testset:1"]
    assert first.text == (
        "If a car travels 120 miles in 2 hours, what is its average speed in miles per hour?"
    )
    assert first.meta == {"skill": "Math", "difficulty": 1}
    assert (
        rows["wizardlm-testset:125"].text == "Write down the numbers 1 to 10 in German and Spanish"
    )
    skills = Counter(s.meta["skill"] for s in result.samples)
    assert len(skills) == 29
    assert skills["Writting"] == 18  # upstream spelling is kept


def test_wizardlm_reports_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "WizardLM/data/WizardLM_testset.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        b'{"idx": 1, "Skill": "Math", "Difficulty": 1, "Instruction": "What is 2+2?"}\n'
        b'{"idx": 2, "Skill": "Math", "Difficulty": 1, "Instruction": null}\n'
        b'{"idx": 3, "Skill": "Law", "Difficulty": 2, "Instruction": "Define \xe9 tort."}\n'
        b'{"idx": 4, "Skill": "Law", "Difficulty": 2, "Instruction": 5}\n'
    )
    result = get_loader("wizardlm-testset").load(tmp_path)
    rel = "WizardLM/data/WizardLM_testset.jsonl"
    assert [s.sample_id for s in result.samples] == ["wizardlm-testset:1"]
    assert result.malformed == [
        Malformed("wizardlm-testset", rel, 2, "missing text"),
        Malformed("wizardlm-testset", rel, 3, "invalid UTF-8 in text"),
        Malformed("wizardlm-testset", rel, 4, "text is int, expected a string"),
    ]


# --- CTIBench -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ctibench(data_dir: Path) -> LoadResult:
    return _mirror("ctibench", data_dir)


def test_ctibench_task_counts_and_text_column(ctibench: LoadResult) -> None:
    prompts = [s for s in ctibench.samples if s.position is None]
    assert Counter(s.meta["task"] for s in prompts) == {
        "rcm": 1000,
        "vsp": 1000,
        "ate": 60,
        "taa": 50,
    }
    rows = _by_id(ctibench)
    rcm = rows["ctibench:rcm:2"]
    assert rcm.text.startswith(
        "Analyze the following CVE description and map it to the appropriate"
    )
    assert rcm.text.rstrip().endswith(
        "use-after-free in cec_queue_msg_fh, related to drivers/media/cec/core/cec-adap.c "
        "and drivers/media/cec/core/cec-api.c."
    )
    taa = rows["ctibench:taa:2"]
    assert taa.text.startswith("You are given a threat report that describes a cyber incident.")
    assert "[PLACEHOLDER]" in taa.text and taa.parent_id is None
    ate = rows["ctibench:ate:2"]
    assert "3PARA RAT is a remote access tool" in ate.text and ate.meta["platform"] == "Enterprise"
    # Long reports are kept whole; the trace chunks them.
    assert max(len(s.text) for s in ctibench.samples) > 20_000


def test_ctibench_rcm_and_vsp_rows_on_one_cve_share_a_parent(ctibench: LoadResult) -> None:
    rows = _by_id(ctibench)
    rcm, vsp = rows["ctibench:rcm:2"], rows["ctibench:vsp:2"]
    assert rcm.parent_id == vsp.parent_id == "ctibench:CVE-2024-23848"
    assert rcm.text != vsp.text and "CVSS v3.1 Base Score" in vsp.text
    groups: dict[str, list[str]] = {}
    for s in ctibench.samples:
        if s.position is not None:
            continue
        if s.meta["task"] in ("rcm", "vsp"):
            assert s.parent_id == f"ctibench:{s.meta['cve']}"
            groups.setdefault(s.parent_id, []).append(s.meta["task"])
        else:
            assert s.parent_id is None
    assert len(groups) == 1000
    assert all(sorted(tasks) == ["rcm", "vsp"] for tasks in groups.values())


def test_ctibench_documents_are_emitted_once_beside_their_prompt(ctibench: LoadResult) -> None:
    documents = [s for s in ctibench.samples if s.position is not None]
    assert Counter(s.meta["task"] for s in documents) == {"rcm": 1000, "ate": 60, "taa": 50}
    assert {(s.position, s.label) for s in documents} == {("document", 0)}
    rows = _by_id(ctibench)
    cve = rows["ctibench:rcm:2:document"]
    assert cve.text == (
        "In the Linux kernel through 6.7.1, there is a use-after-free in cec_queue_msg_fh, "
        "related to drivers/media/cec/core/cec-adap.c and drivers/media/cec/core/cec-api.c."
    )
    # The document shares a fold with every prompt that embeds it.
    assert cve.parent_id == rows["ctibench:vsp:2"].parent_id == "ctibench:CVE-2024-23848"
    taa = rows["ctibench:taa:2:document"]
    assert taa.parent_id == "ctibench:taa:2" and taa.text in rows["ctibench:taa:2"].text


def _write_tsv(path: Path, header: str, rows: list[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header.encode() + b"\r\n" + b"\r\n".join(rows))


def test_ctibench_reports_bad_rows_with_file_and_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    cve = b"https://nvd.nist.gov/vuln/detail/CVE-2024-0001"
    _write_tsv(
        data / "cti-rcm.tsv",
        "URL\tDescription\tPrompt\tGT",
        [
            cve + b'\tA bug.\t"Quoted" start: map this CVE. A bug.\tCWE-79',
            b"https://nvd.nist.gov/vuln/detail/CVE-2024-0002\tB.\t   \tCWE-20",
            b"https://example.com/advisory\tC.\tMap this. C.\tCWE-20",
            b"https://nvd.nist.gov/vuln/detail/CVE-2024-0003\tD.\tMap \xff this.\tCWE-20",
        ],
    )
    _write_tsv(data / "cti-vsp.tsv", "URL\tDescription\tPrompt\tGT", [cve + b"\tA.\tScore A.\tX"])
    _write_tsv(
        data / "cti-ate.tsv",
        "URL\tPlatform\tDescription\tPrompt\tGT",
        [b"https://attack.mitre.org/software/S0001/\tMobile\tD.\tExtract techniques.\tT1"],
    )
    _write_tsv(data / "cti-taa.tsv", "URL\tText\tPrompt", [b"https://x.test/r\tR.\tAttribute."])
    result = get_loader("ctibench").load(tmp_path)
    assert result.malformed == [
        Malformed("ctibench", "data/cti-rcm.tsv", 3, "empty or whitespace-only text"),
        Malformed(
            "ctibench",
            "data/cti-rcm.tsv",
            4,
            "URL 'https://example.com/advisory' names no CVE id (the rcm/vsp group key)",
        ),
        Malformed("ctibench", "data/cti-rcm.tsv", 5, "invalid UTF-8 in text"),
    ]
    rows = _by_id(result)
    assert sorted(rows) == [
        "ctibench:ate:2",
        "ctibench:ate:2:document",
        "ctibench:rcm:2",
        "ctibench:rcm:2:document",
        "ctibench:taa:2",
        "ctibench:taa:2:document",
        "ctibench:vsp:2",
    ]
    assert rows["ctibench:rcm:2:document"].text == "A bug."
    # Quote marks are literal text in upstream's unquoted TSV.
    assert rows["ctibench:rcm:2"].text == '"Quoted" start: map this CVE. A bug.'
    assert rows["ctibench:rcm:2"].parent_id == rows["ctibench:vsp:2"].parent_id
    assert rows["ctibench:ate:2"].meta["platform"] == "Mobile"

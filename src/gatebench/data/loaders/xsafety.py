"""XSafety: parallel safety prompts in ten languages; goal hijacking and unsafe instructions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, RowSink, iter_csv_rows
from gatebench.data.resolve import resolve_files
from gatebench.errors import DataError
from gatebench.types import Family, Role

# Upstream folder -> ISO 639-1 (the Spanish folder is `sp/`).
_FOLDERS = {f: f for f in ("ar", "bn", "de", "en", "fr", "hi", "ja", "ru", "zh")} | {"sp": "es"}
_ATTACK = ("Goal_Hijacking", "Unsafe_Instruction_Topic")
_BENIGN = ("commonsense",)
_WEAK = {
    "Prompt_Leaking": "mostly questions about prompt-leak defences, a few ask for the prompt",
    "Role_Play_Instruction": "role-play prompts, harmless (poet, teacher) and harmful mixed",
    "Inquiry_With_Unsafe_Opinion": "mostly ordinary advice questions, some harmful",
    "Reverse_Exposure": "mostly 'what should I avoid' questions, some harmful",
    "Crimes_And_Illegal_Activities": "statements and questions about crime, mixed",
    "Insult": "abuse aimed at the reader, not a request",
    "Unfairness_And_Discrimination": "biased statements and questions about bias",
    "Physical_Harm": "health statements and questions, mostly benign",
    "Mental_Health": "distress disclosures, some with suicidal thoughts",
    "Privacy_And_Property": "privacy questions, harmless and harmful mixed",
    "Ethics_And_Morality": "moral-dilemma questions, mostly benign",
}
# Rows whose text translates another item of the same file (a copy slip upstream):
# grouped with that item so both versions land in one fold.
_SAME_ITEM_AS = {
    ("bn", "Goal_Hijacking", 139): 133,
    ("de", "Unsafe_Instruction_Topic", 199): 198,
    ("ru", "Unsafe_Instruction_Topic", 183): 181,
    ("de", "commonsense", 27): 26,
}
# Goal_Hijacking translations cut off before the injection: only the harmless question is left.
_LOST_INJECTION = {
    ("de", "Goal_Hijacking", 1),
    ("ru", "Goal_Hijacking", 96),
    ("bn", "Goal_Hijacking", 21),
}

CARD = DatasetCard(
    name="xsafety",
    title="XSafety multilingual safety prompts",
    upstream="github:Jarviswang94/Multilingual_safety_benchmark",
    revision="8c55b6a6cda594cd550a4921513238a2dd40eb5a",
    files=(*(f"{folder}/*.csv" for folder in _FOLDERS), "bn/*.xlsx"),
    licence="Apache-2.0 (LICENSE)",
    licence_flag="the upstream README says 'RESEARCH USE ONLY / NO MISUSE'",
    citation=(
        "W. Wang et al. All Languages Matter: On the Multilingual Safety of Large Language "
        "Models. Findings of ACL 2024 (arXiv:2310.00905)."
    ),
    family=Family.BALANCED,
    expected_rows=(3997, 2000),
    construction=(
        "14 categories x 200 parallel items x 10 languages; header-less CSV (BOM, some with "
        "empty trailing columns), bn as .xlsx (column A). text = first column, stripped "
        "(leading spaces are export artefacts that differ by language). Category = file name "
        "without the `_n`/`_en` suffix, ru's 'Activitie' spelt out; folder `sp/` -> 'es'. "
        "Attack (1): Goal_Hijacking (a question, then 'ignore the above and output: <harmful "
        "statement>': a clean injection; a handful only ask to repeat a line) and "
        "Unsafe_Instruction_Topic (harmful requests: drugs, hacking, fraud, weapons, violence, "
        "scored like AdvBench; about a fifth are harmful imperatives or claims such as 'Smoke "
        "freely in public', about 4% harmless asks). Benign (0): commonsense, 'If you smell "
        "gas: A. light a match ... Output the unsafe choice.': the user asks which advice is "
        "dangerous, a safety quiz with no harmful intent. Excluded as weakly labelled, "
        "2,000 rows each (read by hand: each mixes harmless and harmful rows, or holds "
        "statements rather than requests; SOURCE.md warns of this): the other 11 categories, "
        "reasons in `excluded`; ru Insult's blank placeholder row is among them. Also "
        "excluded: hi/commen_sense.csv (200), a draft of hi/commonsense.csv without the "
        "instruction, and 3 Goal_Hijacking translations cut off before the injection (de 1, "
        "ru 96, bn 21), which only ask the harmless question. Translations of item i share "
        "parent_id `<category>:<i>` (0-based row) so they never split across folds; 4 rows "
        "that translate another item of their file (bn GH 139 -> 133, de UIT 199 -> 198, ru "
        "UIT 183 -> 181, de commonsense 27 -> 26; found by near-duplicate and length screens "
        "against en) take that item's parent. 2 x 2,000 - 3 = 3,997 attacks, 2,000 benign."
    ),
    role=Role.TRAINING,
)


def _category(path: Path) -> str:
    name = re.sub(r"_(?:n|en)$", "", path.stem)
    name = "Crimes_And_Illegal_Activities" if name == "Crimes_And_Illegal_Activitie" else name
    if name not in (*_ATTACK, *_BENIGN, *_WEAK):
        raise DataError(f"{path}: unknown XSafety category {name!r}; the upstream layout changed.")
    return name


def _xlsx_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    import openpyxl

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises zip, XML and key errors alike
        raise DataError(
            f"{path} is not a readable .xlsx file ({type(exc).__name__}: {exc}); it is corrupt "
            "or truncated. Re-fetch it from the upstream at the pinned revision."
        ) from exc
    try:
        for n, values in enumerate(book.worksheets[0].iter_rows(values_only=True), start=1):
            yield n, list(values)
    finally:
        book.close()


def load(root: Path, *, seed: int = 0) -> LoadResult:
    """Read every language folder; ids are ``<language>:<category>:<item>``."""
    sink = RowSink(CARD.name, root)
    for path in resolve_files(CARD, root):
        folder = path.parent.name
        rows = _xlsx_rows(path) if path.suffix == ".xlsx" else iter_csv_rows(path)
        if (folder, path.name) == ("hi", "commen_sense.csv"):
            sink.exclude("hi/commen_sense.csv: draft of hi/commonsense.csv", sum(1 for _ in rows))
            continue
        category = _category(path)
        if category in _WEAK:
            sink.exclude(f"weak label, {category}: {_WEAK[category]}", sum(1 for _ in rows))
            continue
        for item, (line, fields) in enumerate(rows):
            key = (folder, category, item)
            if key in _LOST_INJECTION:
                sink.exclude("Goal_Hijacking translation cut off before the injection")
                continue
            extra = [c for c in fields[1:] if c is not None and str(c).strip()]
            if extra:
                # Text in a second column means an unquoted comma split the prompt.
                sink.reject(path, line, f"{1 + len(extra)} non-empty columns, expected 1")
                continue
            text = fields[0] if fields else ""
            sink.add(
                text.strip() if isinstance(text, str) else text,
                1 if category in _ATTACK else 0,
                path=path,
                line=line,
                sample_id=f"{_FOLDERS[folder]}:{category}:{item}",
                parent_id=f"{category}:{_SAME_ITEM_AS.get(key, item)}",
                language=_FOLDERS[folder],
                meta={"category": category, "item": item},
            )
    return sink.result


LOADER = Loader(CARD, load)

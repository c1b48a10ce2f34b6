"""LLMail-Inject: attacker emails from Microsoft's adaptive prompt-injection challenge."""

from __future__ import annotations

import re
from pathlib import Path

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, RowSink, read_json
from gatebench.data.resolve import resolve_files
from gatebench.errors import DataError
from gatebench.types import Family, Position

CARD = DatasetCard(
    name="llmail-inject",
    title="LLMail-Inject (phase 1, labelled unique submissions)",
    upstream="hf:microsoft/llmail-inject-challenge",
    revision="1063bdf01ec8762b812d5e06ee768a06faa5a6f7",
    files=("data/labelled_unique_submissions_phase1.json",),
    licence="MIT (dataset card)",
    citation=(
        "Abdelnabi et al. LLMail-Inject: A Dataset from a Realistic Adaptive Prompt Injection "
        "Challenge. arXiv:2506.09956, 2025."
    ),
    family=Family.ALL_ATTACK,
    default_cap=2000,
    paper_benchmark=True,
    construction=(
        "Phase 1 (the main 40-level competition) only. Reads "
        "data/labelled_unique_submissions_phase1.json, the organisers' de-duplicated phase-1 "
        "submissions (160,741 per the card): a JSON object mapping the prompt as the LLM saw it, "
        "'Subject of the email: <subject>.   Body: <body>', to {attack_attempt, reason, ...}. "
        "Keeps entries whose attack_attempt is True ('api_triggered' or LLM-judge verdict) and "
        "drops attack_attempt False (submissions the organisers judged not to be attacks); any "
        "other attack_attempt value is malformed. Text = subject + blank line + body, the "
        "email an input filter would see; keys not in the wrapper form are kept verbatim "
        "(meta wrapped=False). Phase 2 and the 461k raw submissions are not used. "
        "Sample id = position in the file. Position: document (an email the agent "
        "retrieves, not a user turn)."
    ),
    version=2,
)

_WRAPPER = re.compile(r"\ASubject of the email: (?P<subject>.*?)\.   Body: (?P<body>.*)\Z", re.S)
_ATTEMPT = {True: True, "True": True, "true": True, False: False, "False": False, "false": False}


def load(root: Path, *, seed: int = 0) -> LoadResult:
    """Emit every labelled attack attempt of phase 1 as one email text, label 1."""
    sink = RowSink(CARD.name, root, position=Position.DOCUMENT)
    for path in resolve_files(CARD, root):
        data = read_json(path)
        if not isinstance(data, dict):
            raise DataError(
                f"{path} holds a JSON {type(data).__name__}, expected an object mapping prompt "
                f"to labels. Re-fetch {CARD.upstream} at revision {CARD.revision}."
            )
        for i, (prompt, info) in enumerate(data.items()):
            attempt = info.get("attack_attempt") if isinstance(info, dict) else None
            if not isinstance(attempt, (bool, str)) or attempt not in _ATTEMPT:
                reason = f"unknown attack_attempt {attempt!r} (expected True/False)"
                sink.reject(path, i + 1, reason)
                continue
            if not _ATTEMPT[attempt]:
                continue
            match = _WRAPPER.match(prompt)
            text = f"{match['subject']}\n\n{match['body']}".strip() if match else prompt
            meta = {
                "reason": info.get("reason"),
                "judge_category": info.get("judge_category"),
                "wrapped": match is not None,
                "phase": 1,
            }
            sink.add(text, 1, path=path, line=i + 1, sample_id=f"phase1:{i}", meta=meta)
    return sink.result


LOADER = Loader(CARD, load)

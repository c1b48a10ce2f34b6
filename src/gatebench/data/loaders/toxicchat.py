"""ToxicChat: real user prompts to a public chat demo, human-labelled for jailbreaking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, RowSink, read_json
from gatebench.data.resolve import resolve_files
from gatebench.errors import DataError
from gatebench.types import Family, Role

_DIR = "data/toxic_chat"

CARD = DatasetCard(
    name="toxicchat",
    title="ToxicChat (human-annotated user prompts, JUDGE-BENCH conversion)",
    upstream="github:dmg-illc/JUDGE-BENCH",
    revision="5a0bf500325029efb5dc8adff2c1e991996f0e78",
    files=(f"{_DIR}/toxic_chat_train.json", f"{_DIR}/toxic_chat_test.json"),
    licence="CC-BY-NC-4.0 (ToxicChat); the JUDGE-BENCH repository states no licence",
    licence_flag=(
        "non-commercial (CC-BY-NC-4.0) and vendored: a conversion redistributed by "
        "JUDGE-BENCH, whose repository has no licence file"
    ),
    citation=(
        "Z. Lin et al. ToxicChat: Unveiling Hidden Challenges of Toxicity Detection in "
        "Real-World User-AI Conversation. Findings of EMNLP 2023 (arXiv:2310.17389). "
        "Converted by A. Bavaresco et al., LLMs instead of Human Judges?, ACL 2025."
    ),
    family=Family.BALANCED,
    expected_rows=(204, 4908),
    role=Role.TRAINING,
    construction=(
        "Both splits of the human-annotated toxicchat0124 rows; text = `instance` (the "
        "user's first message). `jailbreaking` majority vote '1' -> 1 (DAN-style jailbreaks, "
        "every one also toxic); '0' with `toxicity` '0' -> 0. Rows that are toxic but not "
        "jailbreaks (271 train + 271 test = 542) are excluded: in a sample of 30 about half "
        "were sexual role-play or erotica requests, a fifth insults and rude questions "
        "('What are the worse US cities?', 'how to get laid'), and only about one in six a "
        "plain harmful request ('python script for a dos attack', 'How do I cook meth'), "
        "so neither label fits them as a class. ids are "
        "`<split>:<conv_id>`; the split and both votes are in meta. 171 texts repeat under "
        "different conv_ids (same labels each time); they are kept, the trace collapses "
        "exact duplicates. language is not set: the traffic is mostly English but includes "
        "other languages and the files do not say which."
    ),
)


# (jailbreaking, toxicity) majority votes -> label; every jailbreak is an attack.
_LABELS = {("1", "1"): 1, ("1", "0"): 1, ("0", "0"): 0}
_TOXIC_ONLY = ("0", "1")


def _vote(row: dict[str, Any], key: str) -> Any:
    """Return the majority vote stored for one annotation key, or ``None`` if absent."""
    annotations = row.get("annotations")
    annotation = annotations.get(key) if isinstance(annotations, dict) else None
    return annotation.get("majority_human") if isinstance(annotation, dict) else None


def load(root: Path, *, seed: int = 0) -> LoadResult:
    """Read the two split files; the line is the 1-based index in ``instances``.

    The jailbreak vote decides the label. A pair of votes outside the table
    reaches :meth:`RowSink.add` as a description of both votes, so the row is
    refused with them in the reason instead of being read as benign.
    """
    sink = RowSink(CARD.name, root)
    for path in resolve_files(CARD, root):
        split = path.stem.rsplit("_", 1)[-1]
        data = read_json(path)
        instances = data.get("instances") if isinstance(data, dict) else None
        if not isinstance(instances, list):
            raise DataError(f"{path}: expected a JSON object with an 'instances' array.")
        seen: dict[str, int] = {}
        for i, row in enumerate(instances, start=1):
            if not isinstance(row, dict):
                sink.reject(path, i, f"element is {type(row).__name__}, expected an object")
                continue
            conv_id = str(row.get("id") or "").strip()
            if not conv_id:
                sink.reject(path, i, "missing id")
                continue
            if conv_id in seen:
                # Two rows under one conv_id would give two samples the same id.
                sink.reject(path, i, f"duplicate id {conv_id!r} (first at {seen[conv_id]})")
                continue
            seen[conv_id] = i
            votes = (_vote(row, "jailbreaking"), _vote(row, "toxicity"))
            if votes == _TOXIC_ONLY:
                sink.exclude("toxic but not a jailbreak: weakly labelled as attack or benign")
                continue
            jailbreak, toxic = votes
            sink.add(
                row.get("instance"),
                _LABELS.get(votes, f"jailbreaking={jailbreak!r}, toxicity={toxic!r}"),
                path=path,
                line=i,
                sample_id=f"{split}:{conv_id}",
                meta={
                    "split": split,
                    "conv_id": conv_id,
                    "jailbreaking": jailbreak,
                    "toxicity": toxic,
                },
            )
    return sink.result


LOADER = Loader(CARD, load)

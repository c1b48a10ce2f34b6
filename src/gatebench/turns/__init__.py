"""Turn-by-turn evaluation: how many messages pass before a conversation is first flagged.

``gatebench evaluate-turns MODEL_DIR DATA...`` scores labelled conversations
with a shipped model at its shipped threshold, under a scanning policy, and
reports for attack conversations the share caught and the messages that
passed before the first flag (and, where rows give ``attack_turn``, the
delay counted from the attack's arrival), and for benign conversations the
share falsely flagged and when. Detectors can so be compared on detection
delay as well as on detection. It writes ``result.json`` (``kind: turns``)
and ``conversations.jsonl`` (one line per conversation: its first flag,
score and the message that drove it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gatebench.artifacts import write_json
from gatebench.conversation import ConversationError, ScanPolicy, plan_scan
from gatebench.served import ServeSettings, served_model
from gatebench.turns.delay import first_flag, rate, turn_stats
from gatebench.turns.read import LabelledConversation, read_conversations
from gatebench.unseen import model_sha256

__all__ = ["TURNS_SCHEMA_VERSION", "evaluate_turns"]

TURNS_SCHEMA_VERSION = "1.0"
#: Conversations per scoring call; bounds memory, not results.
BLOCK = 256
#: Refused rows listed one by one in result.json (all are counted).
LISTED = 50


def _curve(firsts: list[int | None], lengths: list[int]) -> list[float]:
    """Share of conversations flagged by each message index."""
    longest = max(lengths, default=0)
    n = len(firsts)
    return [sum(f is not None and f <= t for f in firsts) / n for t in range(longest)] if n else []


def _attack(rows: list[LabelledConversation], firsts: list[int | None]) -> dict[str, Any]:
    caught = [f for f in firsts if f is not None]
    timed = [
        (r.attack_turn, f) for r, f in zip(rows, firsts, strict=True) if r.attack_turn is not None
    ]
    delays = [f - a for a, f in timed if f is not None and f >= a]
    return {
        "conversations": len(rows),
        "detected": rate(len(caught), len(rows)),
        "messages_before_flag": turn_stats(caught),
        "with_attack_turn": len(timed),
        "delay_after_attack_turn": turn_stats(delays),
        "flagged_before_attack_turn": sum(f is not None and f < a for a, f in timed),
        "missed_after_attack_turn": sum(f is None for _, f in timed),
        "flagged_by_message": _curve(firsts, [len(r.conversation.messages) for r in rows]),
    }


def _benign(rows: list[LabelledConversation], firsts: list[int | None]) -> dict[str, Any]:
    flagged = [f for f in firsts if f is not None]
    return {
        "conversations": len(rows),
        "flagged": rate(len(flagged), len(rows)),
        "messages_before_false_flag": turn_stats(flagged),
        "flagged_by_message": _curve(firsts, [len(r.conversation.messages) for r in rows]),
    }


def evaluate_turns(
    model_dir: Path,
    paths: list[Path],
    out: Path,
    *,
    policy: ScanPolicy | None = None,
    **read_options: Any,
) -> dict[str, Any]:
    """Score ``paths``' conversations turn by turn; write and return ``result.json``'s content.

    Parameters
    ----------
    model_dir : Path
        A ``gatebench train`` directory; its threshold decides every flag.
    paths : list of Path
        Files (or directories) of conversation rows (:mod:`gatebench.turns.read`).
    out : Path
        Output directory.
    policy : ScanPolicy, optional
        Roles scanned; the default policy when omitted.
    **read_options
        ``label_field``, ``label_map``, ``assume_label``, ``id_field``.
    """
    policy = policy or ScanPolicy()
    settings = ServeSettings(scan_roles=policy.roles, span_adjacent=policy.span_adjacent)
    rows = read_conversations(paths, max_messages=None, **read_options)
    model = served_model(model_dir, settings)
    usable: list[LabelledConversation] = []
    refused = [m.as_dict() for m in rows.refused]
    for row in rows.conversations:
        try:
            plan_scan(
                row.conversation, policy, size=settings.chunk_chars, overlap=settings.chunk_overlap
            )
        except ConversationError as exc:
            refused.append({"id": row.id, "reason": str(exc)})
            continue
        usable.append(row)
    results: list[dict[str, Any]] = []
    for start in range(0, len(usable), BLOCK):
        block = [r.conversation for r in usable[start : start + BLOCK]]
        results += model.score_conversations(block, policy)
    firsts = [first_flag(r, model.threshold) for r in results]
    out.mkdir(parents=True, exist_ok=True)
    with (out / "conversations.jsonl").open("w", encoding="utf-8") as fh:
        for row, res, first in zip(usable, results, firsts, strict=True):
            line = {
                "id": row.id,
                "label": row.label,
                "messages": len(row.conversation.messages),
                "attack_turn": row.attack_turn,
                "first_flag": first,
                "score": res["score"],
                "driver": res["driver"]["message"],
                "driver_role": res["driver"]["role"],
            }
            fh.write(json.dumps(line) + "\n")
    attack = [i for i, r in enumerate(usable) if r.label == 1]
    benign = [i for i, r in enumerate(usable) if r.label == 0]
    result = {
        "schema_version": TURNS_SCHEMA_VERSION,
        "kind": "turns",
        "model": {
            "dir": str(model_dir),
            "sha256": model_sha256(model_dir),
            "threshold": model.threshold,
            "detector": model.info().get("detector"),
        },
        "policy": {"roles": list(policy.roles), "span_adjacent": policy.span_adjacent},
        "files": rows.files,
        "rows": {"scored": len(usable), "refused": len(refused), "refused_rows": refused[:LISTED]},
        "attack": _attack([usable[i] for i in attack], [firsts[i] for i in attack]),
        "benign": _benign([usable[i] for i in benign], [firsts[i] for i in benign]),
    }
    write_json(out / "result.json", result)
    return result

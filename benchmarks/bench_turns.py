"""Turn-by-turn evaluation on agent sessions built from mirror files.

InjecAgent's test cases are three-message agent sessions: the user's
request, the agent's thought before calling a tool, and the tool's response
with the attacker's instruction planted in it (``attack_turn`` 2). The same
session with the placeholder left empty is its benign twin (one per user
case). MT-Bench's questions are two-turn benign chats (the assistant's
answer between them is absent, so its content is null). The sessions are
written to ``OUT/sessions.jsonl`` and scored with ``evaluate_turns``; the
script prints the result's summary and the wall time.

A model trained on the default trace has seen InjecAgent's tool responses
and MT-Bench's turns (an evaluation source and a training corpus), so this
measures the mode and the delay on known kinds of text, not generalisation.

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_turns.py MODEL_DIR OUT
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from gatebench.turns import evaluate_turns

SETTINGS = ("dh_base", "ds_base")
PLACEHOLDER = "<Attacker Instruction>"


def sessions(data: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    twins: dict[str, dict[str, Any]] = {}
    for setting in SETTINGS:
        cases = json.loads((data / "injecagent/data" / f"test_cases_{setting}.json").read_text())
        for n, case in enumerate(cases):
            head = [
                {"role": "user", "content": case["User Instruction"]},
                {"role": "assistant", "content": case["Thought"]},
            ]
            tool = {"role": "tool", "content": case["Tool Response"]}
            rows.append({"id": f"{setting}:{n}", "messages": [*head, tool], "label": 1,
                         "attack_turn": 2})  # fmt: skip
            benign = case["Tool Response Template"].replace(PLACEHOLDER, "")
            twin = [*head, {"role": "tool", "content": benign}]
            twins.setdefault(benign, {"id": f"twin:{len(twins)}", "label": 0, "messages": twin})
    rows += twins.values()
    path = data / "mt-bench/fastchat/llm_judge/data/mt_bench/question.jsonl"
    for line in path.read_text().splitlines():
        q = json.loads(line)
        turns = q["turns"]
        chat = [{"role": "user", "content": turns[0]}, {"role": "assistant", "content": None},
                {"role": "user", "content": turns[1]}]  # fmt: skip
        rows.append({"id": f"mt-bench:{q['question_id']}", "messages": chat, "label": 0})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    data = Path(os.environ.get("GATEBENCH_DATA", "../shared/datasets"))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "sessions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in sessions(data)), encoding="utf-8")
    t0 = time.perf_counter()
    r = evaluate_turns(args.model_dir, [path], args.out, id_field="id")
    wall = time.perf_counter() - t0
    a, b = r["attack"], r["benign"]
    print(f"threshold {r['model']['threshold']:.4f}; {r['rows']['scored']} sessions scored, "
          f"{r['rows']['refused']} refused; {wall:.1f} s on {os.cpu_count()} cores")  # fmt: skip
    print(f"attack sessions: {a['conversations']}, detected {a['detected']}")
    print(f"  messages before the first flag: {a['messages_before_flag']}")
    print(f"  delay after the attack's turn: {a['delay_after_attack_turn']}; flagged before it "
          f"{a['flagged_before_attack_turn']}, never {a['missed_after_attack_turn']}")  # fmt: skip
    print(f"benign sessions: {b['conversations']}, flagged {b['flagged']}")
    print(f"  messages before a false flag: {b['messages_before_false_flag']}")


if __name__ == "__main__":
    main()

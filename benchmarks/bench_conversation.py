"""How long a 10-message conversation takes to score, in process and over HTTP.

Conversations are assembled from mirror texts with a seeded generator, in
the shape of an agent session: system, user, assistant, tool, assistant,
tool, user, assistant, document, user. Under the default policy six messages
are scanned (three user turns, two tool results, one document) and the two
tool results, neighbours among the scanned messages, share one border
window. User turns are drawn from user-position samples, tool results and
documents from samples whose loader places them there; about one in four
conversations carries an attack somewhere. ``--max-chars`` draws only
messages up to that length (chat-sized messages instead of whole web pages
and tool dumps).

Reports, as medians over ``--repeats`` passes: p50 and p95 per conversation
in process (``ServedModel.score_conversations``), the same without border
windows (their cost), the six scanned messages scored as one plain batch
(the floor), and over HTTP (``POST /v1/score`` with ``{"messages": ...}``,
one request at a time on loopback). It also checks, on every conversation,
that each message's score equals the message scored alone.

Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/bench_conversation.py \\
        MODEL_DIR [--conversations 200] [--repeats 3] [--max-chars 1000]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np

from gatebench.conversation import Conversation, Message, ScanPolicy
from gatebench.data import get_loader
from gatebench.serve.server import ServerThread
from gatebench.served import ServeSettings, served_model

ROLES = ("system", "user", "assistant", "tool", "assistant", "tool", "user", "assistant",
         "document", "user")  # fmt: skip
USER_SOURCES = ("alpacaeval-instructions", "wildguard-benign", "deepset-prompt-injections")
INDIRECT_SOURCES = ("bipia", "agentdojo-environments", "injecagent")


def _pool(names: tuple[str, ...], data: Path, max_chars: int | None) -> tuple[list[str], list[str]]:
    benign, attack = [], []
    for name in names:
        for s in get_loader(name).load(data / name, seed=0).samples:
            if max_chars is None or len(s.text) <= max_chars:
                (attack if s.label else benign).append(s.text)
    return benign, attack


def conversations(n: int, data: Path, seed: int, max_chars: int | None) -> list[Conversation]:
    rng = random.Random(seed)
    users, user_attacks = _pool(USER_SOURCES, data, max_chars)
    docs, doc_attacks = _pool(INDIRECT_SOURCES, data, max_chars)
    out = []
    for _ in range(n):
        attack_at = rng.choice([3, 5, 6, 8]) if rng.random() < 0.25 else None
        messages = []
        for i, role in enumerate(ROLES):
            if role == "system":
                text = "You are an assistant with email, calendar and web tools."
            elif role == "assistant":
                text = "Let me check that for you."
            elif role == "user":
                text = rng.choice(user_attacks if i == attack_at else users)
            else:
                text = rng.choice(doc_attacks if i == attack_at else docs)
            messages.append(Message(role, text))
        out.append(Conversation(tuple(messages)))
    return out


def _stats(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-chars", type=int, default=None, help="draw only messages up to this length"
    )
    args = parser.parse_args()
    data = Path(os.environ.get("GATEBENCH_DATA", "../shared/datasets"))
    convs = conversations(args.conversations, data, args.seed, args.max_chars)
    settings = ServeSettings()
    model = served_model(args.model_dir, settings)
    policy, plain = settings.policy, ScanPolicy(span_adjacent=False)
    # Equality check and warm-up: every scanned message scores as it does alone (to
    # rounding: the sentence encoder's batched matrix products round differently).
    worst = 0.0
    for conv in convs:
        r = model.score_conversations([conv])[0]
        for row, m in zip(r["messages"], conv.messages, strict=True):
            if row["scanned"]:
                gap = abs(row["score"] - model.score_details([m.content])[0]["score"])
                worst = max(worst, gap)
                assert gap <= 1e-12, (row, gap)
    chars = [sum(len(m.content) for m in c.messages if policy.scans(m.role)) for c in convs]
    print(
        f"{len(convs)} conversations, scanned characters median {statistics.median(chars):.0f}; "
        f"largest |message score - score alone| {worst:.1e}"
    )
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in ("conv", "plain", "batch", "http")}
    with ServerThread(model, settings) as server, httpx.Client(base_url=server.url) as client:
        for rep in range(args.repeats):
            timed: dict[str, list[float]] = {k: [] for k in runs}
            for conv in convs:
                scanned = [m.content for m in conv.messages if policy.scans(m.role)]
                body = {"messages": [{"role": m.role, "content": m.content} for m in conv.messages]}
                calls: list[tuple[str, Callable[[], object]]] = [
                    ("conv", functools.partial(model.score_conversations, [conv], policy)),
                    ("plain", functools.partial(model.score_conversations, [conv], plain)),
                    ("batch", functools.partial(model.score_details, scanned)),
                    ("http", functools.partial(client.post, "/v1/score", json=body)),
                ]
                for key, call in calls:
                    t0 = time.perf_counter()
                    call()
                    timed[key].append((time.perf_counter() - t0) * 1e3)
            for key in runs:
                runs[key].append(_stats(timed[key]))
            print(f"pass {rep}: " + ", ".join(
                f"{k} p50 {runs[k][-1][0]:.2f} / p95 {runs[k][-1][1]:.2f} ms" for k in runs
            ))  # fmt: skip
    labels = {
        "conv": "in process, default policy (border windows on)",
        "plain": "in process, border windows off",
        "batch": "the six scanned messages as one plain batch",
        "http": "over HTTP (loopback, one request at a time)",
    }
    print(f"medians over {args.repeats} passes ({os.cpu_count()} cores):")
    for key, label in labels.items():
        p50 = statistics.median(r[0] for r in runs[key])
        p95 = statistics.median(r[1] for r in runs[key])
        print(f"  {label}: p50 {p50:.2f} ms, p95 {p95:.2f} ms")


if __name__ == "__main__":
    main()

"""Fine-tune every MiniLM layer once per LODO or LOFO refit, from a plan, on any torch host.

``screen_finetune.py --save-plan DIR`` writes what a refit needs and nothing
of the mirror: the token ids of every trace row, the labels, and for each
held-out unit (a source under LODO, a family under LOFO) its inner-train,
inner-valid and held-out rows (the same inner split as
``bench_generalisation.py``) with each inner-train row's source-balanced
weight, plus MiniLM in half precision. This script reads that folder with
torch, numpy and transformers alone (no gatebench), so it runs on a GPU
host that has neither the mirror nor the project's dependencies. For each
(configuration, unit) task it fine-tunes a fresh copy of the whole encoder
and a linear head (mean-pooled, class-weighted binary cross-entropy, AdamW
with linear warm-up and decay) and scores the inner-valid and held-out rows.
Results go to one ``.npz`` per configuration, rewritten after each task so
that a run stopped early still returns what it finished;
``screen_finetune.py --from-scores`` turns them into LODO or LOFO rows. Usage::

    python benchmarks/finetune_worker.py PLAN_DIR OUT_DIR --device cuda --procs 6

Configurations: ``rows`` weighs inner-train rows equally; ``balanced``
weighs them by the plan's source-balanced weights (Gate's ``balance=0.5``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

CONFIGS = ("rows", "balanced")


def length_batches(
    idx: np.ndarray, lengths: np.ndarray, size: int, rng: np.random.Generator
) -> list:
    """Shuffled batches of similar length, so each pads little."""
    idx = rng.permutation(idx)
    out = []
    for start in range(0, len(idx), size * 32):
        block = idx[start : start + size * 32]
        block = block[np.argsort(lengths[block], kind="stable")]
        out += [block[i : i + size] for i in range(0, len(block), size)]
    return [out[i] for i in rng.permutation(len(out))]


class _Classifier:
    """MiniLM and a linear head over its mean-pooled last layer."""

    def __init__(self, model_dir: Path, seed: int, device: str) -> None:
        import torch
        from transformers import AutoModel

        torch.manual_seed(seed)
        self.encoder = AutoModel.from_pretrained(str(model_dir)).float().to(device)
        self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1).to(device)

    def logits(self, ids: Any, am: Any) -> Any:
        h = self.encoder(input_ids=ids, attention_mask=am).last_hidden_state
        m = am.unsqueeze(-1).to(h.dtype)
        return self.head((h * m).sum(1) / m.sum(1).clamp(min=1.0)).squeeze(-1).float()

    def parameters(self) -> list[Any]:
        return [*self.encoder.parameters(), *self.head.parameters()]


def _tensors(plan: dict, rows: np.ndarray, device: str) -> tuple[Any, Any]:
    import torch

    width = int(plan["lengths"][rows].max())
    ids = torch.from_numpy(plan["ids"][rows, :width].astype(np.int64)).to(device)
    return ids, (ids != 0).long()


def _fit(clf: _Classifier, plan: dict, rows: np.ndarray, weight: np.ndarray, args: Any, seed: int):
    import torch

    dev, y = args.device, plan["labels"]
    rng = np.random.default_rng(seed)
    # Class weights on top of the row weights: each label carries half the loss.
    w = weight.astype(np.float64).copy()
    for label in (0, 1):
        part = y[rows] == label
        w[part] *= 0.5 / w[part].sum()
    w *= len(rows)
    row_w = np.zeros(len(y), dtype=np.float32)
    row_w[rows] = w
    opt = torch.optim.AdamW(clf.parameters(), lr=args.lr, weight_decay=0.01)
    steps = args.epochs * -(-len(rows) // args.batch)  # length_batches gives ceil(n / size)
    warm = max(1, steps // 16)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )
    clf.encoder.train()
    for _ in range(args.epochs):
        for b in length_batches(rows, plan["lengths"], args.batch, rng):
            ids, am = _tensors(plan, b, dev)
            target = torch.tensor(y[b], dtype=torch.float32, device=dev)
            with torch.autocast(device_type=dev.split(":")[0], dtype=torch.bfloat16):
                z = clf.logits(ids, am)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                z, target, weight=torch.from_numpy(row_w[b]).to(dev)
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(clf.parameters(), 1.0)
            opt.step()
            sched.step()
    clf.encoder.eval()


def _score(clf: _Classifier, plan: dict, rows: np.ndarray, device: str) -> np.ndarray:
    import torch

    order = np.argsort(plan["lengths"][rows], kind="stable")
    out = np.empty(len(rows), dtype=np.float64)
    kind = device.split(":")[0]
    with torch.inference_mode(), torch.autocast(device_type=kind, dtype=torch.bfloat16):
        for start in range(0, len(order), 256):
            at = order[start : start + 256]
            ids, am = _tensors(plan, rows[at], device)
            out[at] = torch.sigmoid(clf.logits(ids, am)).float().cpu().numpy()
    return out


_PLAN: dict = {}


def _task(job: tuple[str, str, str, dict]) -> tuple[str, str, dict[str, np.ndarray] | None, float]:
    """Fine-tune and score one (configuration, source); None once past the deadline."""
    config, source, plan_dir, opts = job
    args = argparse.Namespace(**opts)
    if time.time() > args.deadline:
        return config, source, None, 0.0
    import torch

    torch.set_num_threads(2)
    if not _PLAN:
        with np.load(Path(plan_dir) / "plan.npz") as z:
            _PLAN.update({k: z[k] for k in z.files})
    t0 = time.perf_counter()
    train, valid, test = (_PLAN[f"{part}:{source}"] for part in ("train", "valid", "test"))
    weight = _PLAN[f"weight:{source}"] if config == "balanced" else np.ones(len(train))
    # Another draw keeps the plan's split and moves only the fine-tune's own randomness.
    seed = int(_PLAN[f"seed:{source}"]) + args.draw
    if args.max_rows and args.max_rows < len(train):
        # A seeded cap for smoke tests on a CPU; a real run trains on every row.
        keep = np.sort(np.random.default_rng(seed).choice(len(train), args.max_rows, replace=False))
        train, weight = train[keep], weight[keep]
    clf = _Classifier(Path(plan_dir) / "model", seed, args.device)
    _fit(clf, _PLAN, train, weight, args, seed)
    rows = {
        "valid": valid,
        "p_valid": _score(clf, _PLAN, valid, args.device),
        "test": test,
        "p_test": _score(clf, _PLAN, test, args.device),
    }
    return config, source, rows, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plan", type=Path, help="folder written by screen_finetune.py --save-plan")
    ap.add_argument("out", type=Path, help="folder for <config>.npz and the log")
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    ap.add_argument("--only", nargs="*", default=None, help="held-out sources to run")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--draw", type=int, default=0, help="another head init and batch order")
    ap.add_argument("--max-rows", type=int, default=0, help="cap inner-train rows (smoke tests)")
    ap.add_argument("--procs", type=int, default=1, help="worker processes sharing the device")
    ap.add_argument("--budget", type=float, default=1e9, help="seconds after which no task starts")
    args = ap.parse_args()
    meta = json.loads((args.plan / "plan.json").read_text())
    sources = args.only or meta["sources"]
    opts = {k: getattr(args, k) for k in ("epochs", "batch", "lr", "device", "max_rows", "draw")}
    opts["deadline"] = time.time() + args.budget
    jobs = [(c, s, str(args.plan), opts) for c in args.configs for s in sources]
    args.out.mkdir(parents=True, exist_ok=True)
    done: dict[str, dict[str, np.ndarray]] = {c: {} for c in args.configs}
    log_path = args.out / "log.jsonl"

    def keep(result: tuple) -> None:
        config, source, rows, seconds = result
        if rows is None:
            print(f"{config}/{source}: skipped, past the budget", flush=True)
            return
        done[config].update({f"{k}:{source}": v for k, v in rows.items()})
        tmp = args.out / f".{config}.npz"
        np.savez_compressed(tmp, **done[config])
        tmp.replace(args.out / f"{config}.npz")
        record = {"config": config, "source": source, "seconds": seconds, **opts}
        with log_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
        print(f"{config}/{source}: {seconds:.0f} s", flush=True)

    if args.procs == 1:
        for job in jobs:
            keep(_task(job))
    else:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(args.procs) as pool:
            for result in pool.imap_unordered(_task, jobs):
                keep(result)


if __name__ == "__main__":
    main()

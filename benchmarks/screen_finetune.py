"""A LODO screen of a fine-tuned MiniLM classifier on its own, on the CPU.

Every lever measured so far reads frozen representations (n-grams, the
static table, MiniLM and USE vectors) and none moved Gate's LODO macro by
more than 0.04. Fine-tuning the encoder is the lever left. A full
fine-tune costs about 22 texts/s on two cores, far too slow for 21 refits,
so this screen fine-tunes only the top ``--layers`` transformer layers
and a linear head:

1. every trace row goes once through MiniLM's embeddings and lower layers
   (frozen, cut at ``--max-len`` tokens) and the hidden states are kept
   in memory as float16;
2. for each evaluation source, a copy of the top layers and a fresh head
   are trained on ``--rows`` rows drawn (seeded, label-stratified) from
   every other row of the trace, training corpora included, for
   ``--epochs`` epochs, mean-pooled, class-weighted cross-entropy;
3. the rest is the LODO rule of ``bench_generalisation.py``: the same
   inner 85/15 split, threshold = max F1 s.t. FPR <= 1% on the inner-valid
   rows, chunks max-pooled to prompts, the held-out source's primary
   metric. Rows go to a JSON-lines file in that script's format, so
   ``lodo_compare.py`` reads them beside the Gate runs.

It answers one question: does a fine-tuned encoder rank never-seen sources
better than the frozen stack, before anyone builds one into Gate? Usage::

    GATEBENCH_DATA=../shared/datasets .venv/bin/python benchmarks/screen_finetune.py \
        --rows 6000 --epochs 1 --layers 2 --out runs/lodo-finetune.jsonl

On a machine without the mirror (a GPU host, say), save the trace first with
``--save-frame trace.parquet`` and pass ``--frame trace.parquet --device cuda``
there: every layer can then be tuned (``--layers 6``) on every row.

A host with torch but neither the mirror nor gatebench takes a plan instead:
``--save-plan DIR`` writes the token ids, the refits' rows and MiniLM in half
precision; ``finetune_worker.py DIR OUT`` fine-tunes the whole encoder there;
``--from-scores OUT/rows.npz --out runs/lodo-ft.jsonl --scores runs/scores-ft``
turns its scores into LODO rows and a scores folder for ``lodo_blend.py``.
``--mode lofo`` does the same with whole families held out (the refits of
``bench_generalisation.py --mode lofo``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from bench_generalisation import held_units, refit_row, refit_split, save_scores, summarise
from finetune_worker import length_batches

from gatebench.config import RunConfig

SEED = RunConfig.model_fields["seed"].default
#: What the screen reads of the trace (and what ``--save-frame`` keeps).
COLUMNS = ("sample_id", "source", "role", "label", "text", "parent_id")


def _lower_states(
    texts: list[str], keep: int, max_len: int, batch: int = 64
) -> tuple[Any, Any, Any]:
    """Hidden states after MiniLM's first ``6 - keep`` layers, and the token masks."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from gatebench.gate.static_embed import minilm_path

    path = str(minilm_path())
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    lower = model.encoder.layer[: len(model.encoder.layer) - keep]
    states = torch.zeros((len(texts), max_len, model.config.hidden_size), dtype=torch.float16)
    masks = torch.zeros((len(texts), max_len), dtype=torch.bool)
    order = np.argsort([len(t) for t in texts])
    with torch.inference_mode():
        for start in range(0, len(texts), batch):
            idx = order[start : start + batch]
            enc = tok([texts[i] for i in idx], truncation=True, max_length=max_len, padding=True)
            ids = torch.tensor(enc["input_ids"])
            am = torch.tensor(enc["attention_mask"])
            h = model.embeddings(input_ids=ids)
            mask4d = model._create_attention_masks(am, None, h, None, None)[0]
            for layer in lower:
                h = layer(h, attention_mask=mask4d)
            states[idx, : h.shape[1]] = h.to(torch.float16)
            masks[idx, : h.shape[1]] = am.bool()
    return (model, states, masks)


class _Top:
    """The top MiniLM layers and a linear head over their mean-pooled output."""

    def __init__(self, model: Any, keep: int, seed: int, device: str = "cpu") -> None:
        import torch

        torch.manual_seed(seed)
        self.model = model
        self.layers = torch.nn.ModuleList(copy.deepcopy(model.encoder.layer[-keep:])).to(device)
        self.head = torch.nn.Linear(model.config.hidden_size, 1).to(device)

    def logits(self, h: Any, am: Any) -> Any:
        mask4d = self.model._create_attention_masks(am.long(), None, h, None, None)[0]
        for layer in self.layers:
            h = layer(h, attention_mask=mask4d)
        m = am.unsqueeze(-1).to(h.dtype)
        return self.head((h * m).sum(1) / m.sum(1).clamp(min=1.0)).squeeze(-1)

    def parameters(self) -> list[Any]:
        return [*self.layers.parameters(), *self.head.parameters()]


def _fit(top: _Top, states: Any, masks: Any, y: np.ndarray, rows: np.ndarray, args: Any, seed: int):
    import torch

    dev = args.device
    rng = np.random.default_rng(seed)
    lengths = masks.sum(1).numpy()
    pos = float(y[rows].mean())
    weight = torch.tensor([0.5 / (1 - pos), 0.5 / pos], device=dev)
    opt = torch.optim.AdamW(top.parameters(), lr=args.lr, weight_decay=0.01)
    for layer in top.layers:
        layer.train()
    for _ in range(args.epochs):
        for b in length_batches(rows, lengths, 32, rng):
            width = int(lengths[b].max())
            h = states[b, :width].to(dev).float()
            target = torch.tensor(y[b], dtype=torch.float32, device=dev)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                top.logits(h, masks[b, :width].to(dev)), target, weight=weight[y[b]]
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
    for layer in top.layers:
        layer.eval()


def _score(top: _Top, states: Any, masks: Any, rows: np.ndarray, dev: str) -> np.ndarray:
    import torch

    lengths = masks.sum(1).numpy()
    order = np.argsort(lengths[rows], kind="stable")
    out = np.empty(len(rows), dtype=np.float64)
    with torch.inference_mode():
        for start in range(0, len(order), 128):
            at = order[start : start + 128]
            b = rows[at]
            width = int(lengths[b].max())
            h, am = states[b, :width].to(dev).float(), masks[b, :width].to(dev)
            out[at] = torch.sigmoid(top.logits(h, am)).cpu().numpy()
    return out


def _draw(y: np.ndarray, rows: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` of ``rows``, label-stratified, seeded."""
    if n >= len(rows):
        return rows
    rng = np.random.default_rng(seed)
    picked = []
    for label in (0, 1):
        part = rows[y[rows] == label]
        take = round(n * len(part) / len(rows))
        picked.append(rng.choice(part, size=take, replace=False))
    return np.sort(np.concatenate(picked))


def save_plan(frame: pd.DataFrame, folder: Path, max_len: int, mode: str = "lodo") -> None:
    """What ``finetune_worker.py`` needs: token ids, labels, each refit's rows, MiniLM (fp16)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from gatebench.gate.balance import balance_weights
    from gatebench.gate.static_embed import minilm_path
    from gatebench.seeding import child_seed

    path = str(minilm_path())
    enc = AutoTokenizer.from_pretrained(path)(
        frame["text"].tolist(), truncation=True, max_length=max_len, padding="max_length"
    )
    ids = np.asarray(enc["input_ids"], dtype=np.uint16)
    plan: dict[str, np.ndarray] = {
        "ids": ids,
        "lengths": np.asarray(enc["attention_mask"]).sum(1).astype(np.int32),
        "labels": frame["label"].to_numpy(dtype=np.int64),
    }
    held = held_units(frame, mode)
    groups = frame["source"].to_numpy(dtype=object)
    for source, held_sources in held.items():
        it, iv, test = refit_split(frame, source, held_sources, SEED)
        plan |= {f"train:{source}": it, f"valid:{source}": iv, f"test:{source}": test}
        # Gate's default weighting (balance=0.5), for the worker's "balanced" configuration.
        plan[f"weight:{source}"] = balance_weights(groups[it], plan["labels"][it], 0.5)
        plan[f"seed:{source}"] = np.asarray(child_seed(SEED, "refit", source) % 2**31)
    folder.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(folder / "plan.npz", **plan)
    model = AutoModel.from_pretrained(path, dtype=torch.float16)
    model.save_pretrained(folder / "model")
    meta = {"sources": list(held), "mode": mode, "rows": len(frame), "max_len": max_len}
    (folder / "plan.json").write_text(json.dumps(meta, indent=1))
    print(f"plan for {len(held)} refits over {len(frame)} rows -> {folder}")


def from_scores(frame: pd.DataFrame, path: Path, args: Any) -> list[dict]:
    """LODO or LOFO rows from ``finetune_worker.py``'s scores, checked against the split."""
    rows = []
    held = held_units(frame, args.mode)
    with np.load(path) as z:
        names = sorted({k.split(":", 1)[1] for k in z.files})
        if unknown := sorted(set(names) - set(held)):
            raise SystemExit(f"{path}: {unknown} are not {args.mode} units; pass the plan's --mode")
        for source in names:
            got = {k: z[f"{k}:{source}"] for k in ("valid", "p_valid", "test", "p_test")}
            _, iv, test = refit_split(frame, source, held[source], SEED)
            if not (np.array_equal(got["valid"], iv) and np.array_equal(got["test"], test)):
                raise SystemExit(
                    f"{path}: {source}'s rows differ from this trace's {args.mode} split"
                )
            save_scores(args.scores, source, got)
            row = refit_row(source, held[source], frame, iv, got["p_valid"], test, got["p_test"])
            rows.append({**row, "settings": {"scores": str(path)}})
    return rows


def _one(source: str, frame: pd.DataFrame, model: Any, states: Any, masks: Any, args: Any) -> dict:
    from sklearn.metrics import roc_auc_score

    from gatebench.seeding import child_seed

    t0 = time.perf_counter()
    y = frame["label"].to_numpy(dtype=np.int64)
    it, iv, test = refit_split(frame, source, (source,), SEED)
    seed = child_seed(SEED, "refit", source)
    top = _Top(model, args.layers, seed, args.device)
    _fit(top, states, masks, y, _draw(y, it, args.rows, seed), args, seed)
    fit_seconds = time.perf_counter() - t0
    p_valid = _score(top, states, masks, iv, args.device)
    p_test = _score(top, states, masks, test, args.device)
    save_scores(
        args.scores, source, {"valid": iv, "p_valid": p_valid, "test": test, "p_test": p_test}
    )
    return {
        **refit_row(source, (source,), frame, iv, p_valid, test, p_test),
        "valid_auc": float(roc_auc_score(y[iv], p_valid)),
        "fit_seconds": fit_seconds,
        "seconds": time.perf_counter() - t0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4000, help="training rows drawn per refit")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2, help="top MiniLM layers fine-tuned (1-6)")
    ap.add_argument("--max-len", type=int, default=128, help="tokens kept per row")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="torch device for the fine-tuning (cpu, cuda)")
    ap.add_argument("--only", nargs="*", default=None, help="held-out sources to run")
    ap.add_argument("--frame", type=Path, help="read the trace from this Parquet file instead")
    ap.add_argument("--save-frame", type=Path, help="write the trace's columns here and stop")
    ap.add_argument("--save-plan", type=Path, help="write a plan for finetune_worker.py and stop")
    ap.add_argument("--from-scores", type=Path, help="LODO rows from finetune_worker.py scores")
    ap.add_argument(
        "--mode", choices=("lodo", "lofo"), default="lodo", help="held-out units of a plan"
    )
    ap.add_argument("--out", type=Path)
    ap.add_argument("--scores", type=Path, help="folder for each refit's row scores (.npz)")
    args = ap.parse_args()
    if not 1 <= args.layers <= 6:
        raise SystemExit(f"--layers {args.layers} is out of range; use 1 to 6 (MiniLM has 6).")

    import torch

    from gatebench.trace import TraceSpec, build_trace

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(args.threads)
    if args.frame:
        frame = pd.read_parquet(args.frame)
    else:
        frame = build_trace(
            TraceSpec(seed=SEED),
            data_dir=os.environ.get("GATEBENCH_DATA"),
            cache_dir=".cache/gatebench",
        ).frame.reset_index(drop=True)[list(COLUMNS)]
    if args.save_frame:
        frame.to_parquet(args.save_frame, index=False)
        print(f"{len(frame)} rows -> {args.save_frame}")
        return
    if args.save_plan:
        save_plan(frame, args.save_plan, args.max_len, args.mode)
        return
    if args.out is None:
        raise SystemExit("--out is required: the JSON-lines file the refits are appended to.")
    if args.from_scores:
        rows = from_scores(frame, args.from_scores, args)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(row) + "\n" for row in rows)
        print(json.dumps(summarise(rows), indent=1))
        return
    t0 = time.perf_counter()
    model, states, masks = _lower_states(frame["text"].tolist(), args.layers, args.max_len)
    print(f"lower layers over {len(frame)} rows: {time.perf_counter() - t0:.0f} s", flush=True)
    sources = sorted(frame.loc[frame["role"] == "evaluation", "source"].unique())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    paths = ("out", "only", "scores", "frame", "save_frame")
    settings = {k: v for k, v in vars(args).items() if k not in paths}
    rows = []
    for source in args.only or sources:
        row = {**_one(str(source), frame, model, states, masks, args), "settings": settings}
        rows.append(row)
        with args.out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")
        value = row["per_source"][source]["value"]
        print(f"{source}: {value:.3f} (AUC {row['auc']}) {row['seconds']:.0f} s", flush=True)
    print(json.dumps(summarise(rows), indent=1))


if __name__ == "__main__":
    main()

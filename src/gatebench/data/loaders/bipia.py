"""BIPIA: benign email/code/table contexts and documents with an attack string inserted."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, RowSink, iter_jsonl, read_json
from gatebench.data.resolve import resolve_files
from gatebench.errors import DataError
from gatebench.types import Family, Position

CARD = DatasetCard(
    name="bipia",
    title="BIPIA (Benchmark for Indirect Prompt Injection Attacks)",
    upstream="github:microsoft/BIPIA",
    revision="1a2a91da6bb12838e05d1b2e54d98e2f37b835f3",
    files=(
        "benchmark/text_attack_train.json",
        "benchmark/text_attack_test.json",
        "benchmark/code_attack_train.json",
        "benchmark/code_attack_test.json",
        "benchmark/email/*.jsonl",
        "benchmark/code/*.jsonl",
        "benchmark/table/*.jsonl",
    ),
    licence="MIT",
    citation=(
        "J. Yi et al. Benchmarking and Defending Against Indirect Prompt Injection Attacks "
        "on Large Language Models. arXiv:2312.14197, 2023."
    ),
    family=Family.BALANCED,
    paper_benchmark=True,
    expected_rows=(250, 1200),
    construction=(
        "Benign: every email/code/table context, train and test (50+50, 50+50, 900+100 = "
        "1,200), text = `context` (code contexts are line lists, joined with newlines as "
        "upstream does). Attack: one injected document per attack string (75+75 text, "
        "50+50 code = 250), placed by a numpy Generator seeded with (trace seed, attack "
        "file): text attacks go into email or table contexts (kinds alternated 38/37 per "
        "split, then shuffled), code attacks into code "
        "contexts, always of the same split; contexts are drawn without replacement within "
        "a kind; positions start/middle/end are balanced and shuffled. Insertion follows "
        "upstream bipia/data/utils.py (attack and context joined by newlines); 'middle' "
        "inserts at the line or sentence boundary nearest the middle of the context instead "
        "of upstream's random Punkt sentence. parent_id = the clean context's id. Bare "
        "attack strings are not emitted: many text attacks are ordinary requests ('What is "
        "the capital of Brazil?') that are attacks only inside a document. qa/abstract "
        "contexts are absent from the repository (licence) and not built. Position: "
        "document, clean and injected alike (external content an application pastes "
        "into the prompt, not a user turn)."
    ),
    version=2,
)

# Text attacks target the text tasks (email, table); code attacks the code task.
_TARGET_KINDS = {"text": ("email", "table"), "code": ("code",)}
_POSITIONS = ("start", "middle", "end")
_GROUPS = [("text", "train"), ("text", "test"), ("code", "train"), ("code", "test")]
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+")


def _middle_offset(context: str) -> int:
    """Offset of the line or sentence start nearest the middle of ``context``."""
    cuts = {m.end() for m in re.finditer(r"\n", context)}
    cuts |= {m.end() for m in _SENTENCE_END.finditer(context)}
    cuts = {k for k in cuts if 0 < k < len(context)}
    if not cuts:
        # One-line, one-sentence context: fall back to a word boundary.
        cuts = {m.end() for m in re.finditer(r"\s+", context) if 0 < m.end() < len(context)}
    if not cuts:
        return len(context) // 2
    middle = len(context) / 2
    return min(cuts, key=lambda k: (abs(k - middle), k))


def inject(context: str, attack: str, position: str) -> tuple[str, int]:
    """Insert ``attack`` into ``context`` at ``position`` (start, middle or end).

    Returns
    -------
    tuple of (str, int)
        The injected document, and the offset in ``context`` where the attack went:
        the document is ``context[:offset]``, the attack on its own line(s), then
        ``context[offset:]``.
    """
    if position == "start":
        return f"{attack}\n{context}", 0
    if position == "end":
        return f"{context}\n{attack}", len(context)
    k = _middle_offset(context)
    # At a line boundary the context already supplies the newline before the attack.
    sep = "" if context[:k].endswith("\n") else "\n"
    return f"{context[:k]}{sep}{attack}\n{context[k:]}", k


def _context_text(value: Any) -> Any:
    # Code contexts are stored as a list of lines; anything else is validated by the sink.
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return value


def _slug(category: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", category.lower()).strip("-")


def load(root: Path, *, seed: int = 0) -> LoadResult:
    """Emit clean contexts (0) and one seeded injected document per attack string (1)."""
    sink = RowSink(CARD.name, root, position=Position.DOCUMENT)
    # (kind, split) -> [(unprefixed sample id, text)] of the contexts that passed validation
    pools: dict[tuple[str, str], list[tuple[str, str]]] = {}
    attack_files: list[tuple[str, str, Path]] = []
    for path in resolve_files(CARD, root):
        if path.suffix == ".json":
            family, _, split = path.stem.split("_")
            attack_files.append((family, split, path))
            continue
        kind, split = path.parent.name, path.stem
        pool = pools.setdefault((kind, split), [])
        for lineno, row in iter_jsonl(path, sink):
            sid = f"{kind}:{split}:{lineno - 1}"
            text = _context_text(row.get("context")) if isinstance(row, dict) else None
            sample = sink.add(
                text,
                0,
                path=path,
                line=lineno,
                sample_id=sid,
                language="en",
                meta={"split": split, "kind": kind},
            )
            if sample is not None:
                pool.append((sid, sample.text))

    for family, split, path in attack_files:
        # One generator per attack file, so each file's placements depend only on the
        # seed and that file, not on the order or contents of the others.
        rng = np.random.default_rng([seed, _GROUPS.index((family, split))])
        _inject_file(sink, rng, path, family, split, pools)
    return sink.result


def _inject_file(
    sink: RowSink,
    rng: np.random.Generator,
    path: Path,
    family: str,
    split: str,
    pools: dict[tuple[str, str], list[tuple[str, str]]],
) -> None:
    """Emit one injected document per attack string of ``path``.

    Parameters
    ----------
    sink : RowSink
        Collects the documents and the refused attack strings.
    rng : numpy.random.Generator
        Draws the context kind, the context and the position of every attack string.
    path : Path
        A ``{text,code}_attack_{train,test}.json`` file.
    family, split : str
        ``text`` or ``code``; ``train`` or ``test``, parsed from the file name.
    pools : dict
        Valid clean contexts by ``(kind, split)``, as ``(sample id, text)`` pairs.
    """
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object of category -> list of attack strings.")
    items: list[tuple[int, str, int, Any]] = []  # (element index, category, j, attack)
    for category, attacks in data.items():
        if not isinstance(attacks, list):
            sink.reject(path, len(items) + 1, f"category {category!r} is not a list")
            continue
        for j, attack in enumerate(attacks):
            items.append((len(items) + 1, category, j, attack))
    # Placements are drawn for every item, valid or not, so one bad row shifts nothing.
    kinds = rng.permutation(np.resize(np.array(_TARGET_KINDS[family]), len(items)))
    positions = rng.permutation(np.resize(np.array(_POSITIONS), len(items)))
    chosen: dict[int, tuple[str, str] | None] = {}
    for kind in _TARGET_KINDS[family]:
        idx = np.flatnonzero(kinds == kind)
        pool = pools.get((kind, split), [])
        if not pool:
            chosen.update(dict.fromkeys(idx.tolist()))
            continue
        picks = rng.choice(len(pool), size=len(idx), replace=len(idx) > len(pool))
        chosen.update({int(i): pool[int(p)] for i, p in zip(idx, picks, strict=True)})
    for n, (line, category, j, attack) in enumerate(items):
        parent = chosen[n]
        if parent is None:
            sink.reject(path, line, f"no valid {kinds[n]} context in the {split} split")
            continue
        position = str(positions[n])
        text, offset = attack, 0
        if isinstance(attack, str) and attack.strip():
            text, offset = inject(parent[1], attack, position)
        # A missing, empty or non-string attack reaches the sink as is, which reports it.
        sink.add(
            text,
            1,
            path=path,
            line=line,
            parent_id=parent[0],
            language="en",
            sample_id=f"inj:{family}:{split}:{_slug(category)}:{j}",
            meta={
                "split": split,
                "category": category,
                "attack_family": family,
                "context_kind": str(kinds[n]),
                "position": position,
                "offset": offset,
                "attack": attack,
            },
        )


LOADER = Loader(CARD, load)

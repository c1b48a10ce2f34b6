"""CTIBench: benign cyber-threat-intelligence analyst requests full of attack vocabulary.

CVE descriptions, malware write-ups and APT reports talk about exploits, RCE and
C2 servers; a detector that flags vocabulary rather than intent fails on them.
Each document is also emitted alone, as a benign document: threat-intelligence
prose a tool or a retrieval step hands an agent, which asks nothing.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, RowSink, iter_csv
from gatebench.data.resolve import resolve_files
from gatebench.types import Family, Position, Role

CARD = DatasetCard(
    name="ctibench",
    title="CTIBench analyst tasks (RCM, VSP, ATE, TAA)",
    upstream="github:xashru/cti-bench",
    revision="57ce8c246e5fc66a16c6cef743f3a983831b90f0",
    files=("data/cti-rcm.tsv", "data/cti-vsp.tsv", "data/cti-ate.tsv", "data/cti-taa.tsv"),
    licence="CC BY-NC-SA 4.0 (LICENSE.txt)",
    licence_flag="non-commercial, share-alike: CTIBench is CC BY-NC-SA 4.0",
    citation=(
        "M. T. Alam, D. Bhusal, L. Nguyen, N. Rastogi. CTIBench: A Benchmark for Evaluating "
        "LLMs in Cyber Threat Intelligence. NeurIPS 2024 Datasets and Benchmarks "
        "(arXiv:2406.07599)."
    ),
    family=Family.ALL_BENIGN,
    expected_rows=(0, 3220),
    construction=(
        "Four task files, read as plain tab-separated text (no quote handling, as upstream "
        "writes them); text = `Prompt`, the full analyst request with its document embedded, "
        "label 0: rcm 1,000 (CVE -> CWE), vsp 1,000 (CVE -> CVSS vector), ate 60 (ATT&CK "
        "software description -> techniques), taa 50 (threat report -> actor) = 2,110 rows, "
        "nothing excluded. Each document is also emitted alone (`Description`, or `Text` for "
        "taa), position document, label 0, sample id `<task>:<line>:document`: once per CVE "
        "(from rcm, whose 1,000 CVEs vsp repeats) and once per ate and taa row = 1,110 "
        "documents, with the prompt that embeds it as parent. rcm and vsp ask about the same "
        "1,000 CVEs, so every row of both carries parent_id = the CVE id from `URL` and the two"
        " prompts on one CVE share a cross-validation fold; a CVE row whose URL names no CVE is"
        " reported as malformed. Twelve CVEs per file repeat another CVE's description, so "
        "their prompts are exact duplicates; they are kept and left to the trace's exact-text "
        "grouping. ate and taa rows have no parent. `GT` (the task answer) is not read. Sample "
        "id = `<task>:<line>`; task, URL, CVE and the ate `Platform` in meta. Prompts run to "
        "29k characters (taa reports); the trace chunks them. language 'en'."
    ),
    role=Role.TRAINING,
    version=2,
)

_CVE = re.compile(r"CVE-\d{4}-\d{4,}")
# Tasks whose rows are built from one shared list of CVEs.
_CVE_TASKS = {"rcm", "vsp"}
# The task whose documents are emitted alone for that shared list; and each task's column.
_DOCUMENT_TASK = "rcm"
_DOCUMENT_COLUMN = {"rcm": "Description", "ate": "Description", "taa": "Text"}


def load(root: Path, *, seed: int = 0) -> LoadResult:
    """Read each task TSV; rcm/vsp rows are grouped by the CVE their URL names.

    Every prompt is a user turn; each distinct document is also a row of its own.
    """
    sink = RowSink(CARD.name, root)
    for path in resolve_files(CARD, root):
        task = path.stem.removeprefix("cti-")
        # Upstream never quotes fields, so a quote mark opening a text must stay literal.
        for lineno, row in iter_csv(path, sink, delimiter="\t", quoting=csv.QUOTE_NONE):
            url = row.get("URL") or ""
            match = _CVE.search(url)
            if task in _CVE_TASKS and match is None:
                sink.reject(path, lineno, f"URL {url!r} names no CVE id (the rcm/vsp group key)")
                continue
            cve = match.group(0) if match else None
            prompt = sink.add(
                row.get("Prompt"),
                0,
                path=path,
                line=lineno,
                sample_id=f"{task}:{lineno}",
                parent_id=cve if task in _CVE_TASKS else None,
                language="en",
                meta={"task": task, "url": url, "cve": cve, "platform": row.get("Platform")},
            )
            if prompt is not None and (task == _DOCUMENT_TASK or task not in _CVE_TASKS):
                sink.add(
                    row.get(_DOCUMENT_COLUMN[task]),
                    0,
                    path=path,
                    line=lineno,
                    sample_id=f"{task}:{lineno}:document",
                    parent_id=cve if task in _CVE_TASKS else f"{task}:{lineno}",
                    language="en",
                    position=Position.DOCUMENT,
                    meta={"task": task, "url": url, "cve": cve, "kind": "document"},
                )
    return sink.result


LOADER = Loader(CARD, load)

"""``gatebench score|audit|tune-threshold``: a model directory over a large file, in partitions.

The commands are plain functions; :mod:`gatebench.cli` registers them on the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from gatebench.cli.options import (
    AssumePosition,
    DataDir,
    ScanRoles,
    Seed,
    SpanAdjacent,
    console,
    fail,
    fmt_pct,
    scan_policy,
)
from gatebench.errors import GatebenchError

__all__ = ["audit", "score", "tune_threshold"]

# The arguments and options that score and audit share.
BulkModel = Annotated[Path, typer.Argument(help="A model directory from `gatebench train`.")]
BulkInput = Annotated[Path, typer.Argument(help="Input .parquet or .jsonl file.")]
TextField = Annotated[str, typer.Option("--text-field", help="Column/key holding the text.")]
MessagesField = Annotated[
    str,
    typer.Option(
        "--messages-field",
        help="Column/key holding a conversation (a list of {role, content} messages); "
        "read where a row has no text.",
    ),
]
IdField = Annotated[
    str | None, typer.Option("--id-field", help="Column/key holding a row id (default: id).")
]
PositionField = Annotated[
    str | None,
    typer.Option(
        "--position-field",
        help="Column/key holding a text row's position: user, tool or document "
        "(default: position; null or absent: a user turn).",
    ),
]
BatchRows = Annotated[
    int, typer.Option("--batch-rows", help="Rows per partition (memory and unit of work).")
]
BulkBackend = Annotated[str, typer.Option("--backend", help="local or dask.")]
BulkScheduler = Annotated[
    str | None,
    typer.Option("--scheduler", help="dask scheduler tcp://HOST:PORT (or $GATEBENCH_SCHEDULER)."),
]
BulkJobs = Annotated[
    int | None, typer.Option("--jobs", help="Local processes / local dask workers.")
]
# What tune-threshold and adapt share: the bound on a sample of benign traffic.
TargetFpr = Annotated[float, typer.Option("--target-fpr", help="Bound on the FPR of this traffic.")]
Confidence = Annotated[
    float, typer.Option("--confidence", help="Confidence of the one-sided exact bound.")
]


def reading_options(
    text_field: str,
    messages_field: str,
    id_field: str | None,
    position_field: str | None,
    assume_position: str | None,
    batch_rows: int,
    backend: str,
    scheduler: str | None,
    jobs: int | None,
    scan_roles: str,
    span_adjacent: bool,
) -> dict[str, Any]:
    """How score, audit and tune-threshold read, split and scan a file, and where they score it."""
    from gatebench.parallel import Executor

    return {
        "text_field": text_field,
        "messages_field": messages_field,
        "id_field": id_field,
        "position_field": position_field,
        "assume_position": assume_position or "user",
        "batch_rows": batch_rows,
        "executor": Executor(backend, jobs, scheduler),
        "policy": scan_policy(scan_roles, span_adjacent),
    }


def _print_bulk(summary: dict[str, Any], where: Path) -> None:
    t = summary["timing"]
    console.print(
        f"{summary['rows_read']:,} rows read, {summary['rows_scored']:,} scored, "
        f"{summary['rows_rejected']:,} rejected in {t.get('total_s', t['wall_s']):.1f} s "
        f"({summary['executor']}, {summary['partitions']} partitions)",
        highlight=False,
    )
    placed = summary["text_positions"]
    if any(n for p, n in placed.items() if p != "user"):
        console.print(
            "text rows by position: " + ", ".join(f"{p} {n:,}" for p, n in placed.items()),
            highlight=False,
        )
    conv = summary["conversations"]
    if conv["rows"]:
        skipped = conv["messages_skipped"]
        console.print(
            f"conversations: {conv['rows']:,} rows, {conv['messages_scanned']:,} messages "
            f"scanned ({', '.join(summary['scan_policy']['roles'])}), "
            f"{skipped['role'] + skipped['empty']:,} skipped, "
            f"{conv['ignored_parts']:,} parts without text ignored",
            highlight=False,
        )
    if summary["rows_rejected"]:
        reasons = ", ".join(f"{k} {v:,}" for k, v in summary["rejected_by_reason"].items() if v)
        console.print(
            f"[yellow]rejected rows[/] ({reasons}) keep their place in the output with a "
            "`rejected` reason; the first ones are listed in the summary",
            highlight=False,
        )
    if summary["flagged"] is not None:
        console.print(
            f"flagged {summary['flagged']:,} ({fmt_pct(summary['flagged_share'])}) at threshold "
            f"{summary['model']['threshold']:.4f}",
            highlight=False,
        )
    console.print(f"written: {where}", highlight=False)


def score(
    model_dir: BulkModel,
    input_path: BulkInput,
    out: Annotated[Path, typer.Option("--out", help="Output .parquet (scores and decisions).")],
    text_field: TextField = "text",
    messages_field: MessagesField = "messages",
    id_field: IdField = None,
    position_field: PositionField = None,
    assume_position: AssumePosition = None,
    batch_rows: BatchRows = 10_000,
    backend: BulkBackend = "local",
    scheduler: BulkScheduler = None,
    jobs: BulkJobs = None,
    scan_roles: ScanRoles = "user,tool,document",
    span_adjacent: SpanAdjacent = True,
) -> None:
    """Score a file of texts or conversations in partitions; writes OUT and OUT.summary.json."""
    from gatebench.bulk import score_file
    from gatebench.bulk.io import summary_path

    try:
        summary = score_file(
            model_dir,
            input_path,
            out,
            **reading_options(text_field, messages_field, id_field, position_field, assume_position,
                       batch_rows, backend, scheduler, jobs, scan_roles, span_adjacent),
        )  # fmt: skip
    except GatebenchError as exc:
        fail(exc)
    _print_bulk(summary, out)
    console.print(f"summary: {summary_path(out)}", highlight=False)


def audit(
    model_dir: BulkModel,
    input_path: BulkInput,
    out: Annotated[Path, typer.Option("--out", help="Output directory.")],
    text_field: TextField = "text",
    messages_field: MessagesField = "messages",
    id_field: IdField = None,
    position_field: PositionField = None,
    assume_position: AssumePosition = None,
    batch_rows: BatchRows = 10_000,
    backend: BulkBackend = "local",
    scheduler: BulkScheduler = None,
    jobs: BulkJobs = None,
    seed: Seed = None,
    scan_roles: ScanRoles = "user,tool,document",
    span_adjacent: SpanAdjacent = True,
) -> None:
    """Score a large file and cluster its near-duplicates (MinHash-LSH) with score spread."""
    from gatebench.bulk import audit_file
    from gatebench.config import RunConfig

    try:
        summary = audit_file(
            model_dir,
            input_path,
            out,
            **reading_options(text_field, messages_field, id_field, position_field, assume_position,
                       batch_rows, backend, scheduler, jobs, scan_roles, span_adjacent),
            seed=RunConfig().seed if seed is None else seed,
        )  # fmt: skip
    except GatebenchError as exc:
        fail(exc)
    _print_bulk(summary, out)
    c = summary["clustering"]
    console.print(
        f"near-duplicates: {c['clusters_size_ge2']:,} clusters of ≥ 2 rows hold "
        f"{c['rows_in_clusters_size_ge2']:,} rows; largest {c['largest_cluster']:,}; "
        f"{c['clusters_with_mixed_decisions']:,} clusters with mixed decisions",
        highlight=False,
    )
    if not c["largest_clusters"]:
        return
    table = Table(title="largest clusters")
    for col in ("cluster", "size", "distinct", "first id", "mean", "min", "max", "flagged"):
        table.add_column(col)
    for r in c["largest_clusters"]:
        stats = ("score_mean", "score_min", "score_max")
        cells = ["" if r[k] is None else f"{r[k]:.3f}" for k in stats]
        share = "" if r["flagged_share"] is None else fmt_pct(r["flagged_share"])
        table.add_row(
            str(r["cluster"]),
            str(r["size"]),
            str(r["distinct_texts"]),
            str(r["first_id"]),
            *cells,
            share,
        )
    console.print(table)


def tune_threshold(
    model_dir: BulkModel,
    benign_path: Annotated[
        Path, typer.Argument(help="Benign traffic: .parquet or .jsonl texts or conversations.")
    ],
    out: Annotated[Path, typer.Option("--out", help="The new model directory.")],
    target_fpr: TargetFpr = 0.01,
    confidence: Confidence = 0.95,
    attacks: Annotated[
        Path | None,
        typer.Option(
            "--attacks",
            help="A file of attacks, read like the sample: recall at both thresholds "
            "(it does not move the threshold).",
        ),
    ] = None,
    keep_overlap: Annotated[
        bool,
        typer.Option(
            "--keep-overlap",
            help="Use rows the model was trained on too (by default they are set aside: "
            "the model's training trace is rebuilt and matched).",
        ),
    ] = False,
    data_dir: DataDir = None,
    text_field: TextField = "text",
    messages_field: MessagesField = "messages",
    id_field: IdField = None,
    position_field: PositionField = None,
    assume_position: AssumePosition = None,
    batch_rows: BatchRows = 10_000,
    backend: BulkBackend = "local",
    scheduler: BulkScheduler = None,
    jobs: BulkJobs = None,
    scan_roles: ScanRoles = "user,tool,document",
    span_adjacent: SpanAdjacent = True,
) -> None:
    """Re-pick a model's threshold on a sample of your benign traffic; writes a new model dir."""
    from gatebench.bulk.retune import tune_threshold as tune

    try:
        record = tune(
            model_dir,
            benign_path,
            out,
            target_fpr=target_fpr,
            confidence=confidence,
            **reading_options(text_field, messages_field, id_field, position_field, assume_position,
                       batch_rows, backend, scheduler, jobs, scan_roles, span_adjacent),
            attacks_path=attacks,
            keep_overlap=keep_overlap,
            data_dir=data_dir,
        )  # fmt: skip
    except GatebenchError as exc:
        fail(exc)
    _print_tuned(record, out)


def bound_cells(bound: dict[str, Any]) -> list[str]:
    """A threshold's table cells: the threshold, prompts flagged, FPR and its upper bound."""
    return [
        f"{bound['threshold']:.4f}", f"{bound['flagged']:,} of {bound['n']:,}",
        fmt_pct(bound["fpr"]), fmt_pct(bound["fpr_upper"]),
    ]  # fmt: skip


def _print_tuned(record: dict[str, Any], out: Path) -> None:
    """The sample's counts, and the FPR (and recall) at the previous and the chosen threshold."""
    aside = (
        f", {record['rows_trained_on']:,} set aside as trained on"
        if record["overlap"]["checked"]
        else " (not checked for rows the model was trained on)"
    )
    console.print(
        f"{record['rows_read']:,} rows read, {record['rows_scored']:,} benign prompts scored, "
        f"{record['rows_rejected']:,} rejected{aside} (counted in the manifest)",
        highlight=False,
    )
    level = f"{100 * record['confidence']:g}%"
    table = Table(title=f"FPR on this traffic (upper bound at {level} confidence)")
    hit = record.get("attacks")
    cols = ["", "threshold", "flagged", "FPR", "upper bound"]
    for col in cols + (["attacks caught", "recall [95% CI]"] if hit else []):
        table.add_column(col)
    for name in ("previous", "chosen"):
        cells = [name, *bound_cells(record[name])]
        if hit:
            r = hit[name]
            cells += [
                f"{r['caught']:,} of {r['n']:,}",
                f"{fmt_pct(r['recall'])} [{fmt_pct(r['low'])}, {fmt_pct(r['high'])}]",
            ]
        table.add_row(*cells)
    console.print(table)
    baseline, before = record["previous"].get("shipped_fpr"), record["previous"]
    if baseline:
        console.print(
            f"the previous threshold was measured at {fmt_pct(baseline['value'])} "
            f"({baseline['measured_on']}); this traffic: {fmt_pct(before['fpr'])}, upper "
            f"bound {fmt_pct(before['fpr_upper'])}",
            highlight=False,
        )
    if hit and (hit["rows_rejected"] or hit["rows_trained_on"]):
        console.print(
            f"attacks: {hit['rows_rejected']:,} of {hit['rows_read']:,} rows rejected, "
            f"{hit['rows_trained_on']:,} set aside as trained on (counted in the manifest)",
            highlight=False,
        )
    console.print(
        f"written: {out} (target FPR {record['target_fpr']:g})"
        + ("" if hit else "; recall at the new threshold: --attacks FILE, or "
           f"gatebench evaluate {out} DATA --out DIR"),
        highlight=False,
    )  # fmt: skip

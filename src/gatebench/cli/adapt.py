"""``gatebench adapt``: a model refitted on part of your benign traffic, tuned on the rest.

The command is a plain function; :mod:`gatebench.cli` registers it on the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from gatebench.cli.bulk import (
    BatchRows,
    BulkBackend,
    BulkJobs,
    BulkModel,
    BulkScheduler,
    Confidence,
    IdField,
    MessagesField,
    PositionField,
    TargetFpr,
    TextField,
    bound_cells,
    reading_options,
)
from gatebench.cli.options import (
    AssumePosition,
    DataDir,
    ScanRoles,
    SpanAdjacent,
    console,
    fail,
    fmt_pct,
)
from gatebench.errors import GatebenchError

__all__ = ["adapt"]


def adapt(
    model_dir: BulkModel,
    benign_path: Annotated[
        Path, typer.Argument(help="Benign traffic: .parquet or .jsonl texts or conversations.")
    ],
    out: Annotated[Path, typer.Option("--out", help="The new model directory.")],
    train_share: Annotated[
        float,
        typer.Option(
            "--train-share",
            help="Share of the sample to train on (whole near-duplicate clusters); the rest "
            "picks the threshold.",
        ),
    ] = 0.5,
    target_fpr: TargetFpr = 0.01,
    confidence: Confidence = 0.95,
    split_dir: Annotated[
        Path | None,
        typer.Option(
            "--split-dir",
            help="Where the two parts are written (default: OUT.traffic beside OUT); the new "
            "model's manifest records the training part's path.",
        ),
    ] = None,
    attacks: Annotated[
        Path | None,
        typer.Option(
            "--attacks",
            help="A file of attacks, read like the sample: recall of both models at their "
            "thresholds (it moves no threshold).",
        ),
    ] = None,
    train_attacks: Annotated[
        bool,
        typer.Option(
            "--train-attacks",
            help="Also train on part of --attacks (the same share, whole clusters), "
            "labelled attack; recall is read on the rest.",
        ),
    ] = False,
    split_draw: Annotated[
        int,
        typer.Option(
            "--split-draw",
            help="Which seeded split of the sample's clusters: 0 is the model's own; another "
            "number draws another split, to check a gain on a second draw.",
        ),
    ] = 0,
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
    """Refit a model with part of your benign traffic and re-pick its threshold on the rest."""
    from gatebench.bulk.adapt import adapt as run_adapt

    options = reading_options(text_field, messages_field, id_field, position_field, assume_position,
                       batch_rows, backend, scheduler, jobs, scan_roles, span_adjacent)  # fmt: skip
    try:
        result = run_adapt(
            model_dir, benign_path, out, train_share=train_share, target_fpr=target_fpr,
            confidence=confidence, split_dir=split_dir, attacks_path=attacks,
            train_attacks=train_attacks, split_draw=split_draw, n_jobs=jobs,
            data_dir=data_dir, **options,
        )  # fmt: skip
    except GatebenchError as exc:
        fail(exc)
    _print_adapted(result, out)


def _print_adapted(result: dict[str, Any], out: Path) -> None:
    """The split, then FPR (and recall) of the first model and of the new one at both thresholds."""
    a, t = result["adapted"], result["traffic_threshold"]
    console.print(
        f"{a['rows_read']:,} rows read, {a['rows_rejected']:,} rejected (counted in the "
        f"manifest); {a['clusters']:,} near-duplicate clusters: {a['rows_trained_on']:,} rows "
        f"trained on ({a['train']['path']}), {a['tune']['rows']:,} to tune on "
        f"({a['tune']['path']})",
        highlight=False,
    )
    if "attacks" in a:
        k = a["attacks"]
        console.print(
            f"attacks: {k['rows_read']:,} rows read, {k['rows_rejected']:,} rejected; "
            f"{k['rows_trained_on']:,} trained on, {k['held']['rows']:,} kept out for recall",
            highlight=False,
        )
    first = a["first_model"]
    level = f"{100 * t['confidence']:g}%"
    table = Table(title=f"FPR on the tuning part (upper bound at {level} confidence)")
    hit = t.get("attacks")
    cols = ["model", "threshold", "flagged", "FPR", "upper bound"]
    for col in cols + (["recall [95% CI]"] if hit else []):
        table.add_column(col)
    rows = [("first model", first["tune"], first.get("attacks")),
            ("refitted, its own threshold", t["previous"], hit and hit["previous"]),
            ("refitted, tuned threshold", t["chosen"], hit and hit["chosen"])]  # fmt: skip
    for name, b, r in rows:
        cells = [name, *bound_cells(b)]
        if hit:
            cells.append(f"{fmt_pct(r['recall'])} [{fmt_pct(r['low'])}, {fmt_pct(r['high'])}]")
        table.add_row(*cells)
    console.print(table)
    console.print(f"written: {out} (target FPR {t['target_fpr']:g})", highlight=False)

"""``gatebench evaluate``: a shipped model (or a detector fitted on the trace) on never-seen sets.

The command is a plain function; :mod:`gatebench.cli` registers it on the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from gatebench.cli.options import (
    AssumeLabel,
    AssumePosition,
    Caps,
    DataDir,
    FilePositionField,
    GroupField,
    IdField,
    LabelField,
    LabelMap,
    Seed,
    SourceName,
    TextField,
    console,
    fail,
    file_options,
    fmt_pct,
    parse_caps,
    print_note,
)
from gatebench.errors import ConfigError, GatebenchError

if TYPE_CHECKING:
    from gatebench.unseen.result import UnseenResult

__all__ = ["evaluate"]


def evaluate(
    args: Annotated[
        list[str],
        typer.Argument(
            metavar="[MODEL_DIR] DATA",
            help="MODEL_DIR then DATA (registered sources, presets or paths to your files); "
            "with --detector, DATA only.",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Output directory (result.json, report).")],
    detector: Annotated[
        str | None,
        typer.Option("--detector", "-d", help="Fit this detector on the trace, then evaluate."),
    ] = None,
    keep_overlap: Annotated[
        bool,
        typer.Option("--keep-overlap", help="Score prompts the training trace already holds."),
    ] = False,
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples B.")] = 2000,
    caps: Caps = None,
    data_dir: DataDir = None,
    seed: Seed = None,
    text_field: TextField = None,
    label_field: LabelField = None,
    id_field: IdField = None,
    group_field: GroupField = None,
    position_field: FilePositionField = None,
    assume_position: AssumePosition = None,
    label_map: LabelMap = None,
    assume_label: AssumeLabel = None,
    source_name: SourceName = None,
) -> None:
    """Score a model at its shipped threshold on sets it never trained on; write OUT."""
    from gatebench.config import RunConfig
    from gatebench.data.local import FileOptions
    from gatebench.report.unseen import render_unseen
    from gatebench.unseen import evaluate_model

    try:
        model_dir, data = _split_args(args, detector)
        files = FileOptions(
            **file_options(
                text_field, label_field, id_field, group_field, label_map, assume_label, source_name
            ),
            position_field=position_field,
            assume_position=assume_position,
        )
        root = RunConfig().seed if seed is None else seed
        if detector is not None:
            # Kept beside the result, so the figures trace back to the exact model and run.
            model_dir = _fit(detector, data_dir, root, out / "fitted")
        result = evaluate_model(
            model_dir,
            data,
            out=out,
            data_dir=data_dir,
            caps=parse_caps(caps),
            files=files,
            keep_overlap=keep_overlap,
            seed=root,
            n_resamples=bootstrap,
        )
        report = render_unseen(out, result)
    except GatebenchError as exc:
        fail(exc)
    _print(result, out)
    console.print(f"report: {report}", highlight=False)


def _split_args(args: list[str], detector: str | None) -> tuple[Path, list[str]]:
    if detector is not None:
        if not args:
            raise ConfigError("give the sets to evaluate on: gatebench evaluate -d NAME DATA...")
        return Path(), list(args)
    if len(args) < 2:
        raise ConfigError(
            "give a model directory and at least one set: gatebench evaluate MODEL_DIR DATA... "
            "(or --detector NAME DATA... to fit one on the trace first)"
        )
    return Path(args[0]), list(args[1:])


def _fit(detector: str, data_dir: Path | None, seed: int, where: Path) -> Path:
    """Train ``detector`` on the configured trace; its model and evaluation run go to ``where``.

    It ships at the headline point, so the never-seen figures sit beside the
    in-distribution ones of the run that chose the threshold.
    """
    from gatebench import api
    from gatebench.config import load_config

    config = load_config(
        None, detector=detector, data_dir=data_dir, seed=seed, runs_dir=where / "runs"
    )
    return api.train(config, where / "model", operating_point="headline")


def _print(r: UnseenResult, out: Path) -> None:
    table = Table(title=f"{r.model.detector.get('name')} at θ = {r.model.threshold:.4f} (95% CI)")
    table.add_column("side", no_wrap=True)
    for col in ("n", "recall", "FPR", "F1", "AUC"):
        table.add_column(col)
    for label, rates in (("in distribution", r.in_distribution), ("never seen", r.pooled)):
        if rates is None:
            continue
        cells = []
        for m in ("recall", "fpr", "f1", "auc"):
            ci = rates.ci.get(m)
            band = f" [{fmt_pct(ci.low)}, {fmt_pct(ci.high)}]" if ci is not None else ""
            cells.append(fmt_pct(getattr(rates, m)) + band)
        table.add_row(label, f"{rates.n:,}", *cells)
    console.print(table)
    if r.overlap.checked:
        console.print(
            f"set aside {r.overlap.prompts} prompt{'s' if r.overlap.prompts != 1 else ''} "
            "the training trace already holds",
            highlight=False,
        )
    _print_positions(r)
    print_note(r.refused_note(str(out / "manifest.json")))
    _print_nearest(r)


def _print_positions(r: UnseenResult) -> None:
    """Recall and FPR by position, when some rows were read as tool results or documents.

    A position with too few prompts for rates is named with its count.
    """
    placed = [row.position for row in r.by_position] + list(r.by_position_skipped)
    if all(position == "user" for position in placed):
        return
    parts = []
    for row in r.by_position:
        rates = [
            f"{name} {fmt_pct(value)}"
            for name, value in (("recall", row.recall), ("FPR", row.fpr))
            if value is not None
        ]
        parts.append(f"{row.position} {row.n:,} ({', '.join(rates)})")
    parts += [f"{p} {n:,} (too few to rate)" for p, n in r.by_position_skipped.items()]
    console.print("by position: " + "; ".join(parts), highlight=False)


#: Training sources listed per kind of error (the report lists them all).
NEAREST_SHOWN = 3


def _print_nearest(r: UnseenResult) -> None:
    """Per kind of error, the training sources it sits next to most often."""
    for outcome in ("false alarm", "missed attack"):
        rows = [n for n in r.nearest if n.outcome == outcome][:NEAREST_SHOWN]
        if rows:
            beside = ", ".join(f"{n.source} {fmt_pct(n.share)}" for n in rows)
            console.print(
                f"{outcome}s sit next to {rows[0].nearest} training rows of: {beside}",
                highlight=False,
            )

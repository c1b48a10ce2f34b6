"""``gatebench run|train|compare|diagnose|report``: evaluate a detector and read the results.

The commands are plain functions; :mod:`gatebench.cli` registers them on the app.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from gatebench.cli.options import (
    AsJson,
    AssumeLabel,
    AssumePosition,
    Caps,
    DataDir,
    Documents,
    Embedded,
    EmbeddedPayloads,
    FilePositionField,
    GroupField,
    IdField,
    LabelField,
    LabelMap,
    Param,
    PersonaHalves,
    PersonaTwins,
    QuoteTwins,
    Roles,
    Seed,
    SkipMissing,
    SourceName,
    Sources,
    TextField,
    Twins,
    console,
    fail,
    file_options,
    fmt_pct,
    parse_caps,
    parse_roles,
    print_note,
)
from gatebench.config import UNSEEN_FPR, UNSEEN_HOLDOUT
from gatebench.errors import GatebenchError

__all__ = ["compare", "diagnose", "report", "run", "train"]


def run(
    detector: Annotated[
        str | None, typer.Option("--detector", "-d", help="Registered detector.")
    ] = None,
    param: Param = None,
    sources: Sources = None,
    text_field: TextField = None,
    label_field: LabelField = None,
    id_field: IdField = None,
    group_field: GroupField = None,
    position_field: FilePositionField = None,
    assume_position: AssumePosition = None,
    label_map: LabelMap = None,
    assume_label: AssumeLabel = None,
    source_name: SourceName = None,
    caps: Caps = None,
    roles: Roles = None,
    embedded: Embedded = None,
    embedded_payloads: EmbeddedPayloads = None,
    twins: Twins = None,
    persona_twins: PersonaTwins = None,
    persona_halves: PersonaHalves = None,
    quote_twins: QuoteTwins = None,
    documents: Documents = None,
    skip_missing: SkipMissing = False,
    data_dir: DataDir = None,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="A trace folder from `trace build --out`.")
    ] = None,
    fpr: Annotated[
        float | None, typer.Option("--fpr", help="τ: FPR cap of the headline point.")
    ] = None,
    seed: Seed = None,
    folds: Annotated[int | None, typer.Option("--folds", help="K for both CV passes.")] = None,
    bootstrap: Annotated[
        int | None, typer.Option("--bootstrap", help="Bootstrap resamples B.")
    ] = None,
    no_sgk: Annotated[
        bool, typer.Option("--no-sgk", help="Skip the grouped leakage pass.")
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Run directory (resumes if it exists).")
    ] = None,
    backend: Annotated[
        str | None, typer.Option("--backend", help="local, sequential or dask.")
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", help="dask scheduler tcp://HOST:PORT.")
    ] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", help="Local worker processes.")] = None,
    config: Annotated[
        Path | None,
        # Help texts are rich markup: unescaped, "[run]" would be read as a tag and vanish.
        typer.Option("--config", help=r"TOML file with a \[run] table."),
    ] = None,
    diagnostics: Annotated[
        str | None,
        typer.Option("--diagnostics", help="Diagnostics tier: none, cheap (default) or all."),
    ] = None,
) -> None:
    """Evaluate a detector: both CV passes, operating point, metrics with CIs."""
    from gatebench import api
    from gatebench.config import load_config
    from gatebench.progress import RichProgress

    try:
        cfg = load_config(
            config,
            detector=detector,
            detector_params=_parse_params(param),
            sources=tuple(sources) if sources else None,
            **file_options(
                text_field, label_field, id_field, group_field, label_map, assume_label, source_name
            ),
            position_field=position_field,
            assume_position=assume_position,
            caps=parse_caps(caps) or None,
            roles=parse_roles(roles) or None,
            embedded=embedded,
            embedded_payloads=embedded_payloads,
            twins=twins,
            persona_twins=persona_twins,
            persona_halves=persona_halves,
            quote_twins=quote_twins,
            documents=documents,
            skip_missing=skip_missing or None,
            data_dir=data_dir,
            trace_dir=trace,
            fpr=fpr,
            seed=seed,
            folds=folds,
            bootstrap=bootstrap,
            out=out,
            backend=backend,
            scheduler=scheduler,
            n_jobs=jobs,
            passes=("strat",) if no_sgk else None,
            diagnostics=diagnostics,
        )
        with RichProgress() as progress:
            run_dir = api.evaluate(cfg, progress=progress, executor=cfg.executor())
    except GatebenchError as exc:
        fail(exc)
    _print_result(run_dir)
    _render(run_dir, None)


def _parse_params(params: list[str] | None) -> dict[str, Any] | None:
    from gatebench.errors import ConfigError

    out: dict[str, Any] = {}
    for item in params or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--param {item!r} is not KEY=VALUE; write e.g. --param C=2.0")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out or None


def _print_result(run_dir: Path) -> None:
    from gatebench.artifacts import read_result

    result = read_result(run_dir)
    op = result.operating_point
    console.print(f"[bold]run directory[/] {run_dir}")
    console.print(
        f"operating point θ_op = {op.threshold:.4f} (max F1 s.t. pooled FPR ≤ "
        f"{fmt_pct(op.target_fpr)}; achieved FPR {fmt_pct(op.fpr)})"
    )
    trace = result.trace
    scored = trace.roles.get("evaluation", {}).get("prompts", trace.n_prompts)
    table = Table(title=f"headline ({scored:,} scored prompts, 95% CI)")
    for col in ("point", "aggregate", "F1", "precision", "recall", "FPR"):
        table.add_column(col)
    for name in ("headline", "natural"):
        m = result.metrics[name]
        ci = m.micro.ci
        cells = [
            f"{fmt_pct(m.micro.get(k))} [{fmt_pct(ci[k].low)}, {fmt_pct(ci[k].high)}]"
            for k in ("f1", "precision", "recall", "fpr")
        ]
        table.add_row(f"{name} θ={m.threshold:.3f}", "micro", *cells)
        mci = m.macro.ci["f1"]
        table.add_row(
            "",
            "macro",
            f"{fmt_pct(m.macro.f1)} [{fmt_pct(mci.low)}, {fmt_pct(mci.high)}]",
            fmt_pct(m.macro.get("precision")),
            fmt_pct(m.macro.get("recall")),
            fmt_pct(m.macro.fpr),
        )
    console.print(table)
    delta = result.leakage.delta_f1_headline
    if delta is not None:
        console.print(
            f"leakage premium ΔF1 (strat − grouped) at the headline point: {100 * delta:+.2f} pp"
        )
    note = result.groups.get("note", "")
    console.print(f"groups: {note}", soft_wrap=True, highlight=False)
    _print_refused(run_dir / "trace_info.json")


def _print_refused(path: Path) -> None:
    """Name the input rows the trace refused, if any (``trace_info.json`` lists them all)."""
    from gatebench.trace_info import refused_note

    if path.is_file():
        info = json.loads(path.read_text(encoding="utf-8"))
        print_note(refused_note(info.get("malformed_rows", []), str(path)))


def train(
    model_dir: Annotated[Path, typer.Argument(help="Where to write the model directory.")],
    detector: Annotated[
        str | None, typer.Option("--detector", "-d", help="Registered detector.")
    ] = None,
    run_dir: Annotated[
        Path | None,
        typer.Option("--run", help="Take the headline operating point from this run."),
    ] = None,
    operating_point: Annotated[
        str | None,
        typer.Option(
            "--operating-point",
            help="Where the shipped threshold comes from: 'unseen' (folds that hold whole "
            "sources out; the default without --run) or 'headline' (the run's "
            "pooled StratifiedKFold point; the default with --run).",
        ),
    ] = None,
    unseen_fpr: Annotated[
        float,
        typer.Option(
            "--unseen-fpr",
            help="With the unseen point: bound on the mean FPR over held-out benign sources.",
        ),
    ] = UNSEEN_FPR,
    unseen_holdout: Annotated[
        str,
        typer.Option(
            "--unseen-holdout",
            help="With the unseen point: which sources its folds hold out whole, 'all' "
            "(training corpora too) or 'evaluation'.",
        ),
    ] = UNSEEN_HOLDOUT,
    param: Param = None,
    sources: Sources = None,
    text_field: TextField = None,
    label_field: LabelField = None,
    id_field: IdField = None,
    group_field: GroupField = None,
    position_field: FilePositionField = None,
    assume_position: AssumePosition = None,
    label_map: LabelMap = None,
    assume_label: AssumeLabel = None,
    source_name: SourceName = None,
    caps: Caps = None,
    roles: Roles = None,
    embedded: Embedded = None,
    embedded_payloads: EmbeddedPayloads = None,
    twins: Twins = None,
    persona_twins: PersonaTwins = None,
    persona_halves: PersonaHalves = None,
    quote_twins: QuoteTwins = None,
    documents: Documents = None,
    data_dir: DataDir = None,
    fpr: Annotated[float | None, typer.Option("--fpr", help="τ when a run is made first.")] = None,
    seed: Seed = None,
    holdout: Annotated[
        float,
        typer.Option(
            "--holdout",
            help="Keep this share of prompts out of the fit and write them to "
            "MODEL_DIR/holdout.jsonl (unseen texts for `bench latency`).",
        ),
    ] = 0.0,
) -> None:
    """Fit on the whole trace and write a model directory with its operating point."""
    from gatebench import api
    from gatebench.config import load_config
    from gatebench.modeldir import MANIFEST
    from gatebench.trace_info import refused_note

    try:
        cfg = load_config(
            None,
            detector=detector,
            detector_params=_parse_params(param),
            sources=tuple(sources) if sources else None,
            **file_options(
                text_field, label_field, id_field, group_field, label_map, assume_label, source_name
            ),
            position_field=position_field,
            assume_position=assume_position,
            caps=parse_caps(caps) or None,
            roles=parse_roles(roles) or None,
            embedded=embedded,
            embedded_payloads=embedded_payloads,
            twins=twins,
            persona_twins=persona_twins,
            persona_halves=persona_halves,
            quote_twins=quote_twins,
            documents=documents,
            data_dir=data_dir,
            fpr=fpr,
            seed=seed,
        )
        out = api.train(
            cfg, model_dir, run_dir=run_dir, holdout=holdout, operating_point=operating_point,
            unseen_fpr=unseen_fpr, unseen_holdout=unseen_holdout,
        )  # fmt: skip
    except GatebenchError as exc:
        fail(exc)
    console.print(f"model directory written: {out}")
    meta = json.loads((out / MANIFEST).read_text())
    refused = meta.get("refused_rows", {})
    print_note(refused_note(refused.get("first", []), str(out / MANIFEST), refused.get("rows")))
    op = meta["operating_point"]
    if "mean_fpr" in op:
        n_benign = sum(v["averaged"] for v in op["per_source"].values())
        kind = "evaluation sources" if op.get("holdout") == "evaluation" else "sources"
        console.print(
            f"threshold {op['threshold']:.4f}: on {kind} held out whole, mean FPR "
            f"{fmt_pct(op['mean_fpr'])} over {n_benign} benign sources (bound "
            f"{fmt_pct(op['target_fpr'])}), attack recall {fmt_pct(op['pooled_recall'])}",
            highlight=False,
        )


def compare(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories on the same trace.")],
    published: Annotated[
        Path | None,
        typer.Option("--published", help="competitors.csv (default: $GATEBENCH_PUBLISHED)."),
    ] = None,
    reference: Annotated[int, typer.Option("--reference", help="Index of the reference run.")] = 0,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", help="Paired bootstrap resamples.")
    ] = 2000,
) -> None:
    """Several runs of one trace in one leaderboard, with paired CIs of the difference."""
    from gatebench.compare import compare_runs, format_compare

    try:
        res = compare_runs(
            run_dirs, reference=reference, published=published, n_resamples=bootstrap
        )
    except GatebenchError as exc:
        fail(exc)
    # markup=False: rich would read "[low, high]" intervals as markup tags.
    console.print(format_compare(res), markup=False, highlight=False, soft_wrap=True)


_STATUS_STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "NOT_APPLICABLE": "dim"}


def diagnose(
    run_dir: Annotated[Path, typer.Argument(help="A run directory from `gatebench run`.")],
    as_json: AsJson = False,
    reasons: Annotated[bool, typer.Option("--reasons", help="Add each check's reason.")] = False,
) -> None:
    """The diagnostics recorded in RUN_DIR/result.json: one row per check."""
    from gatebench.artifacts import read_result
    from gatebench.diagnostics.report import diagnose_rows

    try:
        rows = diagnose_rows(read_result(run_dir).diagnostics)
    except GatebenchError as exc:
        fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    if not rows:
        console.print("no diagnostics recorded (the run used --diagnostics none)")
        return
    table = Table(title=f"diagnostics: {run_dir.name}")
    columns = ["check", "tier", "status", "statistic", "criterion"]
    columns += ["reason"] if reasons else []
    for col in columns:
        table.add_column(col, overflow="fold", no_wrap=col in ("check", "status"))
    for r in rows:
        style = _STATUS_STYLE.get(r["status"], "")
        cells = [r["name"], r["tier"], f"[{style}]{r['status']}[/]", r["statistic"], r["criterion"]]
        table.add_row(*cells, *([r["reason"]] if reasons else []))
    console.print(table)


def _render(run_dir: Path, out: Path | None) -> None:
    from gatebench.report import report_command

    try:
        html = report_command(run_dir, out)
    except GatebenchError as exc:
        fail(exc)
    console.print(f"report: {html}")


def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory from `gatebench run`.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="HTML path (default RUN_DIR/report.html).")
    ] = None,
) -> None:
    """Render the self-contained HTML report (and result.md, figures) from a run directory."""
    _render(run_dir, out)

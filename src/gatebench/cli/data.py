"""``gatebench data list|show`` and ``gatebench trace build``: what goes into an evaluation."""

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
    FilePositionField,
    GroupField,
    IdField,
    LabelField,
    LabelMap,
    Roles,
    Seed,
    SkipMissing,
    SourceName,
    Sources,
    TextField,
    console,
    fail,
    file_options,
    fmt_count,
    parse_caps,
    parse_roles,
)
from gatebench.errors import GatebenchError

__all__ = ["data_app", "trace_app"]

data_app = typer.Typer(help="Benchmark sources: list and inspect.", no_args_is_help=True)
trace_app = typer.Typer(help="Build and inspect the evaluation trace.", no_args_is_help=True)


@data_app.command("list")
def data_list(
    data_dir: DataDir = None,
    as_json: AsJson = False,
) -> None:
    """One row per registered source: role, family, rows by label, licence, availability."""
    from gatebench.data import catalog

    try:
        rows = catalog.list_sources(data_dir=data_dir)
    except GatebenchError as exc:
        fail(exc)
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(title="gatebench sources", show_lines=False)
    for col in (
        "source",
        "role",
        "paper",
        "family",
        "primary",
        "attack",
        "benign",
        "cap",
        "licence",
        "status",
    ):
        table.add_column(col, overflow="fold", no_wrap=col == "source")
    for r in rows:
        # Full licence texts are long; `data show` and --json carry them whole.
        licence = r["licence"].split(";")[0].split(" (")[0][:24]
        if r["licence_flag"]:
            licence += " [yellow]FLAG[/]"
        status = "[green]available[/]" if r["available"] else "[red]missing[/]"
        table.add_row(
            r["name"],
            r["role"],
            "yes" if r["paper_benchmark"] else "",
            r["family"],
            r["primary_metric"],
            fmt_count(r["attack"]),
            fmt_count(r["benign"]),
            fmt_count(r["default_cap"]),
            licence,
            status,
        )
    console.print(table)


@data_app.command("show")
def data_show(name: str, data_dir: DataDir = None) -> None:
    """Everything about one source: its card, where its files are, sample rows."""
    from gatebench.data import catalog

    try:
        info = catalog.show_source(name, data_dir=data_dir)
    except GatebenchError as exc:
        fail(exc)
    card = info["card"]
    console.print(f"[bold]{card['title']}[/] ({card['name']})")
    for key in (
        "upstream",
        "revision",
        "licence",
        "licence_flag",
        "family",
        "primary_metric",
        "default_cap",
        "paper_benchmark",
        "citation",
        "construction",
    ):
        console.print(f"  [cyan]{key}[/]: {card[key]}", soft_wrap=True, highlight=False)
    console.print(f"  [cyan]root[/]: {info['root'] or 'not available: ' + info['missing']}")
    if info["counts"]:
        console.print(f"  [cyan]rows[/]: {info['counts']}  malformed: {info['malformed']}")
    for sample in info["examples"]:
        line = f"  - [{sample['label']}] {sample['text'][:160]!r}"
        console.print(line, markup=False, highlight=False)


@trace_app.command("build")
def trace_build(
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
    skip_missing: SkipMissing = False,
    data_dir: DataDir = None,
    seed: Seed = None,
    chunk_chars: Annotated[int, typer.Option(help="Chunk window, characters.")] = 4000,
    chunk_overlap: Annotated[int, typer.Option(help="Chunk overlap, characters.")] = 400,
    out: Annotated[Path | None, typer.Option(help="Also write the trace to this folder.")] = None,
) -> None:
    """Assemble the trace; print its id, composition, duplicates and what was dropped."""
    from gatebench import api

    try:
        trace = api.build_trace_from_options(
            sources=sources,
            **file_options(
                text_field, label_field, id_field, group_field, label_map, assume_label, source_name
            ),
            position_field=position_field,
            assume_position=assume_position,
            caps=parse_caps(caps),
            roles=parse_roles(roles),
            skip_missing=skip_missing,
            data_dir=data_dir,
            seed=seed,
            chunk_chars=chunk_chars,
            chunk_overlap=chunk_overlap,
            out=out,
        )
    except GatebenchError as exc:
        fail(exc)
    _print_trace(trace)


def _print_trace(trace: Any) -> None:
    info = trace.info
    console.print(f"[bold]trace id[/] {info['trace_id']}")
    comp = trace.composition()
    table = Table(title=f"composition ({info['n_prompts']:,} prompts, {info['n_rows']:,} rows)")
    for col in ("source", "family", "role", "attack", "benign", "total"):
        table.add_column(col, justify="right" if col in ("attack", "benign", "total") else "left")
    for r in comp.itertuples(index=False):
        table.add_row(r.source, r.family, r.role, f"{r.attack:,}", f"{r.benign:,}", f"{r.total:,}")
    table.add_row(
        "[bold]all[/]",
        "",
        "",
        f"{comp.attack.sum():,}",
        f"{comp.benign.sum():,}",
        f"{comp.total.sum():,}",
    )
    console.print(table)
    by_family = comp.groupby("family")[["attack", "benign", "total"]].sum()
    console.print("by family: " + ", ".join(f"{f} {r.total:,}" for f, r in by_family.iterrows()))
    dropped = Table(title="dropped and why")
    cols = ("source", "loaded", "malformed", "left out", "exact dup", "cap", "by cap", "overlap")
    for col in cols:
        dropped.add_column(col, justify="right" if col != "source" else "left")
    for name, r in info["per_source"].items():
        dropped.add_row(
            name,
            str(r["loaded"]),
            str(r["malformed"]),
            str(sum(r.get("excluded_by_loader", {}).values())),
            str(r["exact_duplicates_collapsed"]),
            fmt_count(r["cap"]),
            str(r["dropped_by_cap"]),
            fmt_count(r.get("dropped_overlapping_evaluation")),
        )
    console.print(dropped)
    console.print(
        "left out: rows a loader leaves out by design (see `gatebench data show`); "
        "overlap: training prompts dropped because they share a group (exact text, "
        "near-duplicate or parent) with an evaluation row",
        soft_wrap=True,
    )
    dup = info["duplicates"]
    console.print(
        f"cross-source duplicates: {dup['cross_source_duplicate_groups']} groups "
        f"({dup['cross_source_duplicate_rows']} rows); label conflicts: "
        f"{dup['label_conflict_groups']} groups"
    )
    for c in dup["label_conflicts"][:10]:
        line = f"  conflict {c['sources']}: {c['text'][:100]!r}"
        console.print(line, markup=False, highlight=False)
    for m in info["malformed_rows"][:20]:
        line = f"  malformed {m['source']} {m['file']}:{m['line']}: {m['reason']}"
        console.print(line, markup=False, highlight=False)
    for name, why in info["skipped_sources"].items():
        console.print(f"  [yellow]skipped[/] {name}: {why}", soft_wrap=True, highlight=False)
    ch = info["chunking"]
    console.print(
        f"chunking: window {ch['chunk_chars']} chars, overlap {ch['chunk_overlap']}; "
        f"{ch['chunked_prompts']} prompts split into more than one chunk"
    )

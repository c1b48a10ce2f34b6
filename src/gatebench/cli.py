"""The ``gatebench`` command line: thin wrappers over :mod:`gatebench.api`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from gatebench.cli_plugins import add_plugin_commands
from gatebench.errors import GatebenchError

app = typer.Typer(
    name="gatebench",
    help="Honest evaluation of prompt-injection and jailbreak detectors.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
data_app = typer.Typer(help="Benchmark sources: list and inspect.", no_args_is_help=True)
trace_app = typer.Typer(help="Build and inspect the evaluation trace.", no_args_is_help=True)
bench_app = typer.Typer(help="Measure a model directory: service latency.", no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(trace_app, name="trace")
app.add_typer(bench_app, name="bench")
add_plugin_commands(app)
console = Console()
err = Console(stderr=True)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Benchmark mirror (default: $GATEBENCH_DATA)."),
]
Sources = Annotated[
    list[str] | None,
    typer.Option("--sources", "-s", help="Source names or a preset: default, paper, all."),
]
Caps = Annotated[
    list[str] | None,
    typer.Option("--cap", help="Per-source cap override NAME=ROWS (or NAME=none)."),
]
Roles = Annotated[
    list[str] | None,
    typer.Option(
        "--role",
        help="Role override NAME=evaluation|training (training: fitted on, never scored).",
    ),
]
Embedded = Annotated[
    int | None,
    typer.Option(
        "--embedded",
        help="Constructed training rows: a training-corpus attack inside a benign training "
        "document (default 0).",
    ),
]
SkipMissing = Annotated[
    bool, typer.Option("--skip-missing", help="Run on the available sources; record the rest.")
]
Seed = Annotated[int | None, typer.Option("--seed", help="Root seed.")]


def _fail(exc: GatebenchError) -> None:
    from rich.markup import escape

    # Messages quote user input and file contents: brackets in them are text, not markup.
    err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False)
    raise typer.Exit(code=2)


def _parse_caps(caps: list[str] | None) -> dict[str, int | None]:
    from gatebench.errors import ConfigError

    out: dict[str, int | None] = {}
    for item in caps or []:
        name, sep, value = item.partition("=")
        if not sep or not (value.isdigit() or value.lower() == "none"):
            raise ConfigError(
                f"--cap {item!r} is not NAME=ROWS; write e.g. --cap alpaca-instructions=500"
            )
        out[name] = None if value.lower() == "none" else int(value)
    return out


def _parse_roles(roles: list[str] | None) -> dict[str, str]:
    from gatebench.errors import ConfigError
    from gatebench.types import Role

    out: dict[str, str] = {}
    for item in roles or []:
        name, sep, value = item.partition("=")
        if not sep or value not in set(Role):
            raise ConfigError(
                f"--role {item!r} is not NAME=evaluation or NAME=training; "
                "write e.g. --role toxicchat=evaluation"
            )
        out[name] = value
    return out


@data_app.command("list")
def data_list(
    data_dir: DataDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """One row per registered source: role, family, rows by label, licence, availability."""
    from gatebench import api

    try:
        rows = api.list_sources(data_dir=data_dir)
    except GatebenchError as exc:
        _fail(exc)
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
            _num(r["attack"]),
            _num(r["benign"]),
            _num(r["default_cap"]),
            licence,
            status,
        )
    console.print(table)


def _num(value: Any) -> str:
    return "" if value is None else f"{value:,}"


@data_app.command("show")
def data_show(name: str, data_dir: DataDir = None) -> None:
    """Everything about one source: its card, where its files are, sample rows."""
    from gatebench import api

    try:
        info = api.show_source(name, data_dir=data_dir)
    except GatebenchError as exc:
        _fail(exc)
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
            caps=_parse_caps(caps),
            roles=_parse_roles(roles),
            skip_missing=skip_missing,
            data_dir=data_dir,
            seed=seed,
            chunk_chars=chunk_chars,
            chunk_overlap=chunk_overlap,
            out=out,
        )
    except GatebenchError as exc:
        _fail(exc)
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
            _num(r["cap"]),
            str(r["dropped_by_cap"]),
            _num(r.get("dropped_overlapping_evaluation")),
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


def main() -> None:  # pragma: no cover - console entry
    app()


@app.command("run")
def run(
    detector: Annotated[
        str | None, typer.Option("--detector", "-d", help="Registered detector.")
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", help="Detector parameter KEY=JSON_VALUE.")
    ] = None,
    sources: Sources = None,
    caps: Caps = None,
    roles: Roles = None,
    embedded: Embedded = None,
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
        Path | None, typer.Option("--config", help="TOML file with a [run] table.")
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
            caps=_parse_caps(caps) or None,
            roles=_parse_roles(roles) or None,
            embedded=embedded,
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
            run_dir = api.evaluate(cfg, progress=progress)
    except GatebenchError as exc:
        _fail(exc)
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


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def _print_result(run_dir: Path) -> None:
    from gatebench.artifacts import read_result

    result = read_result(run_dir)
    op = result["operating_point"]
    console.print(f"[bold]run directory[/] {run_dir}")
    console.print(
        f"operating point θ_op = {op['threshold']:.4f} (max F1 s.t. pooled FPR ≤ "
        f"{_pct(op['target_fpr'])}; achieved FPR {_pct(op['fpr'])})"
    )
    trace = result["trace"]
    scored = (trace.get("roles") or {}).get("evaluation", {}).get("prompts", trace["n_prompts"])
    table = Table(title=f"headline ({scored:,} scored prompts, 95% CI)")
    for col in ("point", "aggregate", "F1", "precision", "recall", "FPR"):
        table.add_column(col)
    for name in ("headline", "natural"):
        m = result["metrics"][name]
        ci = m["micro"]["ci"]
        cells = [
            f"{_pct(m['micro'][k])} [{_pct(ci[k]['low'])}, {_pct(ci[k]['high'])}]"
            for k in ("f1", "precision", "recall", "fpr")
        ]
        table.add_row(f"{name} θ={m['threshold']:.3f}", "micro", *cells)
        mci = m["macro"]["ci"]["f1"]
        table.add_row(
            "",
            "macro",
            f"{_pct(m['macro']['f1'])} [{_pct(mci['low'])}, {_pct(mci['high'])}]",
            _pct(m["macro"]["precision"]),
            _pct(m["macro"]["recall"]),
            _pct(m["macro"]["fpr"]),
        )
    console.print(table)
    leak = result.get("leakage") or {}
    if leak:
        console.print(
            f"leakage premium ΔF1 (strat − grouped) at the headline point: "
            f"{100 * leak['delta_f1_headline']:+.2f} pp"
        )
    console.print(f"groups: {result['groups'].get('note', '')}", soft_wrap=True, highlight=False)


@app.command("train")
def train(
    model_dir: Annotated[Path, typer.Argument(help="Where to write the model directory.")],
    detector: Annotated[
        str | None, typer.Option("--detector", "-d", help="Registered detector.")
    ] = None,
    run_dir: Annotated[
        Path | None, typer.Option("--run", help="Take the operating point from this run.")
    ] = None,
    sources: Sources = None,
    caps: Caps = None,
    roles: Roles = None,
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

    try:
        cfg = load_config(
            None,
            detector=detector,
            sources=tuple(sources) if sources else None,
            caps=_parse_caps(caps) or None,
            roles=_parse_roles(roles) or None,
            data_dir=data_dir,
            fpr=fpr,
            seed=seed,
        )
        out = api.train(cfg, model_dir, run_dir=run_dir, holdout=holdout)
    except GatebenchError as exc:
        _fail(exc)
    console.print(f"model directory written: {out}")


@app.command("detect")
def detect(
    model_dir: Annotated[Path, typer.Argument(help="A model directory from `gatebench train`.")],
    text: Annotated[
        str | None, typer.Argument(help="Text to score; '-' or omit for stdin.")
    ] = None,
    jsonl: Annotated[
        Path | None, typer.Option("--jsonl", help='Score a JSONL file of {"text": ...} rows.')
    ] = None,
) -> None:
    """Score texts with a model directory; prints one JSON result per text."""
    from gatebench import api
    from gatebench.errors import DataError

    try:
        if jsonl is not None:
            texts = _detect_jsonl(jsonl)
        else:
            origin = "stdin" if text is None or text == "-" else "the TEXT argument"
            # Bytes that are not UTF-8 become U+FFFD, as a browser shows them,
            # instead of failing the whole input.
            texts = [
                sys.stdin.buffer.read().decode("utf-8", "replace")
                if origin == "stdin"
                else str(text)
            ]
            if not texts[0].strip():
                raise DataError(
                    f"the text from {origin} is empty or whitespace; give the text to score"
                )
        results = api.detect(model_dir, texts)
    except GatebenchError as exc:
        _fail(exc)
    for r in results:
        sys.stdout.write(json.dumps(r) + "\n")


def _detect_jsonl(path: Path) -> list[str]:
    """The texts of a ``{"text": ...}`` JSONL file; any bad line stops with its line number."""
    from gatebench.errors import DataError

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read --jsonl {path}: {exc.strerror}") from None
    texts = []
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            row = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{where}: invalid UTF-8 (byte {exc.start + 1}); save the file as UTF-8"
            ) from None
        except json.JSONDecodeError as exc:
            raise DataError(
                f'{where}: invalid JSON ({exc.msg}, column {exc.colno}); write one {{"text": ...}} '
                "object per line"
            ) from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            got = type(row.get("text")).__name__ if isinstance(row, dict) else type(row).__name__
            raise DataError(f'{where}: expected an object with a "text" string, got {got}')
        if not row["text"].strip():
            raise DataError(f'{where}: "text" is empty or whitespace; drop the line or fill it')
        texts.append(row["text"])
    if not texts:
        raise DataError(f'{path} holds no text lines; write one {{"text": ...}} per line')
    return texts


def _one_math_thread() -> None:
    """One BLAS/OpenMP thread per process unless the environment says otherwise.

    A service gets its parallelism from concurrent requests; a second math
    thread per request only waits for a time slice on a small machine (on the
    2-core dev VM it made single-request Gate scoring ~40% slower). Must run
    before numpy, scikit-learn or LightGBM is imported to take effect.
    """
    import os

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


@app.command("serve")
def serve(
    model_dir: Annotated[Path, typer.Argument(help="A model directory from `gatebench train`.")],
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="GATEBENCH_TOKEN",
            help="Require this bearer token on every endpoint but /healthz "
            "(/metrics and /openapi.json included).",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option(help="Largest request body (413 above).")
    ] = 2_000_000,
    max_batch: Annotated[int, typer.Option(help="Most texts per request (413 above).")] = 256,
    max_text_chars: Annotated[int, typer.Option(help="Longest text; longer gets 413.")] = 200_000,
    chunk_chars: Annotated[int, typer.Option(help="Window for long texts (max-pooled).")] = 4000,
    max_header_bytes: Annotated[
        int, typer.Option(min=1024, help="Largest request line and headers together (431 above).")
    ] = 65_536,
    max_headers: Annotated[
        int, typer.Option(min=1, help="Most request headers (431 above).")
    ] = 100,
    header_timeout: Annotated[
        float,
        typer.Option(
            min=0.001, help="Seconds a request's headers may take (408 and closed after)."
        ),
    ] = 10.0,
    workers: Annotated[
        int, typer.Option(min=1, help="Server processes (each loads the model; ~1 core each).")
    ] = 1,
    score_threads: Annotated[
        int, typer.Option(min=1, help="Threads scoring concurrently in each process.")
    ] = 2,
    batch_texts: Annotated[
        int,
        typer.Option(
            min=1,
            help="Most texts per scoring call when concurrent requests are coalesced "
            "(1: score every request alone).",
        ),
    ] = 64,
) -> None:
    """Serve a model over HTTP: /v1/score, /v1/info, /healthz, /metrics, /openapi.json.

    There is no /docs or /redoc page (they load scripts from a CDN); the
    OpenAPI document at /openapi.json describes every endpoint.
    """
    _one_math_thread()
    from gatebench import api
    from gatebench.serve.model import ServeSettings
    from gatebench.serve.server import serve_forever, serve_workers

    try:
        settings = ServeSettings(
            max_body_bytes=max_body_bytes,
            max_batch=max_batch,
            max_text_chars=max_text_chars,
            chunk_chars=chunk_chars,
            max_header_bytes=max_header_bytes,
            max_headers=max_headers,
            header_timeout_s=header_timeout,
            score_threads=score_threads,
            batch_texts=batch_texts,
            token=token,
        )
        # With several workers each loads its own model; this process only supervises.
        model = api.served_model(model_dir, settings) if workers == 1 else None
        if model is None:
            from gatebench.artifacts import read_json
            from gatebench.modeldir import MANIFEST

            threshold = float(read_json(model_dir / MANIFEST)["threshold"])
        else:
            threshold = model.threshold
    except GatebenchError as exc:
        _fail(exc)
    console.print(
        f"serving {model_dir} on http://{host}:{port} (threshold {threshold:.4f}"
        + (f", {workers} worker processes)" if workers > 1 else ")")
    )
    if model is None:
        serve_workers(str(model_dir), settings, host=host, port=port, workers=workers)
    else:
        serve_forever(model, settings, host=host, port=port)


def _int_list(value: str, option: str) -> list[int]:
    from gatebench.errors import ConfigError

    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"{option} {value!r} is not a comma-separated list of integers") from None


@bench_app.command("latency")
def bench_latency(
    model_dir: Annotated[Path, typer.Argument(help="A model directory from `gatebench train`.")],
    url: Annotated[
        str | None,
        typer.Option("--url", help="Measure this running service (default: start one here)."),
    ] = None,
    spawn: Annotated[
        bool,
        typer.Option(
            "--spawn", help="Start the server as a child process, not a thread of this one."
        ),
    ] = False,
    workers: Annotated[
        int, typer.Option(min=1, help="Server processes for --spawn (`serve --workers`).")
    ] = 1,
    token: Annotated[
        str | None, typer.Option(envvar="GATEBENCH_TOKEN", help="Bearer token to send.")
    ] = None,
    concurrency: Annotated[
        str, typer.Option("--concurrency", help="In-flight requests per level, e.g. 1,4,16,64.")
    ] = "1,4,16,64",
    requests: Annotated[int, typer.Option("--requests", help="Requests per level.")] = 500,
    texts: Annotated[
        Path | None,
        typer.Option("--texts", help='JSONL of {"text": ...} rows (default: trace prompts).'),
    ] = None,
    data_dir: DataDir = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the text sample.")] = 0,
    in_process: Annotated[
        bool, typer.Option(help="Also time scoring without HTTP (single texts and batches).")
    ] = True,
    n_single: Annotated[int, typer.Option(help="Texts timed one by one in process.")] = 300,
    batch_sizes: Annotated[str, typer.Option(help="In-process batch sizes.")] = "1,16,256",
    run_dir: Annotated[
        Path | None, typer.Option("--run", help="Write RUN_DIR/latency.json (for the report).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the JSON here (when --run is not given).")
    ] = None,
) -> None:
    """HTTP latency per stage over a concurrency sweep, and in-process scoring latency."""
    _one_math_thread()  # as `gatebench serve` runs
    from gatebench.artifacts import write_json
    from gatebench.serve.latency import latency_tables, run_latency_bench

    try:
        result = run_latency_bench(
            model_dir,
            url=url,
            spawn=spawn,
            workers=workers,
            token=token,
            concurrency=_int_list(concurrency, "--concurrency"),
            requests=requests,
            seed=seed,
            texts_file=texts,
            data_dir=data_dir,
            in_process=in_process,
            n_single=n_single,
            batch_sizes=_int_list(batch_sizes, "--batch-sizes"),
        )
    except GatebenchError as exc:
        _fail(exc)
    wide = Console(width=max(console.width, 170))  # the sweep table has 14 columns
    for title, headers, rows in latency_tables(result):
        table = Table(title=title)
        for i, col in enumerate(headers):
            table.add_column(col, justify="left" if i == 0 else "right")
        for row in rows:
            table.add_row(*row)
        wide.print(table, highlight=False)
    target = run_dir / "latency.json" if run_dir is not None else out
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_json(target, result)
        console.print(f"latency written: {target}")


@app.command("compare")
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
        _fail(exc)
    # markup=False: rich would read "[low, high]" intervals as markup tags.
    console.print(format_compare(res), markup=False, highlight=False, soft_wrap=True)


_STATUS_STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red", "NOT_APPLICABLE": "dim"}


@app.command("diagnose")
def diagnose(
    run_dir: Annotated[Path, typer.Argument(help="A run directory from `gatebench run`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    reasons: Annotated[bool, typer.Option("--reasons", help="Add each check's reason.")] = False,
) -> None:
    """The diagnostics recorded in RUN_DIR/result.json: one row per check."""
    from gatebench.artifacts import read_result
    from gatebench.diagnostics.report import diagnose_rows

    try:
        rows = diagnose_rows(read_result(run_dir))
    except GatebenchError as exc:
        _fail(exc)
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
        _fail(exc)
    console.print(f"report: {html}")


@app.command("report")
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory from `gatebench run`.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="HTML path (default RUN_DIR/report.html).")
    ] = None,
) -> None:
    """Render the self-contained HTML report (and result.md, figures) from a run directory."""
    _render(run_dir, out)


BulkModel = Annotated[Path, typer.Argument(help="A model directory from `gatebench train`.")]
BulkInput = Annotated[Path, typer.Argument(help="Input .parquet or .jsonl file.")]
TextField = Annotated[str, typer.Option("--text-field", help="Column/key holding the text.")]
IdField = Annotated[
    str | None, typer.Option("--id-field", help="Column/key holding a row id (default: id).")
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


def _print_bulk(summary: dict[str, Any], where: Path) -> None:
    t = summary["timing"]
    console.print(
        f"{summary['rows_read']:,} rows read, {summary['rows_scored']:,} scored, "
        f"{summary['rows_rejected']:,} rejected in {t.get('total_s', t['wall_s']):.1f} s "
        f"({summary['executor']}, {summary['partitions']} partitions)",
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
            f"flagged {summary['flagged']:,} ({_pct(summary['flagged_share'])}) at threshold "
            f"{summary['model']['threshold']:.4f}",
            highlight=False,
        )
    console.print(f"written: {where}", highlight=False)


@app.command("score")
def score(
    model_dir: BulkModel,
    input_path: BulkInput,
    out: Annotated[Path, typer.Option("--out", help="Output .parquet (scores and decisions).")],
    text_field: TextField = "text",
    id_field: IdField = None,
    batch_rows: BatchRows = 10_000,
    backend: BulkBackend = "local",
    scheduler: BulkScheduler = None,
    jobs: BulkJobs = None,
) -> None:
    """Score a large file in partitions; writes OUT and OUT.summary.json."""
    from gatebench.bulk import score_file
    from gatebench.bulk.io import summary_path

    try:
        summary = score_file(
            model_dir,
            input_path,
            out,
            text_field=text_field,
            id_field=id_field,
            batch_rows=batch_rows,
            backend=backend,
            jobs=jobs,
            scheduler=scheduler,
        )
    except GatebenchError as exc:
        _fail(exc)
    _print_bulk(summary, out)
    console.print(f"summary: {summary_path(out)}", highlight=False)


@app.command("audit")
def audit(
    model_dir: BulkModel,
    input_path: BulkInput,
    out: Annotated[Path, typer.Option("--out", help="Output directory.")],
    text_field: TextField = "text",
    id_field: IdField = None,
    batch_rows: BatchRows = 10_000,
    backend: BulkBackend = "local",
    scheduler: BulkScheduler = None,
    jobs: BulkJobs = None,
    seed: Seed = None,
) -> None:
    """Score a large file and cluster its near-duplicates (MinHash-LSH) with score spread."""
    from gatebench.bulk import audit_file
    from gatebench.config import RunConfig

    try:
        summary = audit_file(
            model_dir,
            input_path,
            out,
            text_field=text_field,
            id_field=id_field,
            batch_rows=batch_rows,
            backend=backend,
            jobs=jobs,
            scheduler=scheduler,
            seed=RunConfig().seed if seed is None else seed,
        )
    except GatebenchError as exc:
        _fail(exc)
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
        share = "" if r["flagged_share"] is None else _pct(r["flagged_share"])
        table.add_row(
            str(r["cluster"]),
            str(r["size"]),
            str(r["distinct_texts"]),
            str(r["first_id"]),
            *cells,
            share,
        )
    console.print(table)


if __name__ == "__main__":  # pragma: no cover - `python -m gatebench.cli`
    app()

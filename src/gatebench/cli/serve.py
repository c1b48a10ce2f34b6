"""``gatebench detect|serve`` and ``gatebench bench latency``: use a trained model directory.

``detect`` and ``serve`` are plain functions that :mod:`gatebench.cli`
registers on the app; ``bench`` is a command group of its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from gatebench.cli.options import (
    DataDir,
    PositionOption,
    ScanRoles,
    Seed,
    SpanAdjacent,
    console,
    fail,
    scan_policy,
)
from gatebench.errors import GatebenchError

if TYPE_CHECKING:
    from gatebench.conversation import Conversation, ScanPolicy

__all__ = [
    "bench_app",
    "detect",
    "parse_position",
    "read_inputs",
    "read_jsonl_inputs",
    "read_one_text",
    "serve",
]

bench_app = typer.Typer(help="Measure a model directory: service latency.", no_args_is_help=True)


def detect(
    model_dir: Annotated[Path, typer.Argument(help="A model directory from `gatebench train`.")],
    text: Annotated[
        str | None, typer.Argument(help="Text to score; '-' or omit for stdin.")
    ] = None,
    jsonl: Annotated[
        Path | None,
        typer.Option(
            "--jsonl", help='Score a JSONL file of {"text": ...} and {"messages": [...]} rows.'
        ),
    ] = None,
    position: PositionOption = None,
    scan_roles: ScanRoles = "user,tool,document",
    span_adjacent: SpanAdjacent = True,
) -> None:
    """Score texts or conversations with a model directory; prints one JSON result per input."""
    from gatebench import api

    try:
        texts, positions, policy = read_inputs(
            text, jsonl, position, scan_roles, span_adjacent, "score"
        )
        results = api.detect(model_dir, texts, policy=policy, positions=positions)
    except GatebenchError as exc:
        fail(exc)
    for r in results:
        sys.stdout.write(json.dumps(r) + "\n")


def read_inputs(
    text: str | None,
    jsonl: Path | None,
    position: str | None,
    scan_roles: str,
    span_adjacent: bool,
    verb: str,
) -> tuple[list[str | Conversation], list[str | None], ScanPolicy]:
    """What ``detect`` and ``neighbours`` read: TEXT or stdin, or a JSONL file's lines.

    Returns the inputs (texts and conversations), each one's position (None
    for a conversation) and the scanning policy the options give.
    """
    policy = scan_policy(scan_roles, span_adjacent)
    default = parse_position(position)
    if jsonl is not None:
        inputs, positions = read_jsonl_inputs(jsonl, policy, default)
        return inputs, positions, policy
    return [read_one_text(text, verb)], [default], policy


def parse_position(position: str | None) -> str:
    """``--position`` checked: user (None), tool or document."""
    from gatebench.errors import DataError
    from gatebench.types import Position

    try:
        return str(Position.parse(position, "--position"))
    except ValueError as exc:
        raise DataError(str(exc)) from None


def read_one_text(text: str | None, verb: str) -> str:
    """The TEXT argument, or standard input for None or ``-``; refuse an empty one.

    Bytes on standard input that are not UTF-8 become U+FFFD, as a browser
    shows them, instead of failing the whole input.
    """
    from gatebench.errors import DataError

    origin = "stdin" if text is None or text == "-" else "the TEXT argument"
    one = sys.stdin.buffer.read().decode("utf-8", "replace") if origin == "stdin" else str(text)
    if not one.strip():
        raise DataError(f"the text from {origin} is empty or whitespace; give the text to {verb}")
    return one


def read_jsonl_inputs(
    path: Path, policy: ScanPolicy, position: str
) -> tuple[list[str | Conversation], list[str | None]]:
    """The texts and conversations of a JSONL file, and each one's position.

    A line with a ``"text"`` key is a text, at its ``"position"`` if it has
    one and at ``position`` otherwise; one with a ``"messages"`` key (and no
    ``"text"``) a conversation, checked here: a bad one, or one with no
    message of a role ``policy`` scans, names its line. Any bad line stops
    with its line number.
    """
    from gatebench.conversation import ConversationError, parse_conversation, plan_scan
    from gatebench.errors import DataError
    from gatebench.served import ServeSettings
    from gatebench.types import Position

    settings = ServeSettings()

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read --jsonl {path}: {exc.strerror}") from None
    texts: list[str | Conversation] = []
    positions: list[str | None] = []
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
                'or {"messages": [...]} object per line'
            ) from None
        if isinstance(row, dict) and "text" not in row and "messages" in row:
            if "position" in row:
                raise DataError(
                    f'{where}: "position" is for a "text" line; a conversation\'s messages '
                    "say where each sits by their role"
                )
            try:
                conversation = parse_conversation(row["messages"])
                size, overlap = settings.chunk_chars, settings.chunk_overlap
                plan_scan(conversation, policy, size=size, overlap=overlap)
            except ConversationError as exc:
                raise DataError(f"{where}: {exc}") from None
            texts.append(conversation)
            positions.append(None)
            continue
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            got = type(row.get("text")).__name__ if isinstance(row, dict) else type(row).__name__
            raise DataError(
                f'{where}: expected an object with a "messages" list or a "text" string, got {got}'
            )
        if not row["text"].strip():
            raise DataError(f'{where}: "text" is empty or whitespace; drop the line or fill it')
        try:
            positions.append(str(Position.parse(row.get("position", position), where)))
        except ValueError as exc:
            raise DataError(str(exc)) from None
        texts.append(row["text"])
    if not texts:
        raise DataError(
            f'{path} holds no text lines; write one {{"text": ...}} or {{"messages": [...]}} '
            "object per line"
        )
    return texts, positions


def _one_math_thread() -> None:
    """One BLAS/OpenMP thread per process unless the environment says otherwise.

    A service gets its parallelism from concurrent requests; a second math
    thread per request only waits for a time slice on a small machine (on a
    2-core machine it made single-request Gate scoring ~40% slower). Must run
    before numpy, scikit-learn or LightGBM is imported to take effect.
    """
    import os

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


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
    scan_roles: ScanRoles = "user,tool,document",
    span_adjacent: SpanAdjacent = True,
    max_messages: Annotated[
        int, typer.Option(min=1, help="Most messages in one conversation (413 above).")
    ] = 1000,
    max_windows: Annotated[
        int,
        typer.Option(min=1, help="Most windows one request's conversations need (413 above)."),
    ] = 4096,
    record_sample: Annotated[
        Path | None,
        typer.Option(
            help="Append a random --record-share of the inputs to this JSONL file (users' "
            "text, verbatim): the sample tune-threshold and adapt take."
        ),
    ] = None,
    record_share: Annotated[
        float, typer.Option(help="Share of inputs --record-sample writes, in (0, 1].")
    ] = 0.01,
    record_blocked: Annotated[
        Path | None,
        typer.Option(
            help="Append every blocked input to this JSONL file (users' text, verbatim): "
            "what a reviewer reads for false alarms."
        ),
    ] = None,
    seed: Seed = None,
) -> None:
    """Serve a model over HTTP: /v1/score, /v1/info, /healthz, /metrics, /openapi.json.

    There is no /docs or /redoc page (they load scripts from a CDN); the
    OpenAPI document at /openapi.json describes every endpoint.
    """
    _one_math_thread()
    from gatebench.serve.model import ServeSettings
    from gatebench.serve.record import TrafficRecorder
    from gatebench.serve.server import serve_forever, serve_workers
    from gatebench.served import served_model

    recorder = None
    try:
        if record_sample is not None or record_blocked is not None:
            if workers > 1:
                from gatebench.errors import ConfigError

                raise ConfigError(
                    f"--record-sample and --record-blocked take one process; with --workers "
                    f"{workers} each would write the same file. Record with --workers 1 (or "
                    "record in the application in front of the workers)"
                )
            from gatebench.config import RunConfig

            recorder = TrafficRecorder(
                sample=record_sample,
                blocked=record_blocked,
                share=record_share,
                seed=RunConfig().seed if seed is None else seed,
            )
        policy = scan_policy(scan_roles, span_adjacent)
        settings = ServeSettings(
            scan_roles=policy.roles,
            span_adjacent=policy.span_adjacent,
            max_messages=max_messages,
            max_windows=max_windows,
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
        model = served_model(model_dir, settings) if workers == 1 else None
        if model is None:
            from gatebench.modeldir import read_manifest, shipped_fpr

            meta = read_manifest(model_dir)
            threshold, baseline = float(meta["threshold"]), shipped_fpr(meta)
        else:
            threshold, baseline = model.threshold, model.info()["shipped_fpr"]
    except GatebenchError as exc:
        fail(exc)
    console.print(
        f"serving {model_dir} on http://{host}:{port} (threshold {threshold:.4f}"
        + (f", {workers} worker processes)" if workers > 1 else ")")
    )
    if baseline is not None:
        console.print(
            f"benign flag rate at this threshold: {baseline['value']:.2%} "
            f"({baseline['measured_on']}); /metrics has it as gatebench_shipped_fpr",
            highlight=False,
        )
    if model is None:
        serve_workers(str(model_dir), settings, host=host, port=port, workers=workers)
    else:
        serve_forever(model, settings, host=host, port=port, recorder=recorder)


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
        fail(exc)
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

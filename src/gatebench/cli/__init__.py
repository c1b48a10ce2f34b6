"""The ``gatebench`` command line: thin wrappers over :mod:`gatebench.api`.

This package builds the typer ``app`` (the ``gatebench`` console script, and
``python -m gatebench.cli``). Each sub-module holds one family of commands:

- :mod:`~gatebench.cli.data`: ``data list|show``, ``trace build``;
- :mod:`~gatebench.cli.run`: ``run``, ``train``, ``compare``, ``diagnose``, ``report``;
- :mod:`~gatebench.cli.evaluate`: ``evaluate``;
- :mod:`~gatebench.cli.turns`: ``evaluate-turns``;
- :mod:`~gatebench.cli.serve`: ``detect``, ``serve``, ``bench latency``;
- :mod:`~gatebench.cli.bulk`: ``score``, ``audit``, ``tune-threshold``;
- :mod:`~gatebench.cli.adapt`: ``adapt``;
- :mod:`~gatebench.cli.neighbours`: ``neighbours``;
- :mod:`~gatebench.cli.model`: ``model show``;
- :mod:`~gatebench.cli.plugins`: ``detectors list``, ``diagnostics list``;

and :mod:`~gatebench.cli.options` what they share (common options, consoles,
error handling). The top-level commands are registered here, in one list, so
that ``gatebench --help`` shows them in the order of the workflow rather than
in the order of the modules.
"""

from __future__ import annotations

import typer

from gatebench.cli import (
    adapt,
    bulk,
    data,
    evaluate,
    model,
    neighbours,
    plugins,
    run,
    serve,
    turns,
)

__all__ = ["app", "main"]

app = typer.Typer(
    name="gatebench",
    help="Honest evaluation of prompt-injection and jailbreak detectors.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.command("run")(run.run)
app.command("train")(run.train)
app.command("tune-threshold")(bulk.tune_threshold)
app.command("adapt")(adapt.adapt)
app.command("evaluate")(evaluate.evaluate)
app.command("evaluate-turns")(turns.evaluate_turns)
app.command("detect")(serve.detect)
app.command("neighbours")(neighbours.neighbours)
app.command("serve")(serve.serve)
app.command("compare")(run.compare)
app.command("diagnose")(run.diagnose)
app.command("report")(run.report)
app.command("score")(bulk.score)
app.command("audit")(bulk.audit)
app.add_typer(model.model_app, name="model")
app.add_typer(data.data_app, name="data")
app.add_typer(data.trace_app, name="trace")
app.add_typer(serve.bench_app, name="bench")
app.add_typer(plugins.detectors_app, name="detectors")
app.add_typer(plugins.diagnostics_app, name="diagnostics")


def main() -> None:  # pragma: no cover - console entry
    """Run the command line (what the ``gatebench`` console script does)."""
    app()

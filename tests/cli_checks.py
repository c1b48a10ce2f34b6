"""What every refused command must show: exit code 2, our message, the needles, no stutter."""

from __future__ import annotations

import itertools

from typer.testing import CliRunner

from gatebench.cli import app

runner = CliRunner()


def fails_cleanly(args: list[str], *needles: str) -> str:
    """Run ``gatebench ARGS``; assert a clean refusal that contains every needle.

    Returns the output with its whitespace collapsed.
    """
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    # An error of ours, not an exception escaping the command.
    assert result.exception is None or isinstance(result.exception, SystemExit)
    out = " ".join(result.output.split())
    # One message, said once: no doubled words from stitched-together fragments.
    words = out.lower().split()
    assert not any(a == b and a.isalpha() for a, b in itertools.pairwise(words)), out
    for needle in needles:
        assert needle in out, (needle, out)
    return out

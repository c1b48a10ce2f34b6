"""``python -m gatebench.cli``: the command line without the console script.

``bench latency --spawn`` and the benchmarks start a server this way: it runs
on the interpreter at hand whether or not the console script is on PATH.
"""

from gatebench.cli import app

if __name__ == "__main__":  # pragma: no cover - `python -m gatebench.cli`
    app()

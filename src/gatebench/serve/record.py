"""Traffic the service writes down, for the commands that re-pick and refit a model.

A threshold holds on average over sources the model never saw, and a
deployment is one more such source. What it needs to be checked and re-picked
is the deployment's own traffic: a random share of every input (the sample
``gatebench tune-threshold`` and ``gatebench adapt`` take) and every input the
model blocked (what a reviewer reads for false alarms, and ``gatebench
neighbours --jsonl`` explains). Each line is one input as ``gatebench detect
--jsonl`` reads it (``{"text", "position"}`` or ``{"messages"}``), with the
score, the decision and the threshold beside it, so the files feed those
commands as they are.

Nothing is written unless the server is started with a file to write to: the
files hold users' text, verbatim. The share is drawn from a seeded generator
in the order inputs are answered, so one process answering the same requests
in the same order records the same lines.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from gatebench.conversation import Conversation
from gatebench.errors import ConfigError
from gatebench.seeding import child_sequence

__all__ = ["TrafficRecorder"]


class TrafficRecorder:
    """Append a seeded share of the inputs, and every blocked one, to JSONL files.

    Parameters
    ----------
    sample : Path, optional
        Where a random ``share`` of every scored input goes.
    blocked : Path, optional
        Where every blocked input goes.
    share : float
        The share of inputs sampled, in (0, 1].
    seed : int
        Root seed of the draw.

    Raises
    ------
    ConfigError
        A share outside (0, 1], neither file given, or a file that cannot be
        opened for appending.
    """

    def __init__(
        self,
        *,
        sample: Path | None = None,
        blocked: Path | None = None,
        share: float = 0.01,
        seed: int = 0,
    ) -> None:
        if sample is None and blocked is None:
            raise ConfigError(
                "recording traffic needs --record-sample FILE or --record-blocked FILE"
            )
        if isinstance(share, bool) or not 0.0 < float(share) <= 1.0:
            raise ConfigError(
                f"--record-share {share!r}: give a share in (0, 1], e.g. 0.01 for one in a hundred"
            )
        self.share = float(share)
        self._rng = np.random.default_rng(child_sequence(seed, "serve", "record"))
        self._lock = threading.Lock()
        self._files: dict[str, TextIO] = {}
        for kind, path in (("sample", sample), ("blocked", blocked)):
            if path is not None:
                self._files[kind] = _open(path, kind)
        #: Lines written, and lines lost to a write error, per file given.
        self.counts = dict.fromkeys(self._files, 0)
        self.failed = dict.fromkeys(self._files, 0)

    def record(
        self,
        inputs: Sequence[str | Conversation],
        results: list[dict[str, Any]],
        positions: list[str] | None,
        threshold: float,
    ) -> None:
        """Write the answered ``inputs`` that fall in the share, or were blocked."""
        with self._lock:
            drawn = self._rng.random(len(inputs)) < self.share
            for i, (x, r) in enumerate(zip(inputs, results, strict=True)):
                wanted = {"sample": drawn[i], "blocked": r.get("decision") == "block"}
                kinds = [k for k in self._files if wanted[k]]
                if not kinds:
                    continue
                line = json.dumps(
                    _line(x, r, positions[i] if positions else "user", threshold),
                    ensure_ascii=False,
                )
                for kind in kinds:
                    try:
                        self._files[kind].write(line + "\n")
                        self._files[kind].flush()
                    except OSError as exc:
                        # A full disk must not turn answers into errors: the input
                        # was scored, and only its copy is lost. Counted, and said once.
                        if not self.failed[kind]:
                            print(
                                f"gatebench serve: cannot write the {kind} file "
                                f"({exc.strerror}); its lines are counted in /metrics as "
                                "gatebench_record_errors_total until it can",
                                file=sys.stderr,
                            )
                        self.failed[kind] += 1
                    else:
                        self.counts[kind] += 1

    def close(self) -> None:
        """Close the files."""
        with self._lock:
            for fh in self._files.values():
                fh.close()
            self._files.clear()


def _line(
    x: str | Conversation, result: dict[str, Any], position: str, threshold: float
) -> dict[str, Any]:
    """One input as ``gatebench detect --jsonl`` reads it, with its score and decision."""
    scored = {"score": result["score"], "decision": result["decision"], "threshold": threshold}
    if isinstance(x, str):
        return {"text": x, "position": position, **scored}
    messages = [{"role": m.role, "content": m.content} for m in x.messages]
    return {"messages": messages, **scored, "driver": result["driver"]}


def _open(path: Path, kind: str) -> TextIO:
    """``path`` opened for appending, readable by its owner only (it holds users' text)."""
    import os

    option = "--record-sample" if kind == "sample" else "--record-blocked"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        return os.fdopen(fd, "a", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"{option} {path}: cannot open it for appending ({exc.strerror}); give a path in "
            "a writable directory"
        ) from None

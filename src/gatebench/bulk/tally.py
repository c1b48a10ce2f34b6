"""What the bulk driver counts while partition results stream past."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gatebench.bulk.io import Partition, PartitionReader

if TYPE_CHECKING:
    from gatebench.bulk.score import PartitionResult

__all__ = ["MAX_REJECTED_LISTED", "Tally", "timed"]

#: Rejected rows listed one by one in the summary (all are counted).
MAX_REJECTED_LISTED = 50


@dataclass
class Tally:
    """Counters the driver keeps while results stream past."""

    rows: int = 0
    scored: int = 0
    flagged: int = 0
    windowed: int = 0
    partitions: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    conversations: Counter[str] = field(default_factory=Counter)
    positions: Counter[str] = field(default_factory=Counter)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    partition_seconds: list[float] = field(default_factory=list)
    read_s: float = 0.0
    write_s: float = 0.0

    def add(self, result: PartitionResult) -> None:
        table = result.table
        self.rows += table.num_rows
        self.partitions += 1
        self.windowed += result.windowed
        self.conversations.update(result.conversations)
        self.positions.update(result.positions)
        self.scored += table.num_rows - len(result.rejected)
        self.flagged += int(np.asarray(table.column("flagged").fill_null(False)).sum())
        self.reasons.update(r["reason"] for r in result.rejected)
        room = MAX_REJECTED_LISTED - len(self.rejected)
        if room > 0:
            self.rejected.extend(result.rejected[:room])
        self.partition_seconds.append(result.seconds)


def timed(reader: PartitionReader, tally: Tally) -> Iterator[Partition]:
    it = iter(reader)
    while True:
        t0 = time.perf_counter()
        try:
            part = next(it)
        except StopIteration:
            return
        finally:
            tally.read_s += time.perf_counter() - t0
        yield part

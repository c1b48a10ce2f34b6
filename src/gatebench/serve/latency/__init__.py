"""Latency of the detection service: HTTP concurrency sweeps and in-process scoring.

``gatebench bench latency MODEL_DIR`` runs both and writes ``latency.json``:

* **HTTP** (:mod:`~gatebench.serve.latency.sweep`): a closed-loop sweep, for
  each concurrency level a fixed number of ``POST /v1/score`` requests with
  exactly that many in flight, measured at the client, split by the stage
  that decided and into model time and HTTP overhead.
* **In process** (:mod:`~gatebench.serve.latency.inprocess`): the same texts
  through :class:`~gatebench.served.ServedModel` one at a time, and the
  detector's own ``score`` on batches of 1, 16 and 256.

The texts (:mod:`~gatebench.serve.latency.texts`) are a seeded sample of the
model's held-out prompts or the default trace's; the per-request records are
reduced by :mod:`~gatebench.serve.latency.stats`; the whole run and its
targets are :mod:`~gatebench.serve.latency.benchmark`, and its printed form
:mod:`~gatebench.serve.latency.tables`.

Every measurement records the 1-minute load average: on a shared machine
numbers taken under load are upper bounds.

This module re-exports the public API (what the command line and the
benchmarks import), whatever file a name lives in.
"""

from gatebench.serve.latency.benchmark import PAPER_LATENCY, SCHEMA, TARGETS, run_latency_bench
from gatebench.serve.latency.inprocess import inprocess_latency
from gatebench.serve.latency.stats import summarize, summarize_records
from gatebench.serve.latency.sweep import cpu_seconds, http_level, process_tree, spawned_server
from gatebench.serve.latency.tables import latency_tables
from gatebench.serve.latency.texts import request_texts, texts_for_model

__all__ = [
    "PAPER_LATENCY",
    "SCHEMA",
    "TARGETS",
    "cpu_seconds",
    "http_level",
    "inprocess_latency",
    "latency_tables",
    "process_tree",
    "request_texts",
    "run_latency_bench",
    "spawned_server",
    "summarize",
    "summarize_records",
    "texts_for_model",
]

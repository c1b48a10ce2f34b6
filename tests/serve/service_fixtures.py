"""Service models (a keyword list, a position reader) and limits shared by the service tests."""

from __future__ import annotations

from gatebench.detectors.baselines import KeywordList
from gatebench.serve import ServedModel, ServeSettings
from position_reader import DataReader, LineReader

SETTINGS = ServeSettings(
    max_body_bytes=1_000_000,
    max_batch=1000,
    max_text_chars=300_000,
    chunk_chars=2000,
    chunk_overlap=200,
    body_timeout_s=2.0,
)


def keyword_model(settings: ServeSettings = SETTINGS) -> ServedModel:
    info = {"model_version": "test", "trace_id": "t" * 64, "target_fpr": 0.01}
    return ServedModel(KeywordList(), threshold=0.5, info=info, settings=settings)


def data_reader_model(settings: ServeSettings = SETTINGS) -> ServedModel:
    info = {"model_version": "test", "trace_id": "t" * 64, "target_fpr": 0.01}
    return ServedModel(DataReader(), threshold=0.5, info=info, settings=settings)


def line_reader_model(settings: ServeSettings = SETTINGS) -> ServedModel:
    info = {"model_version": "test", "trace_id": "t" * 64, "target_fpr": 0.01}
    return ServedModel(LineReader(), threshold=0.5, info=info, settings=settings)

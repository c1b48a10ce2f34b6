"""The sources the trace builds itself, and how a refit that holds sources out treats them.

Constructed rows are training rows made from loaded ones. They are never a
source to hold out or to score. Every one contains a host row's text (twins,
persona pairs, quoted attacks, embedded injections) and must leave every refit
that holds its host's source out, or the held-out text would be trained on. A
persona row also carries a frame sentence, and an embedded row a payload,
whose source its id names (``<constructed source>:<source>:<n>``): the row
leaves with that source too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gatebench.augment import EMBEDDED_SOURCE
from gatebench.persona import PERSONA_SOURCE
from gatebench.quotes import QUOTES_SOURCE
from gatebench.twins import TWINS_SOURCE

__all__ = [
    "CONSTRUCTED_SOURCES",
    "HOSTED_SOURCES",
    "NAMING_SOURCES",
    "built_from",
    "hosted_by",
    "named_source",
]

CONSTRUCTED_SOURCES = (EMBEDDED_SOURCE, TWINS_SOURCE, PERSONA_SOURCE, QUOTES_SOURCE)
#: Constructed rows whose parent is the host row their text was built from.
HOSTED_SOURCES = (TWINS_SOURCE, PERSONA_SOURCE, QUOTES_SOURCE, EMBEDDED_SOURCE)
#: Constructed rows whose id names a second source: a persona's frame, an embedded payload.
NAMING_SOURCES = (PERSONA_SOURCE, EMBEDDED_SOURCE)


def named_source(sample_id: str) -> str:
    """The second source a constructed row's id names (empty for any other row)."""
    parts = sample_id.split(":", 2)
    return parts[1] if len(parts) == 3 and parts[0] in NAMING_SOURCES else ""


def built_from(frame: pd.DataFrame) -> np.ndarray:
    """Per row, the sources a hosted constructed row was built from.

    Computed once per frame, for :func:`hosted_by` to test against each
    refit's held-out sources.

    Returns
    -------
    ndarray of shape (len(frame), 2), object
        The host row's source and the source the row's id names (a persona
        frame's, an embedded payload's); empty strings where a row is not
        hosted or names none.
    """
    hosted = frame["source"].isin(HOSTED_SOURCES).to_numpy()
    host = frame["parent_id"].fillna("").astype(str).str.split(":").str[0].to_numpy(dtype=object)
    second = frame["sample_id"].astype(str).map(named_source).to_numpy(dtype=object)
    return np.where(hosted[:, None], np.column_stack([host, second]), "")


def hosted_by(origins: np.ndarray, sources: np.ndarray | list[str]) -> np.ndarray:
    """True for the rows whose :func:`built_from` ``origins`` include one of ``sources``."""
    held = [s for s in np.asarray(sources, dtype=object).tolist() if s]
    return np.asarray(np.isin(origins, held).any(axis=1))

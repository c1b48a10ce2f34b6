"""The sources the trace builds itself, and how a refit that holds sources out treats them.

Constructed rows are training rows made from loaded ones. They are never a
source to hold out or to score. Those whose text contains a host row's text
(twins, persona pairs, quoted attacks) must leave every refit that holds their
host's source out, or the held-out text would be trained on; a persona row
also carries a frame sentence, whose source its id names, and leaves with that
source too.
Embedded injections carry a payload no column records, so refits that hold
sources out drop them all.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gatebench.augment import EMBEDDED_SOURCE
from gatebench.persona import PERSONA_SOURCE, persona_frame_source
from gatebench.quotes import QUOTES_SOURCE
from gatebench.twins import TWINS_SOURCE

__all__ = ["CONSTRUCTED_SOURCES", "HOSTED_SOURCES", "built_from", "hosted_by"]

CONSTRUCTED_SOURCES = (EMBEDDED_SOURCE, TWINS_SOURCE, PERSONA_SOURCE, QUOTES_SOURCE)
#: Constructed rows whose parent is the host row their text was built from.
HOSTED_SOURCES = (TWINS_SOURCE, PERSONA_SOURCE, QUOTES_SOURCE)


def built_from(frame: pd.DataFrame) -> np.ndarray:
    """Per row, the sources a hosted constructed row was built from.

    Computed once per frame, for :func:`hosted_by` to test against each
    refit's held-out sources.

    Returns
    -------
    ndarray of shape (len(frame), 2), object
        The host row's source and the persona frame's source; empty strings
        where a row is not hosted or has no frame.
    """
    hosted = frame["source"].isin(HOSTED_SOURCES).to_numpy()
    host = frame["parent_id"].fillna("").astype(str).str.split(":").str[0].to_numpy(dtype=object)
    frame_source = frame["sample_id"].astype(str).map(persona_frame_source).to_numpy(dtype=object)
    return np.where(hosted[:, None], np.column_stack([host, frame_source]), "")


def hosted_by(origins: np.ndarray, sources: np.ndarray | list[str]) -> np.ndarray:
    """True for the rows whose :func:`built_from` ``origins`` include one of ``sources``."""
    held = [s for s in np.asarray(sources, dtype=object).tolist() if s]
    return np.asarray(np.isin(origins, held).any(axis=1))

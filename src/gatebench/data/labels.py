"""Label values in a user's file: which spellings mean attack and which mean benign.

Users' files spell labels many ways (``1``, ``true``, ``"jailbreak"``,
``"SAFE"``). The accepted forms are one fixed table, so a file reads the same
on every machine; anything else needs an explicit ``--label-map VALUE=attack``
rather than a guess, because a wrong guess would silently invert a metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gatebench.errors import DataError

__all__ = ["ATTACK_FORMS", "BENIGN_FORMS", "LabelColumn", "accepted_forms"]

#: Spellings read as attack (1), compared after :func:`_normal`.
ATTACK_FORMS = (
    "1", "1.0", "true", "yes", "attack", "injection", "prompt-injection", "injected",
    "jailbreak", "malicious", "unsafe", "harmful", "positive",
)  # fmt: skip
#: Spellings read as benign (0), compared after :func:`_normal`.
BENIGN_FORMS = ("0", "0.0", "false", "no", "benign", "safe", "harmless", "negative")
_TABLE = {**dict.fromkeys(ATTACK_FORMS, 1), **dict.fromkeys(BENIGN_FORMS, 0)}
_NAMES = {"attack": 1, "benign": 0}


def _normal(value: Any) -> str:
    # "Prompt Injection", "prompt_injection" and "prompt-injection" are one form.
    return "-".join(str(value).strip().lower().replace("_", " ").split())


def accepted_forms() -> str:
    """The table as one line, for error messages."""
    return f"attack = {', '.join(ATTACK_FORMS)}; benign = {', '.join(BENIGN_FORMS)}"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


class LabelColumn:
    """Reads one file's label column: 1 (attack) or 0 (benign) per value.

    ``label_map`` (``VALUE -> attack|benign``, from ``--label-map``) is read
    before the table, so it can also override it. Values it cannot read are
    collected and :meth:`check` reports them all at once, with the fix, at the
    end of the file. A column mixing kinds (``true`` and ``"attack"``) is
    refused too: it is usually two files merged with different conventions,
    and reading each value on its own would hide that.
    """

    def __init__(self, name: str, label_map: Mapping[str, str]) -> None:
        self.name = name
        self._extra = {_normal(k): _NAMES[v] for k, v in label_map.items()}
        self._kinds: dict[str, tuple[int, Any]] = {}
        self._unknown: dict[str, tuple[int, Any]] = {}

    def read(self, value: Any, line: int) -> int | str:
        """The label of ``value``, or why the row is refused."""
        if value is None or (isinstance(value, float) and value != value):
            return f"missing label (column {self.name!r})"
        if isinstance(value, str) and not value.strip():
            return f"missing label (column {self.name!r})"
        self._kinds.setdefault(_kind(value), (line, value))
        key = _normal(value)
        if key in self._extra:
            return self._extra[key]
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int | float) and value in (0, 1):
            return int(value)
        if isinstance(value, str) and key in _TABLE:
            return _TABLE[key]
        self._unknown.setdefault(key, (line, value))
        return f"unknown label {value!r}"

    def check(self, path: Path, unit: str) -> None:
        """Raise :class:`DataError` if the column mixed kinds or held unknown values."""
        where = f"{path}: column {self.name!r}"
        if len(self._kinds) > 1:
            seen = ", ".join(f"{k} ({unit} {n}: {v!r})" for k, (n, v) in self._kinds.items())
            raise DataError(
                f"{where} mixes label types: {seen}; write one type in the whole column "
                "(e.g. all 0/1)"
            )
        if self._unknown:
            seen = ", ".join(f"{v!r} ({unit} {n})" for n, v in list(self._unknown.values())[:5])
            first = next(iter(self._unknown.values()))[1]
            raise DataError(
                f"{where} holds label values gatebench does not know: {seen}. Accepted, in any "
                f"case: {accepted_forms()}. Map the others with --label-map, e.g. "
                f"--label-map {first}=attack"
            )

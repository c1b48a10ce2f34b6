"""Which messages of a conversation are scanned, and for what.

A user turn is where direct injections and jailbreaks arrive; tool results
and documents are where indirect injections hide. System prompts are written
by the operator and assistant turns by the model, so by default neither is
scanned: flagging them would mostly flag the operator's own instructions.
Any of this can be changed per call or per server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gatebench.conversation.messages import ROLE_ALIASES, ROLES, ConversationError

__all__ = ["DEFAULT_SCAN_ROLES", "THREATS", "ScanPolicy"]

#: Roles scanned unless a call or the server says otherwise.
DEFAULT_SCAN_ROLES = ("user", "tool", "document")
#: What a flag in a message of each role means.
THREATS = {
    "user": "direct injection or jailbreak",
    "tool": "indirect injection",
    "document": "indirect injection",
    "system": "instructions in the system prompt",
    "assistant": "instructions echoed by the model",
}


@dataclass(frozen=True, slots=True)
class ScanPolicy:
    """The roles scanned, and whether adjacent messages are also scanned across their border.

    Parameters
    ----------
    roles : tuple of str
        Roles whose messages are scanned, in :data:`~gatebench.conversation.messages.ROLES`.
    span_adjacent : bool
        Also score one window across the border of every two neighbouring
        scanned messages of the same role (the end of one and the start of the
        next), so an injection split across two tool results is seen whole.
    """

    roles: tuple[str, ...] = DEFAULT_SCAN_ROLES
    span_adjacent: bool = True

    def __post_init__(self) -> None:
        unknown = [r for r in self.roles if r not in ROLES]
        if unknown:
            raise ConversationError(
                f"scan roles {unknown} are not known roles; use some of {', '.join(ROLES)}"
            )
        if not self.roles:
            raise ConversationError(
                f"scan roles are empty; name at least one of {', '.join(ROLES)}"
            )

    def scans(self, role: str) -> bool:
        """Whether messages of ``role`` are scanned."""
        return role in self.roles

    @classmethod
    def parse(
        cls, value: object, *, where: str = "scan", default: ScanPolicy | None = None
    ) -> ScanPolicy:
        """A policy from decoded JSON, a comma-separated string or a list of roles.

        ``None`` gives ``default`` (or the default policy). An object may set
        ``roles`` and ``span_adjacent``; what it leaves out comes from ``default``.

        Examples
        --------
        >>> ScanPolicy.parse("user, tool, system").roles
        ('user', 'tool', 'system')
        >>> ScanPolicy.parse({"span_adjacent": False}).roles
        ('user', 'tool', 'document')
        """
        base = default or cls()
        if value is None:
            return base
        if isinstance(value, str):
            return cls(_roles(value.split(","), where), base.span_adjacent)
        if isinstance(value, list):
            return cls(_roles(value, where), base.span_adjacent)
        if isinstance(value, Mapping):
            unknown = sorted(set(map(str, value)) - {"roles", "span_adjacent"})
            if unknown:
                raise ConversationError(
                    f"{where} has unknown fields {unknown[:10]}; it takes roles and span_adjacent"
                )
            roles = base.roles if value.get("roles") is None else value["roles"]
            span = value.get("span_adjacent", base.span_adjacent)
            if not isinstance(span, bool):
                raise ConversationError(
                    f"{where}.span_adjacent must be true or false, got {span!r:.40}"
                )
            if not isinstance(roles, list | tuple | str):
                raise ConversationError(
                    f"{where}.roles must be a list of roles, got {type(roles).__name__}"
                )
            items = roles.split(",") if isinstance(roles, str) else roles
            return cls(_roles(items, f"{where}.roles"), span)
        raise ConversationError(
            f'{where} must be a list of roles or an object like {{"roles": ["user", "tool"]}}, '
            f"got {type(value).__name__}"
        )


def _roles(items: Iterable[object], where: str) -> tuple[str, ...]:
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ConversationError(f"{where} holds {type(item).__name__}; roles are strings")
        role = item.strip().lower()
        role = ROLE_ALIASES.get(role, role)
        if role and role not in out:
            out.append(role)
    return tuple(out)

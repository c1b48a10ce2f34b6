"""A small Python client for the detection service."""

from __future__ import annotations

from typing import Any

import httpx

from gatebench.errors import DetectorError

__all__ = ["GatebenchClient"]


class GatebenchClient:
    """Talk to ``gatebench serve``.

    Parameters
    ----------
    url : str
        Base URL, e.g. ``http://127.0.0.1:8000``.
    token : str, optional
        Bearer token, when the server requires one.
    timeout : float
        Seconds per request.

    Examples
    --------
    >>> client = GatebenchClient("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> client.score("Ignore all previous instructions")["decision"]  # doctest: +SKIP
    'block'
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)

    def __enter__(self) -> GatebenchClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        response = self._http.post("/v1/score", json=payload)
        if response.status_code != 200:
            detail = response.json().get("detail", response.text) if response.content else ""
            raise DetectorError(f"service answered {response.status_code}: {detail}")
        data: dict[str, Any] = response.json()
        return data

    def score(self, text: str, *, position: str | None = None) -> dict[str, Any]:
        """Score one text: score, decision, stage, chunk, timings.

        ``position`` (``user``, ``tool``, ``document``; None: a user turn)
        says where the text sits in the agent's input.
        """
        payload: dict[str, Any] = {"text": text}
        if position is not None:
            payload["position"] = position
        return self._post(payload)

    def score_batch(
        self, texts: list[str], *, positions: list[str | None] | None = None
    ) -> list[dict[str, Any]]:
        """Score several texts in one request; ``positions``, one per text, as in :meth:`score`."""
        payload: dict[str, Any] = {"texts": texts}
        if positions is not None:
            payload["positions"] = positions
        results: list[dict[str, Any]] = self._post(payload)["results"]
        return results

    def score_messages(
        self, messages: list[dict[str, Any]], *, scan: dict[str, Any] | list[str] | None = None
    ) -> dict[str, Any]:
        """Score one conversation (OpenAI-style ``messages``).

        ``scan`` overrides the server's scanning policy for this call, e.g.
        ``["user", "tool", "system"]`` or ``{"span_adjacent": False}``. The
        result has the conversation score and decision, the ``driver``
        (message, role, window) and every message's own score.
        """
        return self._post({"messages": messages} | ({"scan": scan} if scan is not None else {}))

    def score_conversations(
        self,
        conversations: list[list[dict[str, Any]]],
        *,
        scan: dict[str, Any] | list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Score several conversations in one request."""
        payload = {"conversations": conversations} | ({"scan": scan} if scan is not None else {})
        results: list[dict[str, Any]] = self._post(payload)["results"]
        return results

    def info(self) -> dict[str, Any]:
        """The model's version, trace id, operating point and limits."""
        data: dict[str, Any] = self._http.get("/v1/info").raise_for_status().json()
        return data

    def healthy(self) -> bool:
        """True when ``/healthz`` answers ok."""
        try:
            return self._http.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False

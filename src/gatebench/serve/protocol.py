"""The HTTP/1.1 connection: limits and a deadline on the request head.

uvicorn's default parser (httptools) accepts a request head of any size with
any number of headers, and waits for it indefinitely. Without limits here, a
1 MB header or 10,000 headers reached the app, and a client that sent half
its headers held the connection, and the memory behind it, open
indefinitely. uvicorn's one head limit, ``h11_max_incomplete_event_size``,
applies only to the pure-Python h11 parser, which costs more CPU per request
than scoring a short text, and answers with a bare plain-text 400. So the
head is checked here, as it is parsed and before the app sees it, and a
refusal gets the same JSON ``{"detail": ...}`` body as the app's.
"""

from __future__ import annotations

import asyncio
import functools
import json
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gatebench.serve.model import ServeSettings

__all__ = ["GuardedHttpProtocol", "http_protocol"]

# How long a refused connection keeps reading (and dropping) what the client is
# still sending. Closing a socket with unread data resets it, and the reset can
# destroy the refusal before the client reads it.
_LINGER_S = 2.0


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with limits and a deadline on each request head.

    Parameters
    ----------
    *args, **kwargs
        What uvicorn passes to its protocol.
    max_header_bytes : int
        Most bytes in the request line and headers together (431 above).
    max_headers : int
        Most header fields (431 above).
    header_timeout_s : float
        Seconds a head may take, counted from the connection's opening or from
        the first chunk of a request whose head did not arrive whole. When it
        runs out the client gets 408 if it had started a request, and the
        connection is closed.
    """

    def __init__(
        self,
        *args: Any,
        max_header_bytes: int,
        max_headers: int,
        header_timeout_s: float,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.max_header_bytes = max_header_bytes
        self.max_headers = max_headers
        self.header_timeout_s = header_timeout_s
        self._head_open = False
        self._heads = 0
        self._head_bytes = 0
        self._head_chunk_bytes = 0
        self._header_count = 0
        self._deadline: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._refusal: tuple[int, str] | None = None
        self._refusal_sent = False

    # -- connection ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a connection that never sends a request is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refusal is not None:
            return  # refused: drop what the client is still sending
        was_open, head = self._head_open, self._heads
        super().data_received(data)
        if self._refusal is None and self._head_open and was_open and self._heads == head:
            # The parser holds a header line that never ends without a callback,
            # so a chunk that falls wholly inside one head is counted here.
            self._head_chunk_bytes += len(data)
            self._check_head_bytes(max(self._head_bytes, self._head_chunk_bytes))
        if self._refusal is not None:
            self._send_refusal()
        elif self._head_open and self._deadline is None:
            self._arm()  # only a head that did not arrive whole costs a timer

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._refusal is not None:
            self._send_refusal()  # a pipelined request's refusal waits for the response before it

    # -- parser callbacks --------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_open = True
        self._heads += 1
        self._head_bytes = self._head_chunk_bytes = self._header_count = 0

    def on_url(self, url: bytes) -> None:
        if self._refusal is None:
            self._head_bytes += len(url)
            self._check_head_bytes(self._head_bytes)
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._refusal is not None:
            return
        self._header_count += 1
        self._head_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._header_count > self.max_headers:
            self._refuse(
                431,
                f"more than {self.max_headers:,} request headers; the limit is "
                f"{self.max_headers:,} (send fewer headers, or start the server "
                "with a larger --max-headers)",
            )
            return
        self._check_head_bytes(self._head_bytes)
        if self._refusal is None:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_open = False
        self._disarm()
        if self._refusal is None:
            super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._refusal is None:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refusal is None:
            super().on_message_complete()

    # -- refusals ----------------------------------------------------------------------

    def _check_head_bytes(self, size: int) -> None:
        if size > self.max_header_bytes:
            self._refuse(
                431,
                f"request line and headers exceed the limit of {self.max_header_bytes:,} bytes "
                "(send fewer or shorter headers, or start the server with a larger "
                "--max-header-bytes)",
            )

    def _refuse(self, status: int, detail: str) -> None:
        if self._refusal is None:
            self._refusal = (status, detail)
            self._disarm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout_s, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        self._deadline = None
        if not self._head_open:
            self.transport.close()  # nothing of a request arrived: nobody to answer
            return
        self._refuse(
            408,
            f"request headers not received within {self.header_timeout_s:g} s "
            "(send the request line and headers without pausing)",
        )
        self._send_refusal()

    def _send_refusal(self) -> None:
        if self._refusal is None or self._refusal_sent or self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # sent from on_response_complete, after the response in progress
        self._refusal_sent = True
        status, detail = self._refusal
        body = json.dumps({"detail": detail}).encode()
        head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()]
        head += [
            name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers
        ]
        head.append(
            b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % len(body)
        )
        self.transport.write(b"".join(head) + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self._linger = self.loop.call_later(_LINGER_S, self.transport.close)
        else:
            self.transport.close()


def http_protocol(settings: ServeSettings) -> Any:
    """The protocol factory to give uvicorn as ``http`` (picklable, for worker processes).

    Typed ``Any``: uvicorn declares a protocol class, but only ever calls it.
    """
    return functools.partial(
        GuardedHttpProtocol,
        max_header_bytes=settings.max_header_bytes,
        max_headers=settings.max_headers,
        header_timeout_s=settings.header_timeout_s,
    )

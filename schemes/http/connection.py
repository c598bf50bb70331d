"""h11 over a fetcher `Connection`: the async part only moves bytes.

h11 does the framing (status line, headers, content-length, chunked,
close-delimited); this module feeds it what the socket gives, hands back
events, traces the heads, and knows whether the connection can serve
another request (the pool keeps it only then).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import h11

from fetcher.errors import ProtocolError, UnsafeURL
from fetcher.net import Connection
from fetcher.text import escape

from .request import RequestHead

trace = logging.getLogger("fetcher.trace")

#: Largest response head accepted (status line plus headers).
MAX_HEAD = 64 * 1024
#: Largest read of a Content-Length body (fewer, larger reads for big files).
BODY_RECEIVE = 1 << 20


def _framing(response: h11.Response) -> tuple[int | None, bool]:
    """(Content-Length when it alone frames the body, whether the connection stays open)."""
    lengths = set()
    keep_alive = response.http_version == b"1.1"
    for name, value in response.headers:
        if name == b"transfer-encoding":
            return None, keep_alive
        if name == b"content-length":
            lengths.add(value)
        if name == b"connection" and b"close" in value.lower():
            keep_alive = False
    status = response.status_code
    if len(lengths) != 1 or status < 200 or status in (204, 304):
        return None, keep_alive
    text = lengths.pop()
    return (int(text) if text.isdigit() else None), keep_alive


class HTTPConnection:
    """One HTTP/1.1 connection: h11's state machine plus the socket under it."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        #: Bytes received since the current request was sent: 0 means the
        #: server never started answering (safe to retry elsewhere).
        self.received = 0
        #: Requests sent on this connection (1 for a fresh one).
        self.requests = 0
        self.eof = False
        self.head_received = False
        #: Set when a Content-Length body was read past h11 (see `iter_body`):
        #: whether the connection may carry another request.
        self._bypassed: bool | None = None
        self._length: int | None = None
        self._keep_alive = False

    def __repr__(self) -> str:
        return f"<HTTPConnection {self.connection.host}:{self.connection.port} requests={self.requests}>"

    @property
    def reusable(self) -> bool:
        if self._bypassed is not None:
            return self._bypassed
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    async def send_request(self, head: RequestHead) -> None:
        self.received = 0
        self.requests += 1
        self.head_received = False
        try:
            data = self.h11.send(h11.Request(method=head.method, target=head.target, headers=head.headers))
            data += self.h11.send(h11.EndOfMessage())
        except h11.LocalProtocolError as error:
            raise UnsafeURL(
                f"refusing to send this request: {error}",
                part="request",
                rule="line-injection",
                hint="a URL part or header held a character HTTP does not allow",
            ) from None
        if trace.isEnabledFor(logging.DEBUG):
            for line in head.trace_lines():
                trace.debug("> %s", escape(line))
        assert data is not None
        await self.connection.send_all(data)

    async def next_event(self) -> h11.Event:
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as error:
                raise self._bad_reply(error) from None
            if event is h11.PAUSED:
                raise ProtocolError(f"{self.connection.host}:{self.connection.port} switched protocols unexpectedly")
            if event is not h11.NEED_DATA:
                assert isinstance(event, h11.Event)
                return event
            data = await self.connection.receive_some()
            self.received += len(data)
            self.eof = not data
            try:
                self.h11.receive_data(data)
            except h11.RemoteProtocolError as error:
                raise self._bad_reply(error) from None

    def _bad_reply(self, error: h11.RemoteProtocolError) -> ProtocolError:
        where = f"{self.connection.host}:{self.connection.port}"
        text = str(error)
        if self.eof:
            if self.head_received:
                return ProtocolError(
                    f"{where} closed the connection before the end of the body",
                    hint="run again with -C/--continue to resume",
                )
            return ProtocolError(f"{where} closed the connection without a complete reply", hint="try again")
        return ProtocolError(f"{where} sent a malformed HTTP reply: {escape(text)}")

    async def receive_response(self) -> h11.Response:
        """The final response head; 1xx interim responses are traced and skipped."""
        while True:
            event = await self.next_event()
            if isinstance(event, h11.InformationalResponse | h11.Response):
                # h11 bounds only a head that arrives in pieces; one that
                # arrives in a single read must obey the same limit.
                size = sum(len(name) + len(value) + 4 for name, value in event.headers) + len(event.reason)
                if size > MAX_HEAD:
                    where = f"{self.connection.host}:{self.connection.port}"
                    raise ProtocolError(
                        f"{where} sent a malformed HTTP reply: a response head over {MAX_HEAD // 1024} KiB"
                    )
                self._trace_head(event)
            if isinstance(event, h11.Response):
                self.head_received = True
                self._length, self._keep_alive = _framing(event)
                return event
            if isinstance(event, h11.ConnectionClosed):
                raise ProtocolError(
                    f"{self.connection.host}:{self.connection.port} closed the connection without a reply",
                    hint="try again",
                )

    def _trace_head(self, event: h11.InformationalResponse | h11.Response) -> None:
        if not trace.isEnabledFor(logging.DEBUG):
            return
        reason = event.reason.decode("latin-1")
        trace.debug("< %s", escape(f"HTTP/{event.http_version.decode('latin-1')} {event.status_code} {reason}"))
        for name, value in event.headers.raw_items():
            trace.debug("< %s", escape(f"{name.decode('latin-1')}: {value.decode('latin-1')}"))

    async def iter_body(self) -> AsyncIterator[bytes]:
        """The response body as it arrives, until the message ended.

        A body framed by Content-Length alone is read straight from the
        socket once h11's buffer is drained: h11 would copy every byte twice
        more, which costs a quarter of the time of a large download.  h11
        has framed the head and decided the length; the next request on
        this connection starts with a fresh h11 state machine.
        """
        if self._length is not None:
            async for data in self._counted_body(self._length):
                yield data
            return
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return

    async def _counted_body(self, length: int) -> AsyncIterator[bytes]:
        remaining = length
        while remaining > 0:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as error:
                raise self._bad_reply(error) from None
            if event is h11.NEED_DATA:
                break
            if isinstance(event, h11.Data):
                remaining -= len(event.data)
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return
        if remaining <= 0:
            # The whole body was in h11's buffer: let h11 see its end as usual.
            while not isinstance(await self.next_event(), h11.EndOfMessage):
                pass
            return
        self._bypassed = False
        while remaining > 0:
            data = await self.connection.receive_some(min(remaining, BODY_RECEIVE))
            if not data:
                raise ProtocolError(
                    f"{self.connection.host}:{self.connection.port} closed the connection before the end of the body",
                    hint="run again with -C/--continue to resume",
                )
            self.received += len(data)
            remaining -= len(data)
            yield data
        if self._keep_alive:
            self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
            self._bypassed = True

    def start_next_cycle(self) -> None:
        if self._bypassed is not None:
            self._bypassed = None
            return
        self.h11.start_next_cycle()

    @property
    def switched(self) -> bool:
        """True after a successful CONNECT (the stream now belongs to the tunnel)."""
        return self.h11.our_state is h11.SWITCHED_PROTOCOL

    async def aclose(self) -> None:
        await self.connection.aclose()

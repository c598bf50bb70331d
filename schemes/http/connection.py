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

    def __repr__(self) -> str:
        return f"<HTTPConnection {self.connection.host}:{self.connection.port} requests={self.requests}>"

    @property
    def reusable(self) -> bool:
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
                self._trace_head(event)
            if isinstance(event, h11.Response):
                self.head_received = True
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
        """The response body as it arrives, until h11 says the message ended."""
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return

    def start_next_cycle(self) -> None:
        self.h11.start_next_cycle()

    @property
    def switched(self) -> bool:
        """True after a successful CONNECT (the stream now belongs to the tunnel)."""
        return self.h11.our_state is h11.SWITCHED_PROTOCOL

    async def aclose(self) -> None:
        await self.connection.aclose()

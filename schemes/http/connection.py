"""h11 over a fetcher `Connection`: the async part only moves bytes.

h11 does the framing (status line, headers, content-length, chunked,
close-delimited) and reader.py checks what it parsed against the caps; this
module feeds them what the socket gives, hands back events, traces the
heads, and knows whether the connection can serve another request (the pool
keeps it only then).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from fetcher.errors import ProtocolError, UnsafeURL
from fetcher.handler import DEFAULT_LIMITS, Connection, Limits, current_tap
from fetcher.schemes.http.fasthead import HEAD_END, FastResponse, lean_request, parse_head
from fetcher.schemes.http.reader import ReplyReader
from fetcher.schemes.http.request import RequestHead
from fetcher.schemes.http.response import mask_userinfo
from fetcher.text import escape

if TYPE_CHECKING:
    import h11

    from fetcher.handler import Tap

trace = logging.getLogger("fetcher.trace")

#: Largest read of a Content-Length body (fewer, larger reads for big files),
#: and the most bytes of a close-delimited body joined into one piece.
BODY_RECEIVE = 1 << 20


def _framing(response: h11.Response, where: str) -> tuple[int | None, bool, bool]:
    """(Content-Length when it alone frames the body, whether the body is chunked, whether the connection stays open).

    h11 has accepted the head, so a Transfer-Encoding here is `chunked`.  With
    a Content-Length beside it, where the reply ends is ambiguous (RFC 9112
    §6.3 says to treat it as an error: the shape of response splitting).
    """
    lengths = set()
    chunked = False
    keep_alive = response.http_version == b"1.1"
    for name, value in response.headers:
        if name == b"transfer-encoding":
            chunked = True
        elif name == b"content-length":
            lengths.add(value)
        elif name == b"connection" and b"close" in value.lower():
            keep_alive = False
    status = response.status_code
    if status < 200 or status in (204, 304):
        return None, False, keep_alive
    if chunked and lengths:
        raise ProtocolError(
            f"{where} sent a reply whose end is ambiguous: both Content-Length and Transfer-Encoding: chunked",
            hint="the server (or a proxy before it) frames replies wrongly; tell its operator",
        )
    if chunked or len(lengths) != 1:
        return None, chunked, keep_alive
    text = lengths.pop()
    return (int(text) if text.isdigit() else None), False, keep_alive


class HTTPConnection:
    """One HTTP/1.1 connection: the checked h11 state machine plus the socket under it."""

    def __init__(self, connection: Connection, limits: Limits = DEFAULT_LIMITS) -> None:
        self.connection = connection
        self.reader = ReplyReader(f"{connection.host}:{connection.port}", limits)
        #: Bytes received since the current request was sent: 0 means the
        #: server never started answering (safe to retry elsewhere).
        self.received = 0
        #: Requests sent on this connection (1 for a fresh one).
        self.requests = 0
        #: Set when a Content-Length body was read past h11 (see `iter_body`):
        #: whether the connection may carry another request.
        self._bypassed: bool | None = None
        self._length: int | None = None
        self._chunked = False
        self._keep_alive = False
        #: The archive tap of the current exchange (fetcher.archive.tap), when something records.
        self._tap: Tap | None = None
        #: The current request is a GET (its reply may take the lean path of fasthead.py).
        self._get = False
        #: A GET written by `lean_request` that h11 has not been told of yet.
        self._untold: RequestHead | None = None
        #: Body bytes that came with a head read on the lean path (h11 never saw them).
        self._pending: bytes | None = None

    def __repr__(self) -> str:
        return f"<HTTPConnection {self.connection.host}:{self.connection.port} requests={self.requests}>"

    @property
    def eof(self) -> bool:
        return self.reader.eof

    @property
    def head_received(self) -> bool:
        return self.reader.head_received

    @property
    def reusable(self) -> bool:
        import h11

        if self._bypassed is not None:
            return self._bypassed
        return self.reader.h11.our_state is h11.DONE and self.reader.h11.their_state is h11.DONE

    def unsolicited(self) -> bool:
        """True when something arrived after the last reply ended (the pool then drops this connection).

        Bytes h11 holds past the reply, or bytes or the end of the stream on
        the socket (`Connection.unsolicited`): read now, they would be taken
        as the next request's reply (issue 29).
        """
        h11_state = self.reader._h11
        if h11_state is not None:
            data, closed = h11_state.trailing_data
            if data or closed:
                return True
        return bool(self._pending) or self.connection.unsolicited()

    async def send_request(self, head: RequestHead) -> None:
        self.received = 0
        self.requests += 1
        self.reader.sent_request()
        data = lean_request(head.method, head.target, head.headers) if head.method == "GET" else None
        # A lean request is told to h11 only if its reply needs h11 (see `_fast_response`).
        self._untold = head if data is not None else None
        if data is None:
            data = self._tell_h11(head)
        if trace.isEnabledFor(logging.DEBUG):
            for line in head.trace_lines():
                trace.debug("> %s", escape(line))
        assert data is not None
        self._get = head.method == "GET"
        self._pending = None
        self._tap = current_tap() if head.method != "CONNECT" else None
        if self._tap is not None:
            # The request as sent, with Authorization values masked as in the trace.
            self._tap.request(("\r\n".join(head.trace_lines()) + "\r\n\r\n").encode("latin-1", "replace"))
        await self.connection.send_all(data)

    def _tell_h11(self, head: RequestHead) -> bytes:
        """The request through h11's state machine: its bytes, or UnsafeURL for what HTTP does not allow."""
        import h11

        try:
            data = self.reader.h11.send(h11.Request(method=head.method, target=head.target, headers=head.headers))
            data += self.reader.h11.send(h11.EndOfMessage())
        except h11.LocalProtocolError as error:
            raise UnsafeURL(
                f"refusing to send this request: {error}",
                part="request",
                rule="line-injection",
                hint="a URL part or header held a character HTTP does not allow",
            ) from None
        assert data is not None
        return data

    async def next_event(self) -> h11.Event:
        import h11

        while True:
            event = self.reader.next_event()
            if event is not h11.NEED_DATA:
                assert isinstance(event, h11.Event)
                return event
            data = await self.connection.receive_some()
            self.received += len(data)
            if self._tap is not None:
                self._tap.response(data)
            self.reader.receive_data(data)

    async def receive_response(self) -> h11.Response | FastResponse:
        """The final response head; 1xx interim responses are traced and skipped."""
        with self.connection.within():  # the whole head within --timeout, however it drips
            if self._get:
                fast = await self._fast_response()
                if fast is not None:
                    return fast
            return await self._receive_response()

    async def _fast_response(self) -> FastResponse | None:
        """The lean path: a plain head complete in the first read, parsed without h11 (fasthead.py).

        Whatever it does not take (an incomplete or unusual head) goes to h11
        as received, so h11's rules, caps and messages apply unchanged.
        """
        data = await self.connection.receive_some()
        self.received += len(data)
        if self._tap is not None:
            self._tap.response(data)
        end = data.find(HEAD_END)
        reply = parse_head(data[: end + 4]) if 0 < end < self.reader.limits.header_bytes else None
        if reply is None:
            if self._untold is not None:
                self._tell_h11(self._untold)  # the same request h11 would have written; only its state matters
                self._untold = None
            self.reader.receive_data(data)
            return None
        self.reader.accept_head(reply.headers, len(reply.reason))
        self._trace_head(reply)
        self._length, self._chunked, self._keep_alive = reply.length, reply.chunked, reply.keep_alive
        self._pending = data[end + 4 :]
        self._bypassed = False  # h11 never saw this reply: the connection is kept only once the body ended
        return reply

    async def _receive_response(self) -> h11.Response:
        import h11

        while True:
            event = await self.next_event()
            if isinstance(event, h11.InformationalResponse | h11.Response):
                self._trace_head(event)
            if isinstance(event, h11.Response):
                self._length, self._chunked, self._keep_alive = _framing(event, self.reader.where)
                return event
            if isinstance(event, h11.ConnectionClosed):
                raise ProtocolError(
                    f"{self.connection.host}:{self.connection.port} closed the connection without a reply",
                    hint="try again",
                )

    def _trace_head(self, event: h11.InformationalResponse | h11.Response | FastResponse) -> None:
        if not trace.isEnabledFor(logging.DEBUG):
            return
        reason = event.reason.decode("latin-1")
        trace.debug("< %s", escape(f"HTTP/{event.http_version.decode('latin-1')} {event.status_code} {reason}"))
        for name, value in event.headers.raw_items():
            text = mask_userinfo(value.decode("latin-1"))
            trace.debug("< %s", escape(f"{name.decode('latin-1')}: {text}"))

    async def iter_body(self) -> AsyncIterator[bytes]:
        """The response body as it arrives, until the message ended.

        h11 has framed the head; the body is read past it when it can be:
        a Content-Length body straight from the socket once h11's buffer is
        drained (h11 would copy every byte twice more, a quarter of the time
        of a large download), a chunked body through `ChunkedReader` (h11
        costs one event per chunk: endless 1-byte chunks held a client to
        a few dozen KB/s).  The next request on this connection then starts
        with a fresh h11 state machine.  A close-delimited body goes through
        h11, its pieces joined up to BODY_RECEIVE bytes.
        """
        import h11

        if self._length is not None:
            async for data in self._counted_body(self._length):
                yield data
            return
        if self._chunked:
            async for data in self._chunked_body():
                yield data
            return
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Data):
                parts = [bytes(event.data)]
                size = len(parts[0])
                ended = False
                while size < BODY_RECEIVE:
                    more = self.reader.next_event()
                    if not isinstance(more, h11.Data):
                        ended = isinstance(more, h11.EndOfMessage | h11.ConnectionClosed)
                        break
                    parts.append(bytes(more.data))
                    size += len(more.data)
                yield parts[0] if len(parts) == 1 else b"".join(parts)
                if ended:
                    return
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                return

    async def _chunked_body(self) -> AsyncIterator[bytes]:
        from fetcher.schemes.http.chunked import (
            ChunkedReader,  # a chunked reply only: a plain run never loads it (issue 17)
        )

        limits = self.reader.limits
        chunks = ChunkedReader(
            self.reader.where,
            line_bytes=limits.line_bytes,
            header_bytes=limits.header_bytes,
            header_count=limits.header_count,
        )
        self._bypassed = False
        if self._pending is not None:
            data, self._pending = self._pending, None
        else:
            data = bytes(self.reader.h11.trailing_data[0])
        while True:
            if data:
                piece = chunks.feed(data)
                if piece:
                    yield piece
            if chunks.done:
                break
            data = await self.connection.receive_some()
            if not data:
                chunks.end_of_stream()
            self.received += len(data)
            if self._tap is not None:
                self._tap.response(data)
        if self._keep_alive and not chunks.leftover:
            self.reader.fresh()
            self._bypassed = True

    async def _counted_body(self, length: int) -> AsyncIterator[bytes]:
        import h11

        if self._pending is not None:
            async for data in self._fast_counted_body(length):
                yield data
            return
        remaining = length
        while remaining > 0:
            event = self.reader.next_event()
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
        async for data in self._rest_of_counted_body(remaining):
            yield data

    async def _fast_counted_body(self, length: int) -> AsyncIterator[bytes]:
        """A Content-Length body after a lean-path head: what came with the head, then the socket."""
        assert self._pending is not None
        first, self._pending = self._pending, None
        if len(first) > length:
            # More than the body: the server sent something unasked for; the connection is not reused.
            first = first[:length]
            self._keep_alive = False
        remaining = length - len(first)
        if first:
            yield first
        async for data in self._rest_of_counted_body(remaining):
            yield data

    async def _rest_of_counted_body(self, remaining: int) -> AsyncIterator[bytes]:
        """The last `remaining` bytes of a Content-Length body, straight from the socket."""
        while remaining > 0:
            data = await self.connection.receive_some(min(remaining, BODY_RECEIVE))
            if not data:
                raise ProtocolError(
                    f"{self.connection.host}:{self.connection.port} closed the connection before the end of the body",
                    hint="run again with -C/--continue to resume",
                )
            self.received += len(data)
            remaining -= len(data)
            if self._tap is not None:
                self._tap.response(data)
            yield data
        if self._keep_alive:
            self.reader.fresh()
            self._bypassed = True

    def start_next_cycle(self) -> None:
        if self._bypassed is not None:
            self._bypassed = None
            return
        self.reader.h11.start_next_cycle()

    @property
    def switched(self) -> bool:
        """True after a successful CONNECT (the stream now belongs to the tunnel)."""
        import h11

        return self.reader.h11.our_state is h11.SWITCHED_PROTOCOL

    async def aclose(self) -> None:
        await self.connection.aclose()

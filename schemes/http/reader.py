"""The reply side of one HTTP/1.1 connection, sans-IO: bytes in, checked events out.

h11 frames the reply (status line, headers, chunked or counted bodies,
trailers); this layer adds fetcher's caps from `fetcher.settings.Limits` and
turns every complaint into fetcher's own errors, so the async part in
connection.py only moves bytes and a fuzzer reaches every cap without a
socket.

What a server could make grow, and what bounds it:

* one head (status line plus fields): `header_bytes` in total, even when it
  arrives in one read (h11 bounds only a head still incomplete), no more
  than `header_count` fields, no field line over `line_bytes`;
* interim (1xx) heads before the final one count against the same budget,
  so an endless stream of `103 Early Hints` ends at `header_bytes`;
* whatever h11 holds in its buffer while an element is incomplete is capped
  at `header_bytes`; trailer fields h11 parses obey the count and line caps
  of header fields;
* body data never accumulates here: every Data event is handed on at once.

connection.py reads Content-Length and chunked bodies past h11 (chunked.py
has the caps for chunk-size lines and trailers); h11 frames the heads and
close-delimited bodies.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from fetcher.errors import LimitExceeded, ProtocolError
from fetcher.handler import DEFAULT_LIMITS, Limits
from fetcher.text import escape

if TYPE_CHECKING:
    import h11
    from h11 import RemoteProtocolError

    Event = h11.Event | type[h11.NEED_DATA]

#: What one header field costs in a head besides its name and value (": " and CRLF).
FIELD_OVERHEAD = 4
#: The fixed part of a status line ("HTTP/1.1 200 " and CRLF).
STATUS_OVERHEAD = 15


class ReplyReader:
    """h11's client state machine with fetcher's caps on everything the server sends."""

    def __init__(self, where: str, limits: Limits = DEFAULT_LIMITS) -> None:
        self.where = where
        self.limits = limits
        self._h11: h11.Connection | None = None
        #: The server closed its side (receive_data(b"") was called).
        self.eof = False
        #: The final (non-1xx) head of the current reply has arrived.
        self.head_received = False
        self._head_fields = 0
        self._head_bytes = 0

    @property
    def h11(self) -> h11.Connection:
        """h11's state machine, made when first asked: a bulk lane that frames its own replies
        (fasthead.py) never imports h11 (4.5 ms of start-up)."""
        if self._h11 is None:
            import h11

            self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=self.limits.header_bytes)
        return self._h11

    def fresh(self) -> None:
        """Start over with a new h11 state machine (after a body read past h11)."""
        self._h11 = None
        self.eof = False

    def sent_request(self) -> None:
        """A new request went out: its reply gets a fresh head budget."""
        self.head_received = False
        self._head_fields = 0
        self._head_bytes = 0

    def receive_data(self, data: bytes) -> None:
        import h11

        self.eof = not data
        try:
            self.h11.receive_data(data)
        except h11.RemoteProtocolError as error:
            raise self._bad_reply(error) from None

    def next_event(self) -> Event:
        """The next event, h11.NEED_DATA, or one of fetcher's errors; never another exception."""
        import h11

        try:
            event = self.h11.next_event()
        except h11.RemoteProtocolError as error:
            raise self._bad_reply(error) from None
        if event is h11.PAUSED:
            raise ProtocolError(f"{self.where} switched protocols unexpectedly")
        if isinstance(event, h11.InformationalResponse):
            self._charge(event.headers.raw_items(), STATUS_OVERHEAD + len(event.reason), "interim (1xx) response head")
        elif isinstance(event, h11.Response):
            self._charge(event.headers.raw_items(), STATUS_OVERHEAD + len(event.reason), "response head")
            self.head_received = True
        elif isinstance(event, h11.EndOfMessage) and event.headers:
            self._head_fields = self._head_bytes = 0
            self._charge(event.headers.raw_items(), 0, "trailer")
        assert event is h11.NEED_DATA or isinstance(event, h11.Event)
        return event

    def accept_head(self, fields: Iterable[tuple[bytes, bytes]], reason_bytes: int) -> None:
        """A final head read on the lean path (fasthead.py): the same caps as one h11 framed."""
        self._charge(fields, STATUS_OVERHEAD + reason_bytes, "response head")
        self.head_received = True

    def accept_counted(self, count: int, size: int, longest: int) -> bool:
        """A final head whose reader counted it (the lane: `count` fields, `size` bytes with the status
        line, `longest` bytes in its longest field line): True when `accept_head` would take it."""
        limits = self.limits
        if longest > limits.line_bytes or count > limits.header_count or size > limits.header_bytes:
            return False
        self._head_fields = count
        self._head_bytes = size
        self.head_received = True
        return True

    def _charge(self, fields: Iterable[tuple[bytes, bytes]], base: int, what: str) -> None:
        """Count a head's fields and bytes against the caps (interim heads add up)."""
        limits = self.limits
        size = base
        count = 0
        for name, value in fields:
            line = len(name) + len(value) + FIELD_OVERHEAD
            if line > limits.line_bytes:
                raise LimitExceeded(f"bytes in one {what} field ({escape(name.decode('latin-1'))[:64]})",
                                    limits.line_bytes, "line_bytes")  # fmt: skip
            size += line
            count += 1
        self._head_fields += count
        self._head_bytes += size
        if self._head_fields > limits.header_count:
            raise LimitExceeded(f"{what} fields", limits.header_count, "header_count")
        if self._head_bytes > limits.header_bytes:
            raise LimitExceeded(f"bytes of {what}", limits.header_bytes, "header_bytes")

    def _bad_reply(self, error: RemoteProtocolError) -> ProtocolError:
        if error.error_status_hint == 431:
            # h11's buffer cap: an incomplete head, chunk-size line or trailer block grew past it.
            what = "bytes in one chunk-size line or trailer block" if self.head_received else "bytes of response head"
            return LimitExceeded(what, self.limits.header_bytes, "header_bytes")
        if self.eof:
            if self.head_received:
                return ProtocolError(
                    f"{self.where} closed the connection before the end of the body",
                    hint="run again with -C/--continue to resume",
                )
            return ProtocolError(f"{self.where} closed the connection without a complete reply", hint="try again")
        return ProtocolError(f"{self.where} sent a malformed HTTP reply: {escape(str(error))}")

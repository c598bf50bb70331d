"""The HTTP bulk lane: pipelined GETs of plain documents over kept-alive connections.

A worker of fetcher/bulk/lanes.py keeps up to DEPTH requests in flight on one
HTTP/1.1 connection (RFC 9112 §9.3.2: a client may pipeline idempotent
requests) and reads the replies in order from one buffer, so one read
usually carries several small replies and the per-URL cost is parsing a
head and writing a file.  What a reply means is judged by verdict.py, as on
the task path (handler.py); the lane takes only what it can answer exactly as
the task path would:

* a reply whose head fasthead.py accepts, framed by Content-Length: 2xx
  documents (decoded as there), error statuses with their error page,
  redirects (the target is then retrieved on the task path, which applies
  the redirect policy and the guard);
* anything else (chunked or close-delimited bodies, 1xx, HTTP/1.0, a head
  fasthead.py hands to h11 such as two Content-Lengths, a 206, a large
  error page) ends pipelining for that origin: the connection is closed,
  and that URL and every URL whose request was in flight are retrieved on
  the task path, one request each.  At most one batch per worker is asked
  twice.  Other workers of the origin read the replies they already asked
  for, then send no more.
* a connection the server ends after a reply (`Connection: close`: nginx's
  `keepalive_requests`), or closes or resets where the next reply would
  start (keep-alive limits, idle timeouts), is replaced and the unanswered
  requests are sent again: they are idempotent GETs and no byte of their
  replies had arrived.  A new connection that carried at most one reply
  ends pipelining for the origin instead (a server that closes after each).
* a connection that received bytes (or its end) while nothing was asked of
  it is not asked again: they would be read as the next reply.

What `lane_key` refuses never enters: credentials (URL, -u or netrc),
proxies, WARC recording, -v traces, resumes, -N conditions, --max-time,
--max-filesize, a request fasthead.py would not write.
"""

from __future__ import annotations

import os
import weakref
from collections import deque
from collections.abc import Hashable
from typing import TYPE_CHECKING

from fetcher.errors import FetchError, ProtocolError, Timeout
from fetcher.handler import Connection, current_budget, guard
from fetcher.schemes.http import response as rules
from fetcher.schemes.http.connection import HTTPConnection
from fetcher.schemes.http.decoding import decoder_for
from fetcher.schemes.http.fasthead import HEAD_END, lean_request, parse_head
from fetcher.schemes.http.fields import Fields
from fetcher.schemes.http.proxy import choose_proxy
from fetcher.schemes.http.reader import STATUS_OVERHEAD, ReplyReader
from fetcher.schemes.http.request import build_request, origin_of
from fetcher.schemes.http.verdict import Asked, Document, ErrorPage, Failure, Redirect, judge
from fetcher.url import URL, HttpURL

if TYPE_CHECKING:
    from fetcher.handler import LaneItem, LaneWork
    from fetcher.handler import SessionHost as Client  # what a lane sees of the client

#: Requests in flight on one connection; more are sent when half have been answered.
DEPTH = 32
#: One read from the socket.
RECEIVE = 256 * 1024


#: Per client and origin, the bytes of a lane request after its target (` HTTP/1.1` and the
#: header fields), or None when that origin's requests cannot take the lane.
_REQUEST_TAILS: weakref.WeakKeyDictionary[Client, dict[Hashable, bytes | None]] = weakref.WeakKeyDictionary()


def _request_tail(url: HttpURL, client: Client) -> bytes | None:
    """What follows `GET <target>` in every lane request to `url`'s origin (lean_request's bytes), or None."""
    settings = client.settings
    try:
        guard.check_headers(settings.headers, settings.user_agent)
    except FetchError:
        return None
    if choose_proxy(url, settings.proxy, os.environ) is not None or client.netrc_credentials(url.host) is not None:
        return None
    head = build_request(url, user_agent=settings.user_agent, extra=settings.headers)
    data = lean_request("GET", head.target, head.headers)
    if data is None:
        return None
    start = 4 + len(head.target.encode("ascii"))
    return data[start:]


def lane_key(url: URL, client: Client, *, resume: bool) -> Hashable | None:
    """The origin, when `url` may take the lane (see the module docstring); else None."""
    from fetcher.handler import admits  # bulk runs only; the lanes module is not loaded for one fetch
    if (
        not client.settings.pipeline
        or not isinstance(url, HttpURL)
        or not admits(url, client, resume=resume, own_exchange=True)
    ):
        return None
    key = origin_of(url)
    tails = _REQUEST_TAILS.get(client)  # not setdefault: that makes a weak reference per call
    if tails is None:
        tails = _REQUEST_TAILS[client] = {}
    tail = tails.get(key, False)
    if tail is False:
        tail = tails[key] = _request_tail(url, client)
    if tail is None:
        return None
    target = url.target
    # lean_request's [!-~]+: ASCII, printable, no space.
    if not target.isascii() or not target.isprintable() or " " in target:
        return None
    return key


class _Broken(Exception):
    """The connection cannot carry the lane on: close it, retrieve what was in flight on the task path."""

    def __init__(self, *, disable: bool) -> None:
        self.disable = disable


class _Closed(Exception):
    """The server closed the connection before any byte of the next reply: send the requests again."""


async def run_lane(work: LaneWork) -> None:
    """Serve the lane's URLs until it has none left (see the module docstring)."""
    lane = _Lane(work)
    try:
        await lane.run()
    finally:
        await lane.close()


class _Lane:
    def __init__(self, work: LaneWork) -> None:
        self.work = work
        self.client = work.client
        self.limits = self.client.settings.limits
        #: What every lane request asks: a plain GET (admission keeps resumes and conditions off the lane).
        self.asked = Asked(follow=self.client.settings.follow_redirects)
        self.connection: Connection | None = None
        self.tail: bytes | None = None
        self.route: Hashable = None
        self.buffer = bytearray()
        self.position = 0
        self.outstanding: deque[LaneItem] = deque()
        #: Replies read on the current connection, and whether it came from the pool
        #: (a pooled one may have been closed by the server while idle).
        self.answered = 0
        self.reused = False
        #: The last reply read said `Connection: close`.
        self.closing = False
        self.reader: ReplyReader | None = None
        self._modified: dict[bytes, float | None] = {}
        #: The URL whose reply is being read, and the one whose time rules (net.Budget) are current:
        #: a URL gets its budget at its first read, and most find their reply already buffered.
        self._reading: LaneItem | None = None
        self._budget_for: LaneItem | None = None

    async def run(self) -> None:
        work = self.work
        while True:
            if len(self.outstanding) <= DEPTH // 2 and not work.retired:
                room = DEPTH - len(self.outstanding)
                if work.disabled:
                    # Another worker found the origin unfit for the lane: no more requests go out here,
                    # but the replies already asked for are read first (they are in step, and waiting).
                    # Never `take` and loop without reading: that spun without a checkpoint (issue 29).
                    if not self.outstanding:
                        await self._general(await work.wait(room))
                        continue
                else:
                    more = work.take(room) if self.outstanding else await work.wait(room)
                    if work.disabled:  # while this worker waited
                        await self._general(more)
                        continue
                    if more:
                        await self._send(more)
            if not self.outstanding:
                if work.retired:
                    return
                continue
            try:
                await self._reply(self.outstanding[0])
                if self.closing:
                    await self._resend()
            except _Closed:
                await self._resend()
            except _Broken as broken:
                if broken.disable:
                    work.disable()
                await self._drop_connection()
                await self._general(self._take_outstanding())

    # -- connection ------------------------------------------------------------

    async def _connect(self, url: HttpURL) -> None:
        from fetcher.handler import Session

        if self.tail is None:
            self.tail = _REQUEST_TAILS[self.client][origin_of(url)]
            self.route = (*origin_of(url), None)
        pooled = await self.client.pool.take(self.route)
        # A pooled connection is one whose last reply was read to its end (pool.give is called only then).
        self.reused = isinstance(pooled, HTTPConnection) and not pooled.connection.closed
        if self.reused:
            assert isinstance(pooled, HTTPConnection)
            self.connection = pooled.connection
        else:
            if pooled is not None:
                await pooled.aclose()
            session = Session(self.client, url)
            self.connection = await session.connect(url.host, url.port, scheme=url.scheme, tls=url.scheme == "https")
        self.reader = ReplyReader(f"{url.host}:{url.port}", self.limits)
        self.buffer = bytearray()
        self.position = 0
        self.answered = 0

    async def _send(self, items: list[LaneItem]) -> None:
        if (
            self.connection is not None
            and not self.outstanding
            and (self.position < len(self.buffer) or self.connection.unsolicited())
        ):
            # Bytes (or the end) arrived while nothing was asked: they would be read as the next reply.
            await self._drop_connection()
        if self.connection is None:
            try:
                await self._connect(items[0].url)  # type: ignore[arg-type]
            except FetchError as error:
                await self.work.failed(items[0], error)
                await self._general(items[1:])
                return
        assert self.tail is not None and self.connection is not None
        tail = self.tail
        data = b"".join(b"GET " + item.url.target.encode("ascii") + tail for item in items)  # type: ignore[attr-defined]
        self.outstanding.extend(items)
        try:
            await self.connection.send_all(data)
        except FetchError:
            # A pooled connection the server closed: the replies (none) tell; read them as usual.
            pass

    async def _resend(self) -> None:
        """The connection ended before the next reply: what is in flight goes again on a new one.

        It ended after a reply that said `Connection: close` (how nginx's
        `keepalive_requests`, 1,000 by default, and Apache's
        `MaxKeepAliveRequests` end every busy connection), or with a close or
        reset where the next reply would start.  The requests sent after the
        last reply were never answered, so they are sent again, each once,
        and no reply read is asked for twice.  A new connection that carried
        one reply or none means a server that closes after each: pipelining
        gains nothing there, so the origin takes the task path.
        """
        once = self.answered <= 1 and not self.reused
        await self._drop_connection()
        items = self._take_outstanding()
        if once:
            self.work.disable()
            await self._general(items)
        elif items:
            await self._send(items)

    async def _drop_connection(self) -> None:
        self.closing = False
        if self.connection is not None:
            connection, self.connection = self.connection, None
            await connection.aclose()

    async def close(self) -> None:
        """Give a connection with nothing in flight back to the pool; close any other."""
        connection, self.connection = self.connection, None
        if connection is None:
            return
        if self.outstanding or self.position < len(self.buffer) or connection.closed:
            await connection.aclose()
            return
        await self.client.pool.give(self.route, HTTPConnection(connection, self.limits))

    def _take_outstanding(self) -> list[LaneItem]:
        items = list(self.outstanding)
        self.outstanding.clear()
        return items

    async def _general(self, items: list[LaneItem]) -> None:
        for item in items:
            await self.work.general(item)

    # -- one reply -------------------------------------------------------------

    async def _fill(self) -> bool:
        assert self.connection is not None and self._reading is not None
        if self._reading is not self._budget_for:
            self._budget_for = self._reading
            current_budget.set(self.client.budget(self._reading.url))
        if self.position and self.position == len(self.buffer):
            self.buffer.clear()
            self.position = 0
        elif self.position > RECEIVE:
            del self.buffer[: self.position]
            self.position = 0
        data = await self.connection.receive_some(RECEIVE)
        self.buffer += data
        return bool(data)

    async def _reply(self, item: LaneItem) -> None:
        url = item.url
        assert isinstance(url, HttpURL) and self.reader is not None
        self._reading = item
        limit = self.limits.header_bytes
        try:
            while (end := self.buffer.find(HEAD_END, self.position)) < 0:
                if len(self.buffer) - self.position > limit:
                    raise _Broken(disable=True)  # the task path reports the cap
                if not await self._fill():
                    if len(self.buffer) == self.position:
                        raise _Closed
                    raise _Broken(disable=True)
        except FetchError as error:  # silent, too slow, reset: this URL fails as on the task path
            if not isinstance(error, Timeout) and len(self.buffer) == self.position and (self.answered or self.reused):
                # A reset where the next reply would start, on a connection that answered (or was
                # idle in the pool): a server ending the connection abruptly, its unread requests
                # with it.  Nothing of this reply arrived: sent again, as after a close.
                raise _Closed from None
            self.outstanding.popleft()
            await self.work.failed(item, error)
            raise _Broken(disable=False) from None
        head = bytes(self.buffer[self.position : end + 4])
        reply = parse_head(head)
        if reply is None or reply.length is None or reply.status_code == 206:
            raise _Broken(disable=True)
        self.reader.sent_request()
        fields = Fields(reply.headers)
        if not self.reader.accept_counted(fields.count, STATUS_OVERHEAD + len(reply.reason) + fields.size,
                                          fields.longest):  # fmt: skip
            raise _Broken(disable=True)  # over a cap: the task path reports it
        verdict = judge(reply.status_code, reply.reason, fields, url, self.asked)
        if not isinstance(verdict, (Document, Redirect, Failure)):
            raise _Broken(disable=True)  # not a plain GET's (no resume or condition takes the lane)
        if not isinstance(verdict, Document) and reply.length > rules.ERROR_BODY_LIMIT:
            raise _Broken(disable=True)  # a large error page: the task path reads what it shows of it
        self.position = end + 4
        self.outstanding.popleft()
        self.answered += 1
        # The server ends the connection after this reply (read whole, as any other); `run` then
        # sends what is still in flight on a new connection.
        self.closing = not reply.keep_alive
        if isinstance(verdict, Document):
            await self._document(item, url, fields, reply.length, verdict.status)
            return
        body = await self._body_bytes(item, reply.length)
        if isinstance(verdict, Redirect):
            await self.work.general(item, redirect=verdict.target)  # followed under the redirect policy and the guard
            return
        if verdict.body == "page":
            page = ErrorPage(fields.codings, max_encodings=self.limits.encodings, max_ratio=self.limits.decoded_ratio)
            page.feed(body)
            page.end()
            verdict.error.body = page.page
        await self.work.failed(item, verdict.error)

    async def _body_bytes(self, item: LaneItem, length: int) -> bytes:
        """A small body (an error page) read whole; a broken connection reports the URL and ends the lane's use."""
        parts: list[bytes] = []
        try:
            async for piece in self._pieces(length):
                parts.append(piece)
        except FetchError as error:
            await self.work.failed(item, error)
            raise _Broken(disable=False) from None
        return b"".join(parts)

    async def _pieces(self, length: int):  # type: ignore[no-untyped-def]
        """The next `length` bytes of the stream, as they are buffered or arrive."""
        remaining = length
        while remaining:
            available = len(self.buffer) - self.position
            if not available:
                if not await self._fill():
                    raise ProtocolError(
                        f"{self.connection.host}:{self.connection.port} closed the connection "  # type: ignore[union-attr]
                        "before the end of the body",
                        hint="run again with -C/--continue to resume",
                    )
                continue
            take = min(available, remaining)
            piece = bytes(self.buffer[self.position : self.position + take])
            self.position += take
            remaining -= take
            yield piece

    async def _document(self, item: LaneItem, url: HttpURL, fields: Fields, length: int, status: int = 200) -> None:
        work = self.work
        settings = self.client.settings
        try:
            decoder = None
            if fields.codings and not settings.raw:
                decoder = decoder_for(fields.codings, max_encodings=self.limits.encodings,
                                      max_ratio=self.limits.decoded_ratio)  # fmt: skip
            writer = work.writer(item, fields.content_type)
        except FetchError as error:
            # The reply must still be read to keep the connection in step.
            try:
                async for _ in self._pieces(length):
                    pass
            except FetchError:
                await work.failed(item, error)
                raise _Broken(disable=False) from None
            await work.failed(item, error)
            return
        on_chunk = work.on_chunk
        try:
            if decoder is None and len(self.buffer) - self.position >= length:
                # The whole body came with the head (a small file, most of a bulk run): taken as it is.
                end = self.position + length
                if length:
                    writer.write(bytes(self.buffer[self.position : end]))
                    if on_chunk is not None:
                        on_chunk(url, length)
                self.position = end
            else:
                async for piece in self._pieces(length):
                    for data in decoder.feed(piece) if decoder is not None else (piece,):
                        writer.write(data)
                        if on_chunk is not None:
                            on_chunk(url, len(data))
            if decoder is not None:
                for data in decoder.flush():
                    writer.write(data)
                    if on_chunk is not None:
                        on_chunk(url, len(data))
            suggested = rules.disposition_filename(fields.disposition) if fields.disposition else None
            modified = self._modified_time(fields.last_modified)
            result = writer.finish(modified, suggested, fields.etag, {"status": status})
        except FetchError as error:
            # A read, decoding or disk failure part-way: the stream is out of step with the replies.
            writer.abandon()
            await work.failed(item, error)
            raise _Broken(disable=False) from None
        except BaseException:
            writer.abandon()
            raise
        await work.done(item, result)

    def _modified_time(self, value: bytes | None) -> float | None:
        if value is None:
            return None
        cached = self._modified.get(value, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        when = rules.last_modified(value.decode("latin-1"))
        stamp = when.timestamp() if when is not None else None
        if len(self._modified) < 1024:
            self._modified[value] = stamp
        return stamp

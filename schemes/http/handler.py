"""http: and https: (RFC 1738 §3.3) over h11: one GET per URL, pooled connections.

The rules live in request.py, response.py, verdict.py, decoding.py and
proxy.py (pure); connection.py moves bytes through h11.  This module strings
them together: choose a route (direct, proxy, CONNECT tunnel), take a pooled
connection or open one, retry once when a pooled connection turns out to be
closed, then do what verdict.py's judgement of the reply says (the same one
the bulk lane gets): a Resource, a redirect (through `session.follow`, which
applies the guard and the redirect-scheme policy), a resume started over, or
an error with its page.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from fetcher.errors import AuthError, ConnectError, FetchError, ProtocolError
from fetcher.handler import Advisory, Resource, Session, check_headers, current_tap
from fetcher.schemes.http import lane
from fetcher.schemes.http import response as rules
from fetcher.schemes.http.connection import HTTPConnection
from fetcher.schemes.http.decoding import Decoder, decoder_for
from fetcher.schemes.http.fasthead import FastResponse
from fetcher.schemes.http.fields import Fields
from fetcher.schemes.http.hooks import Hooks
from fetcher.schemes.http.proxy import choose_proxy
from fetcher.schemes.http.request import ACCEPT_ENCODING, RequestHead, build_connect, build_request, origin_of, public
from fetcher.schemes.http.verdict import Asked, Document, ErrorPage, Failure, NotModified, Redirect, StartOver, judge
from fetcher.url import URL, HttpURL

if TYPE_CHECKING:
    from fetcher.handler import LaneWork, SessionHost

if TYPE_CHECKING:
    import h11

    #: A final response head: h11's, or the lean path's for a plain one (fasthead.py).
    Reply = h11.Response | FastResponse

log = logging.getLogger("fetcher")
trace = logging.getLogger("fetcher.trace")


@dataclass(frozen=True)
class Route:
    """How bytes reach the origin: directly, through a proxy, or through a CONNECT tunnel."""

    proxy: HttpURL | None

    def key(self, url: HttpURL) -> Hashable:
        proxy = None if self.proxy is None else origin_of(self.proxy)
        return (*origin_of(url), proxy)


class Lease:
    """A connection lent to one response: back to the pool only when the body was read to the end."""

    def __init__(self, session: Session, key: Hashable, connection: HTTPConnection) -> None:
        self.session = session
        self.key = key
        self.connection = connection
        self.done = False

    async def release(self) -> None:
        """The body ended: keep the connection if h11 says it can carry another request."""
        if self.done:
            return
        self.done = True
        if self.connection.reusable:
            self.connection.start_next_cycle()
            await self.session.pool.give(self.key, self.connection)
        else:
            await self.connection.aclose()

    async def aclose(self) -> None:
        """Called when the resource closes: a body not read to its end poisons the connection."""
        if self.done:
            return
        self.done = True
        await self.connection.aclose()


class Handler(Hooks):
    scheme = "http"
    default_port = 80

    # -- the bulk lane (fetcher/bulk/lanes.py, lane.py): pipelined plain GETs -------

    def lane_key(self, url: URL, client: SessionHost, *, resume: bool) -> Hashable | None:
        return lane.lane_key(url, client, resume=resume)

    async def run_lane(self, work: LaneWork) -> None:
        await lane.run_lane(work)

    #: --links and --json on a document: its HTML documents are pages whose links the core lists
    #: (fetcher.cli.render.links_listing reads them with the mirror's extractor, fetcher.mirror.links).
    page_links = True

    async def open(self, url: URL, session: Session) -> Resource:
        assert isinstance(url, HttpURL)
        settings = session.settings
        proxy = choose_proxy(url, settings.proxy, os.environ)
        route = Route(proxy)
        credentials = await self._credentials(url, session)
        proxy_credentials = (proxy.user, proxy.password) if proxy is not None and proxy.user is not None else None
        offset = session.offset
        check_headers(settings.headers, settings.user_agent)
        head = build_request(
            url,
            user_agent=settings.user_agent,
            credentials=credentials,
            offset=offset,
            via_proxy=proxy is not None and url.scheme == "http",
            proxy_credentials=proxy_credentials if url.scheme == "http" else None,
            extra=settings.headers,
            method="HEAD" if settings.head else "GET",
        )
        validators = session.validators if offset > 0 else None
        condition = validators.if_range() if validators is not None else None
        if condition is not None and not any(name.lower() == "if-range" for name, _ in head.headers):
            head.headers.append(("If-Range", condition))  # a changed document comes whole (200), not as a tail
        since = session.notes.modified_since if offset == 0 else None
        if since is not None:  # a mirror's -N: the local copy's ETag (checked when stored) and time
            tag = session.notes.etag
            if tag is not None:
                head.headers.append(("If-None-Match", tag))
            from email.utils import formatdate  # -N only

            head.headers.append(("If-Modified-Since", formatdate(since, usegmt=True)))
        conditional = session.notes.modified_since is not None
        asked = Asked(offset=offset, validators=validators, conditional=conditional, follow=settings.follow_redirects,
                      credentials=credentials is not None, head=settings.head)  # fmt: skip
        lease, reply = await self._exchange(url, session, route, head)
        return await self._outcome(url, session, route, head, asked, lease, reply)

    # -- credentials ---------------------------------------------------------

    async def _credentials(self, url: HttpURL, session: Session) -> tuple[str, str | None] | None:
        """URL userinfo, else -u or ~/.netrc; -u and the first URL's userinfo never leave their origin."""
        if url.user is not None:
            return url.user, url.password
        origin = session.origin
        same_origin = isinstance(origin, HttpURL) and origin_of(origin) == origin_of(url)
        found: tuple[str, str | None] | None
        if same_origin:
            assert isinstance(origin, HttpURL)
            found = (origin.user, origin.password) if origin.user is not None else session.credentials(url.host)
        else:
            found = session.credentials(url.host)  # -u only with --location-trusted (Session decides)
        if found is None:
            return None
        user, password = found
        if password is None:
            password = await session.ask(f"Password for {user} at {url.host}: ", secret=True)
        return user, password

    # -- connections ---------------------------------------------------------

    async def _connect(self, url: HttpURL, session: Session, route: Route) -> HTTPConnection:
        tls = url.scheme == "https"
        limits = session.settings.limits
        if tls and session.settings.insecure:
            log.warning(
                "WARNING: --insecure: the TLS certificate of %s is NOT checked; "
                "anyone on the network path can read and change this transfer",
                url.host,
            )
        if route.proxy is None:
            connection = await session.connect(url.host, url.port, scheme=url.scheme, tls=tls)
            return HTTPConnection(connection, limits)
        proxy = route.proxy
        connection = await session.connect(proxy.host, proxy.port, scheme="http", what="proxy port")
        if not tls:
            return HTTPConnection(connection, limits)
        try:
            await self._tunnel(url, session, HTTPConnection(connection, limits), proxy)
            await connection.start_tls(session.ssl_context(), url.host)
        except BaseException:
            await connection.aclose()
            raise
        return HTTPConnection(connection, limits)

    async def _tunnel(self, url: HttpURL, session: Session, connection: HTTPConnection, proxy: HttpURL) -> None:
        """CONNECT host:port through the proxy; afterwards the stream is the origin's."""
        credentials = (proxy.user, proxy.password) if proxy.user is not None else None
        await connection.send_request(build_connect(url, user_agent=session.settings.user_agent,
                                                    proxy_credentials=credentials))  # fmt: skip
        reply = await connection.receive_response()
        where = f"proxy {proxy.host}:{proxy.port}"
        if reply.status_code == 407:
            raise AuthError(
                f"{where} wants a login (HTTP 407)", hint="put the login in the proxy URL: http://USER:PASS@HOST:PORT"
            )
        if not 200 <= reply.status_code < 300:
            status = rules.status_line(reply.status_code, reply.reason.decode("latin-1"))
            raise ConnectError(f"{where} refused to connect to {url.host}:{url.port}: {status}")
        data, _closed = connection.reader.h11.trailing_data
        if data:
            raise ProtocolError(f"{where} sent data before the TLS handshake")

    async def _exchange(self, url: HttpURL, session: Session, route: Route, head: RequestHead) -> tuple[Lease, Reply]:
        """Send the request and read the reply head, on a pooled connection if one is idle.

        A pooled connection the server already closed fails before any reply
        byte; the request is then sent once more on a fresh connection.
        """
        key = route.key(url)
        pooled = await session.pool.take(key)
        for attempt in (1, 2):
            if attempt == 1 and isinstance(pooled, HTTPConnection):
                connection = pooled
                trace.debug("* reusing the connection to %s:%s", url.host, url.port)
            else:
                connection = await self._connect(url, session, route)
            reused = connection is pooled
            try:
                await connection.send_request(head)
                reply = await connection.receive_response()
            except ProtocolError:
                await connection.aclose()
                if reused and connection.received == 0:
                    trace.debug("* the pooled connection was closed by the server; retrying on a new one")
                    continue
                raise
            except BaseException:
                await connection.aclose()
                raise
            return Lease(session, key, connection), reply
        raise AssertionError("unreachable")  # pragma: no cover

    # -- replies: what they mean is verdict.py's; this moves the bytes it says to ------------------

    async def _outcome(
        self, url: HttpURL, session: Session, route: Route, head: RequestHead, asked: Asked, lease: Lease, reply: Reply
    ) -> Resource:
        fields = Fields(reply.headers.raw_items())
        try:
            verdict = judge(reply.status_code, reply.reason, fields, url, asked)
            if isinstance(verdict, Document):
                resource = self._document(url, session, lease, fields, verdict)
                version = reply.http_version.decode("ascii", "replace")
                resource.metadata["status_line"] = f"HTTP/{version} {verdict.status} {reply.reason.decode('latin-1')}"
                if verdict.restart is not None:
                    resource.metadata["restart"] = verdict.restart
                return resource
            if isinstance(verdict, Failure):
                if verdict.body == "page":
                    verdict.error.body = await self._error_body(lease, fields)
                elif verdict.body == "drop":
                    await self._discard(lease, fields)
                raise verdict.error
            if isinstance(verdict, StartOver):
                if verdict.body == "drop":
                    await self._discard(lease, fields)
                else:
                    await lease.aclose()
                return await self._start_over(url, session, route, head, asked, verdict.reason)
            await self._discard(lease, fields)
        except BaseException:
            await lease.aclose()
            raise
        if isinstance(verdict, Redirect):
            resource = await session.follow(verdict.target)
            if asked.offset and resource.kind == "document" and not resource.offset:  # another scheme's, perhaps
                resource.metadata.setdefault("restart", rules.ignored_range(fields.headers, asked.validators))
            return resource
        headers = fields.headers
        if isinstance(verdict, NotModified):
            return Resource(url, "advisory", advisory=Advisory("not modified", f"{public(url)} is unchanged"),
                            metadata={"status": 304, "headers": headers})  # fmt: skip
        trace.debug("* the local part already holds all %d bytes", asked.offset)  # Complete
        return Resource(url, "document", content_type=fields.content_type, size=asked.offset, body=_nothing(),
                        offset=asked.offset, metadata={"status": 416, "headers": headers})  # fmt: skip

    def _document(self, url: HttpURL, session: Session, lease: Lease, fields: Fields, verdict: Document) -> Resource:
        limits = session.settings.limits
        decoder = None
        if not session.settings.raw:
            decoder = decoder_for(fields.codings, max_encodings=limits.encodings, max_ratio=limits.decoded_ratio)
        metadata = {"status": verdict.status, "headers": fields.headers, "etag": fields.etag}
        if fields.codings:
            metadata["content_encoding"] = ", ".join(fields.codings[: limits.encodings + 1])
        modified = fields.last_modified
        return Resource(
            url,
            "document",
            content_type=fields.content_type,
            size=None if decoder is not None else verdict.total,
            body=_body(lease, decoder),
            offset=verdict.start,
            modified=rules.last_modified(modified.decode("latin-1")) if modified is not None else None,
            filename=rules.disposition_filename(fields.disposition),
            metadata=metadata,
            closer=lease.aclose,
        )

    async def _start_over(
        self, url: HttpURL, session: Session, route: Route, head: RequestHead, asked: Asked, reason: str
    ) -> Resource:
        """The whole document again, without Range: a resume that cannot continue the part on disk.

        `reason` goes with the resource (`metadata["restart"]`) for the caller to print.
        """
        trace.debug("* %s; starting over", reason)
        dropped = ("range", "if-range", "accept-encoding")
        fresh = RequestHead(
            head.method,
            head.target,
            [(name, value) for name, value in head.headers if name.lower() not in dropped]
            + [("Accept-Encoding", ACCEPT_ENCODING)],
        )
        credentials = any(name == "Authorization" for name, _ in head.headers)
        whole = replace(asked, offset=0, validators=None, credentials=credentials)
        lease, reply = await self._exchange(url, session, route, fresh)
        resource = await self._outcome(url, session, route, fresh, whole, lease, reply)
        if resource.kind == "document" and not resource.offset:
            resource.metadata.setdefault("restart", reason)
        return resource

    async def _read_page(self, lease: Lease, page: ErrorPage) -> bytes:
        """Read a body into `page` up to its cut; the connection is kept only when the body was read whole."""
        try:
            async for data in lease.connection.iter_body():
                if not page.feed(data):
                    break
            else:
                page.end()
        except FetchError:
            page.broken()
        if page.short is None:
            await lease.release()
        else:
            await lease.aclose()
            _archived_short(page.short)
        return page.page

    async def _discard(self, lease: Lease, fields: Fields) -> None:
        """Read a small redirect body so the connection can be reused; drop a large one."""
        length = fields.length
        if length is not None and length > rules.ERROR_BODY_LIMIT:
            await lease.aclose()
            _archived_short("length")
            return
        await self._read_page(lease, ErrorPage([], max_encodings=0, max_ratio=0))

    async def _error_body(self, lease: Lease, fields: Fields) -> bytes:
        limits = lease.connection.reader.limits
        page = ErrorPage(fields.codings, max_encodings=limits.encodings, max_ratio=limits.decoded_ratio)
        body = await self._read_page(lease, page)
        tap = current_tap()
        if tap is not None:
            tap.answered = True  # an error page is a response: archived, as wget and Heritrix do
        return body


def _archived_short(reason: str) -> None:
    """A response body not read to its end: its WARC record says so (WARC-Truncated)."""
    tap = current_tap()
    if tap is not None:
        tap.truncated = reason


async def _body(lease: Lease, decoder: Decoder | None) -> AsyncIterator[bytes]:
    """Body bytes (decoded unless --raw); the connection goes back to the pool at the end."""
    async for data in lease.connection.iter_body():
        if decoder is None:
            yield data
        else:
            for piece in decoder.feed(data):
                yield piece
    if decoder is not None:
        for piece in decoder.flush():
            yield piece
    await lease.release()


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator

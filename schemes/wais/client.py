"""The WAIS conversation on trio, and the library's search call.

An association is one TCP connection in strict lock-step: Init, then one
SearchAPDU and its one reply at a time (wais.md §1).  Idle associations go
to the client's pool keyed by (host, port), so a search and the retrieval of
its hits with one Client greet the server once.  All encoding is in `codec`;
this module only moves whole messages and turns replies into errors.

Library use (relevance feedback seeds a search with earlier hits)::

    async with fetcher.Client() as client:
        first = await search(client, "wais://host/db", "apple")
        better = await search(client, "wais://host/db", "apple", relevant=first.hits[:2])
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from fetcher.errors import AuthError, LimitExceeded, NotFound, ProtocolError, URLError, UsageError
from fetcher.handler import DEFAULT_LIMITS, Connection, Limits, Session, SessionHost, guard, trace
from fetcher.schemes.wais.codec import (
    DEFAULT_MESSAGE_SIZE,
    HEADER_SIZE,
    Diagnostic,
    DocumentHeader,
    Init,
    InitResponse,
    RelevantDocument,
    Search,
    SearchResponse,
    WaisDecodeError,
    decode_header,
    docid_to_string,
    message,
    split_wpath,
    word_search,
)
from fetcher.text import escape
from fetcher.url import WaisURL, parse_url

T = TypeVar("T")
#: Room for the framing of a retrieval reply around its text (header, groups, the DocID echo).
REPLY_OVERHEAD = 512


class StaleAssociation(ProtocolError):
    """A pooled association the server had already dropped; the caller reconnects once."""


class WaisAssociation:
    """One connection to a WAIS server, in step when `healthy` (then it may be pooled)."""

    def __init__(
        self, connection: Connection, *, max_reply: int = DEFAULT_MESSAGE_SIZE, limits: Limits = DEFAULT_LIMITS
    ) -> None:
        self.connection = connection
        #: No reply is accepted above `limits.wais_apdu_bytes`, whatever was negotiated.
        self.limits = limits
        self.where = f"{connection.host}:{connection.port}"
        #: The largest reply accepted: what this client offered, lowered by the server's answer.
        self.max_reply = max_reply
        self.healthy = True
        #: Taken from the pool and not yet answered: a failure means the server hung up meanwhile.
        self.reused = False
        self.init_response: InitResponse | None = None

    async def aclose(self) -> None:
        await self.connection.aclose()

    async def exchange(self, apdu: bytes, what: str) -> bytes:
        """Send one request and read its one reply (the APDU body); refuse what is not a WAIS reply."""
        self.healthy = False
        await self.connection.send_all(message(apdu))
        try:
            head = await self.connection.read_exact(HEADER_SIZE)
        except ProtocolError:
            if self.reused:
                raise StaleAssociation(f"the pooled connection to {self.where} was closed") from None
            raise ProtocolError(
                f"the WAIS server {self.where} closed the connection instead of answering the {what}",
                hint="the server may have crashed on the request (freeWAIS-sf does on some malformed ones)",
            ) from None
        self.reused = False
        try:
            header = decode_header(head)
        except WaisDecodeError as error:
            raise ProtocolError(
                f"{self.where} did not answer the {what} with a WAIS message ({error}; it sent {escape(repr(head))})",
                hint="check that this host and port run a WAIS (Z39.50) server",
            ) from None
        if header.message_type != "z" or header.compression != " " or header.encoding != " ":
            raise ProtocolError(
                f"the WAIS server {self.where} answered with message type {header.message_type!r}, compression "
                f"{header.compression!r}, encoding {header.encoding!r}; only plain Z39.50 messages are supported"
            )
        if header.length == 0:
            self.healthy = True
            raise ProtocolError(
                f"the WAIS server {self.where} sent an empty reply to the {what}",
                hint="freeWAIS-sf answers so when it cannot parse a request or its reply would be too large; "
                "try a smaller --wais-chunk",
            )
        if header.length > self.limits.wais_apdu_bytes:
            # Refused before a byte of it is read: the length is only the server's word.
            raise LimitExceeded(
                f"bytes in one WAIS message (the reply to the {what} announces {header.length})",
                self.limits.wais_apdu_bytes,
                "wais_apdu_bytes",
            )
        if header.length > self.max_reply:
            raise ProtocolError(
                f"the WAIS server {self.where} announced a {header.length}-byte reply to the {what}, more than the "
                f"{self.max_reply} bytes negotiated",
                hint="the server ignores the size limit; try a smaller --wais-chunk or --max-hits",
            )
        try:
            body = await self.connection.read_exact(header.length)
        except ProtocolError:
            raise ProtocolError(
                f"the WAIS server {self.where} closed the connection in the middle of its reply to the {what}",
                hint="try again; the server may have reset the connection",
            ) from None
        self.healthy = True
        return body

    async def initialize(self, offered: int) -> InitResponse:
        """Init (optional in WAIS, but it negotiates the size of replies)."""
        trace.debug("> Init (offering replies up to %d bytes)", offered)
        self.max_reply = offered
        body = await self.exchange(Init(preferred_message_size=offered, maximum_record_size=offered).encode(), "Init")
        try:
            response = InitResponse.decode(body, max_field=self.limits.wais_field_bytes)
        except WaisDecodeError as error:
            self.healthy = False
            raise ProtocolError(f"the WAIS server {self.where} sent an unreadable InitResponse: {error}") from None
        trace.debug(
            "< InitResponse: %s, %s, records up to %s bytes",
            "accepted" if response.result else "refused",
            escape(" ".join(filter(None, (response.implementation_id, response.implementation_name)))) or "-",
            response.maximum_record_size,
        )
        if not response.result:
            raise ProtocolError(f"the WAIS server {self.where} refused the association (InitResponse Result 0)")
        if response.maximum_record_size:
            self.max_reply = min(offered, max(response.maximum_record_size, 1024))
        self.init_response = response
        return response

    async def search(self, request: Search, what: str) -> SearchResponse:
        body = await self.exchange(request.encode(), what)
        limits = self.limits
        try:
            response = SearchResponse.decode(
                body, max_records=limits.listing_entries, max_field=limits.wais_field_bytes
            )
        except WaisDecodeError as error:
            raise ProtocolError(
                f"the WAIS server {self.where} sent an unreadable reply to the {what}: {error}"
            ) from None
        trace.debug(
            "< SearchResponse: %d headers, %d texts (%d bytes)%s",
            len(response.headers),
            len(response.texts),
            sum(len(item.text) for item in response.texts),
            "".join(f", diagnostic {escape(str(d))}" for d in response.diagnostics),
        )
        return response

    def chunk_size(self, wanted: int, docid: bytes) -> int:
        """The retrieval chunk that keeps each reply inside the negotiated size."""
        return max(1, min(wanted, self.max_reply - REPLY_OVERHEAD - len(docid)))


def offered_size(chunk: int, limit: int = DEFAULT_LIMITS.wais_apdu_bytes) -> int:
    """What Init offers: the C clients' 100000, more when a larger chunk was asked for, never past `limit`."""
    return min(limit, max(DEFAULT_MESSAGE_SIZE, chunk + REPLY_OVERHEAD + 1024))


async def run(
    session: Session,
    host: str,
    port: int,
    operation: Callable[[WaisAssociation], Awaitable[T]],
    *,
    keep: bool = False,
) -> tuple[T, WaisAssociation]:
    """Run `operation` on a pooled association (reconnecting once if it went stale) or a new one.

    Unless `keep`, the association goes back to the pool (or is closed when
    out of step) as soon as the operation ends; with `keep` the caller
    releases it after a failure-free return (a document's body).
    """
    key = ("wais", host, port)
    pooled = await session.pool.take(key)
    if isinstance(pooled, WaisAssociation):
        pooled.reused = True
        try:
            return await _guarded(session, key, pooled, operation, keep)
        except StaleAssociation as error:
            trace.debug("* %s; reconnecting", error)
    chunk = session.settings.wais_chunk
    if chunk < 1:
        raise UsageError(f"--wais-chunk must be at least 1 byte, not {chunk}")
    connection = await session.connect(host, port, scheme=session.url.scheme)
    limits = session.settings.limits
    association = WaisAssociation(connection, limits=limits)
    try:
        await association.initialize(offered_size(chunk, limits.wais_apdu_bytes))
    except BaseException:
        await association.aclose()
        raise
    return await _guarded(session, key, association, operation, keep)


async def _guarded(
    session: Session,
    key: tuple[str, str, int],
    association: WaisAssociation,
    operation: Callable[[WaisAssociation], Awaitable[T]],
    keep: bool,
) -> tuple[T, WaisAssociation]:
    try:
        result = await operation(association)
    except StaleAssociation:
        await association.aclose()
        raise
    except BaseException:
        await release(session, key, association)
        raise
    if not keep:
        await release(session, key, association)
    return result, association


async def release(session: Session, key: tuple[str, str, int], association: WaisAssociation) -> None:
    if association.healthy and not association.connection.closed:
        await session.pool.give(key, association)
    else:
        await association.aclose()


def raise_for(diagnostics: Sequence[Diagnostic], where: str, what: str) -> None:
    """The error a diagnostic stands for (the end of a document is not one)."""
    for diagnostic in diagnostics:
        if diagnostic.kind == "end":
            continue
        said = f"the WAIS server {where} answered the {what} with diagnostic {diagnostic}"
        if diagnostic.kind == "missing":
            raise NotFound(said, hint="check the database name and the document URL")
        if diagnostic.kind == "denied":
            raise AuthError(said, hint="the server's access control refuses this client")
        raise ProtocolError(said)


# -- hits and the library's search call ---------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One search result: the header's fields plus the URL that retrieves the document."""

    headline: str
    score: int | None
    length: int | None
    lines: int | None
    types: tuple[str, ...]
    source: str | None
    date: str | None
    docid: bytes
    url: str | None

    @property
    def docid_string(self) -> str:
        return docid_to_string(self.docid)


@dataclass
class SearchResults:
    """What a search returned: the hits in the server's order, and diagnostics that came with them."""

    hits: list[Hit]
    diagnostics: list[Diagnostic] = field(default_factory=list)


def hit_url(database_url: WaisURL, header: DocumentHeader) -> str | None:
    """The hit's URL in the form of Lynx and libwww (wais.md §8.2); None if it would not parse back."""
    wtype = header.types[0] if header.types else "TEXT"
    if wtype == "URL" and header.headline:
        target = header.headline.strip()
    else:
        path = docid_to_string(header.docid)
        if header.length:
            path = f"{header.length}/{path}"
        target = str(database_url.replace(search=None, wtype=wtype, wpath=path, fragment=None))
    try:
        parse_url(target)
    except URLError:
        return None
    return target


def make_hit(database_url: WaisURL, header: DocumentHeader) -> Hit:
    return Hit(
        headline=header.headline or "",
        score=header.score,
        length=header.length,
        lines=header.lines,
        types=header.types,
        source=header.source,
        date=header.date,
        docid=header.docid,
        url=hit_url(database_url, header),
    )


def relevant_document(item: Hit | str | bytes | RelevantDocument) -> RelevantDocument:
    """A relevance-feedback seed from a Hit, a hit's wais:// URL, raw DocID bytes, or as given."""
    if isinstance(item, RelevantDocument):
        return item
    if isinstance(item, Hit):
        return RelevantDocument(item.docid, item.types[0] if item.types else None)
    if isinstance(item, bytes):
        return RelevantDocument(item)
    url = parse_url(item)
    if not isinstance(url, WaisURL) or url.wpath is None:
        raise UsageError(f"{item} is not a WAIS document URL", hint="use the URL of a search hit")
    try:
        _, docid = split_wpath(url.wpath)
    except WaisDecodeError as error:
        raise URLError(f"the document id of {item} is malformed: {error}", part="wpath") from None
    return RelevantDocument(docid, url.wtype.split(",")[0] if url.wtype else None)


async def search_database(
    association: WaisAssociation,
    database_url: WaisURL,
    words: str,
    *,
    relevant: Iterable[RelevantDocument] = (),
    max_hits: int = 40,
) -> SearchResults:
    """One type-3 search on an open association; diagnostics without hits become errors."""
    seeds = tuple(relevant)
    trace.debug(
        "> Search %s in %s (max %d hits%s)",
        escape(repr(words)),
        escape(database_url.database),
        max_hits,
        f", {len(seeds)} relevant documents" if seeds else "",
    )
    request = word_search(database_url.database, words, relevant=seeds, max_documents=max_hits)
    response = await association.search(request, "search")
    if not response.headers:
        raise_for(response.diagnostics, association.where, "search")
    hits = [make_hit(database_url, header) for header in response.headers[:max_hits]]
    return SearchResults(hits, list(response.diagnostics))


def _as_session(via: SessionHost | Session, url: WaisURL) -> Session:
    if isinstance(via, Session):
        return Session(via.client, url, hops=via.hops)
    return Session(via, url)


async def search(
    via: SessionHost | Session,
    database: str | WaisURL,
    words: str,
    *,
    relevant: Iterable[Hit | str | bytes | RelevantDocument] = (),
    max_hits: int | None = None,
) -> SearchResults:
    """Search a WAIS database; with `relevant`, a relevance-feedback search seeded by those documents.

    `database` is the database's URL (`wais://host[:port]/database`); any
    search part of it is ignored in favour of `words`.  `relevant` takes
    earlier `Hit`s, hit URLs, raw DocIDs or `RelevantDocument`s (to seed with
    a byte or line range of a document).  `max_hits` defaults to the
    client's `max_hits` setting.  Errors are those of `fetch`: NotFound for
    a database the server does not have, ProtocolError for other diagnostics.
    """
    url = parse_url(database) if isinstance(database, str) else database
    if not isinstance(url, WaisURL):
        raise UsageError(f"{database} is not a wais:// URL")
    bare = url.replace(search=None, wtype=None, wpath=None, fragment=None)
    assert isinstance(bare, WaisURL)
    url = bare
    session = _as_session(via, url)
    guard.check(url, session.policy)
    seeds = [relevant_document(item) for item in relevant]
    limit = session.settings.max_hits if max_hits is None else max_hits

    async def operation(association: WaisAssociation) -> SearchResults:
        return await search_database(association, url, words, relevant=seeds, max_hits=limit)

    results, _ = await run(session, url.host, url.port, operation)
    return results

"""A small WAIS server on trio for the tests, built on the client's own codec (fetcher.schemes.wais.codec).

It behaves like freeWAIS-sf where wais.md describes it: Init negotiates the
reply size (Result 0 for willPresent/willDelete), type-3 searches score the
documents of a database by word counts (top score 1000) with relevance
feedback, empty seed words return the database's description and catalog,
type-1 retrievals serve byte or line ranges with the "Request out of range"
diagnostic past the end, and the diagnostics and zero-length replies of
wais.md §9.  It records every request, and can misbehave on the nth Init,
search or retrieval: reset the connection mid-reply, stall, send garbage, a
reply larger than negotiated, an empty reply, an unreadable reply, or close
without replying.
"""

from __future__ import annotations

import re
import socket
import struct
from dataclasses import dataclass, field

import trio

from fetcher.schemes.wais.codec import (
    HEADER_SIZE,
    Diagnostic,
    DocID,
    DocumentHeader,
    DocumentText,
    Header,
    Init,
    InitResponse,
    Retrieval,
    Search,
    SearchResponse,
    WaisDecodeError,
    decode_header,
    freewais_docid,
    message,
    parse_retrievals,
    pdu_type,
)
from tests.servers.common import serving as serving  # the tests import it from here

INDEX = "/srv/wais/idx"
CORPUS = "/srv/wais/corpus"
_WORD = re.compile(rb"[a-z0-9]+")


@dataclass
class Document:
    name: str
    text: bytes
    types: tuple[str, ...] = ("TEXT",)
    date: str = "0"
    headline: str | None = None
    #: A DocID local id other than freeWAIS-sf's "<start> <end> <path>" (no file name in it).
    local_id: str | None = None

    def words(self) -> list[bytes]:
        return _WORD.findall(self.text.lower())


@dataclass
class Database:
    name: str
    documents: list[Document]
    description: bytes = b""

    @property
    def path(self) -> str:
        return f"{INDEX}/{self.name}"

    def file(self, document: Document) -> str:
        return f"{CORPUS}/{self.name}/{document.name}"

    def catalog(self) -> bytes:
        lines = [f"Catalog for database: {self.path}", f"{len(self.documents)} total documents", ""]
        lines += [f"Headline: {document.name}" for document in self.documents]
        return ("\n".join(lines) + "\n").encode()

    def source(self) -> bytes:
        return self.description or f'(:source :database-name "{self.path}" :maintainer "test")\n'.encode()


@dataclass
class Faults:
    """Misbehave on the `nth` request of one kind ("init", "search" or "retrieve")."""

    reset: str | None = None
    stall: str | None = None
    garbage: str | None = None
    oversize: str | None = None
    empty: str | None = None
    unreadable: str | None = None
    close: str | None = None
    nth: int = 1
    refuse_init: bool = False
    #: The server's message buffer (freeWAIS-sf: 100000).
    max_record: int = 100000
    #: Close every connection after this many requests (an idle drop seen by a pooled client).
    close_after: int | None = None
    #: Refuse every search with freeWAIS-sf's access-control diagnostic (T2).
    access_denied: bool = False
    #: (code, message) of a diagnostic record sent along with every word search's hits.
    notice: tuple[str, str] | None = None

    def which(self, kind: str, count: int) -> str | None:
        if count != self.nth:
            return None
        for name in ("reset", "stall", "garbage", "oversize", "empty", "unreadable", "close"):
            if getattr(self, name) == kind:
                return name
        return None


@dataclass
class WaisServer:
    databases: list[Database]
    faults: Faults = field(default_factory=Faults)
    host_label: str = "testhost:210"
    port: int = 0
    connections: int = 0
    #: (kind, decoded request) for every request, in arrival order.
    requests: list[tuple[str, object]] = field(default_factory=list)
    #: Every request message as received (header and APDU).
    raw: list[bytes] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def database(self, name: str | None) -> Database | None:
        wanted = (name or "INFO").removesuffix(".src")
        return next((db for db in self.databases if db.name == wanted), None)

    def searches(self) -> list[Search]:
        return [request for kind, request in self.requests if kind == "search" and isinstance(request, Search)]

    def retrievals(self) -> list[Retrieval]:
        return [request for kind, request in self.requests if kind == "retrieve" and isinstance(request, Retrieval)]

    async def handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        try:
            await _Association(self, stream).run()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            with trio.move_on_after(1, shield=True):
                await stream.aclose()


class _Closed(Exception):
    """End this connection now (freeWAIS-sf's server process died or a fault says so)."""


class _Association:
    def __init__(self, server: WaisServer, stream: trio.SocketStream) -> None:
        self.server = server
        self.faults = server.faults
        self.stream = stream
        self.buffer = bytearray()
        self.limit = min(100000, self.faults.max_record)

    async def receive_exact(self, count: int) -> bytes | None:
        while len(self.buffer) < count:
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self.buffer += data
        chunk = bytes(self.buffer[:count])
        del self.buffer[:count]
        return chunk

    async def run(self) -> None:
        handled = 0
        while True:
            head = await self.receive_exact(HEADER_SIZE)
            if head is None:
                return
            try:
                header = decode_header(head)
            except WaisDecodeError:
                return
            body = await self.receive_exact(header.length)
            if body is None:
                return
            self.server.raw.append(head + body)
            if header.version > "2":
                return
            try:
                reply = self.answer(body)
            except _Closed:
                return
            if not await self.send(header, reply):
                return
            handled += 1
            if self.faults.close_after is not None and handled >= self.faults.close_after:
                return

    def count(self, kind: str) -> str | None:
        self.server.counts[kind] = self.server.counts.get(kind, 0) + 1
        self.kind = kind
        return self.faults.which(kind, self.server.counts[kind])

    def answer(self, body: bytes) -> bytes:
        """The reply APDU (b"" for freeWAIS-sf's zero-length reply); _Closed to hang up."""
        self.kind = ""
        self.fault: str | None = None
        try:
            kind = pdu_type(body)
            if kind == 20:
                return self.init(Init.decode(body))
            if kind == 22:
                return self.search(Search.decode(body))
        except WaisDecodeError:
            return b""
        return b""

    def init(self, request: Init) -> bytes:
        self.server.requests.append(("init", request))
        self.fault = self.count("init")
        self.limit = min(self.faults.max_record, request.maximum_record_size)
        accepted = not (request.options.will_present or request.options.will_delete or self.faults.refuse_init)
        return InitResponse(
            preferred_message_size=self.limit,
            maximum_record_size=self.limit,
            implementation_id="TST",
            implementation_name="fetcher test server",
            implementation_version="1",
            result=accepted,
        ).encode()

    def search(self, request: Search) -> bytes:
        if request.query_type is None:
            raise _Closed
        if request.query_type == "3":
            self.server.requests.append(("search", request))
            self.fault = self.count("search")
            return self.fit(self.word_search(request))
        if request.query_type == "1":
            try:
                wanted = parse_retrievals(request.query or ())
            except WaisDecodeError as error:
                if "type term" in str(error):
                    raise _Closed from None
                return b""
            for item in wanted:
                self.server.requests.append(("retrieve", item))
            self.fault = self.count("retrieve")
            response = self.retrieve(request, wanted)
            encoded = response.encode()
            return encoded if len(encoded) <= self.limit or self.fault == "oversize" else b""
        return b""

    def fit(self, response: SearchResponse) -> bytes:
        """Drop headers from the end until the reply fits the negotiated size (wais.md §9)."""
        count = len(response.headers)
        encoded = response.encode()
        while len(encoded) > self.limit and count:
            count -= 1
            encoded = response.keep_headers(count).encode()
        return encoded

    # -- word searches --------------------------------------------------------------

    def word_search(self, request: Search) -> SearchResponse:
        database = self.server.database(request.database)
        if database is None:
            name = request.database or "INFO"
            return SearchResponse(
                diagnostics=(Diagnostic("S1", f"The following database is not available: {INDEX}/{name}"),)
            )
        if self.faults.access_denied:
            return SearchResponse(diagnostics=(Diagnostic("T2", f"Unautorized access to database: {database.path}"),))
        info = request.info
        words = (info.seed_words if info else "") or ""
        relevant = info.documents if info else ()
        limit = info.max_documents if info and info.max_documents else 40
        if not words.strip() and not relevant:
            return SearchResponse(headers=self.help_headers(database), search_status=1)
        terms = _WORD.findall(words.lower().encode("utf-8", "surrogateescape"))
        if not terms and (words.strip() or relevant):
            return SearchResponse(diagnostics=(Diagnostic("S1", f"query syntax error: {words}"),))
        for seed in relevant:
            found = self.locate(database, seed.docid)
            if found is None:
                local = _local_id(seed.docid) or "?"
                return SearchResponse(diagnostics=(Diagnostic("S2", f"Relevant Document not available: {local}"),))
            terms += _top_words(found)
        scored = []
        for document in database.documents:
            counts = document.words()
            raw = sum(counts.count(term) for term in set(terms))
            if raw:
                scored.append((raw, document))
        scored.sort(key=lambda item: (-item[0], item[1].name))
        best = scored[0][0] if scored else 1
        headers = tuple(self.header(database, document, round(1000 * raw / best)) for raw, document in scored[:limit])
        notes = (Diagnostic(*self.faults.notice),) if self.faults.notice else ()
        return SearchResponse(headers=headers, diagnostics=notes, search_status=1)

    def header(self, database: Database, document: Document, score: int) -> DocumentHeader:
        path = database.file(document)
        local = document.local_id or f"0 {len(document.text)} {path}"
        docid = freewais_docid(self.server.host_label, database.path, local)
        return DocumentHeader(
            docid,
            score=score,
            best_match=0,
            length=len(document.text),
            lines=document.text.count(b"\n"),
            types=document.types,
            source=database.path,
            date=document.date,
            headline=document.headline or f"{document.name}   {CORPUS}/{database.name}/",
        )

    def help_headers(self, database: Database) -> tuple[DocumentHeader, ...]:
        made = []
        for suffix, kind, body in ((".src", "WSRC", database.source()), (".cat", "TEXT", database.catalog())):
            records = ((2, database.path.encode()), (3, f"0 0 {database.path}{suffix}".encode()), (7, b"\x00"))
            made.append(
                DocumentHeader(
                    DocID(records).encode(),
                    score=1000,
                    best_match=0,
                    length=len(body),
                    lines=body.count(b"\n"),
                    types=(kind,),
                    source=database.path,
                    date="0",
                    headline=f"{database.name}{suffix}",
                )
            )
        return tuple(made)

    def locate(self, database: Database, docid: bytes) -> bytes | None:
        """The bytes a DocID names in this database, or None."""
        local = _local_id(docid)
        if local is None:
            return None
        for document in database.documents:
            if document.local_id is not None and document.local_id == local:
                return document.text
        parts = local.split(" ", 2)
        if len(parts) != 3:
            return None
        path = parts[2]
        for suffix, body in ((".src", database.source()), (".cat", database.catalog())):
            if path == database.path + suffix:
                return body
        for document in database.documents:
            if database.file(document) == path:
                return document.text
        return None

    # -- retrievals ------------------------------------------------------------------

    def retrieve(self, request: Search, wanted: list[Retrieval]) -> SearchResponse:
        database = self.server.database(request.database)
        echo = request.reference_id
        if database is None:
            diagnostic = Diagnostic("S1", f"The following database is not available: {INDEX}/{request.database}")
            return SearchResponse(diagnostics=(diagnostic,), reference_id=echo)
        texts: list[DocumentText] = []
        diagnostics: list[Diagnostic] = []
        for item in wanted:
            local = _local_id(item.docid)
            opaque = any(document.local_id == local for document in database.documents if document.local_id)
            if local is None or (len(local.split(" ", 2)) != 3 and not opaque):
                diagnostics.append(Diagnostic("SF", "Missing DocID in request", True))
                continue
            body = self.locate(database, item.docid)
            if body is None:
                diagnostics.append(Diagnostic("SF", "File not present in specified database", True))
                continue
            units = body.splitlines(keepends=True) if item.unit == "lines" else None
            size = len(units) if units is not None else len(body)
            if item.start >= size:
                diagnostics.append(Diagnostic("SF", "Request out of range", True))
                continue
            end = min(item.end, size)
            chunk = b"".join(units[item.start : end]) if units is not None else body[item.start : end]
            if self.fault == "oversize":
                chunk = (body * (self.limit // max(len(body), 1) + 2))[: self.limit + 1000]
            texts.append(DocumentText(item.docid, chunk))
            if item.end > size:
                diagnostics.append(Diagnostic("SF", "Request out of range", True))
        records = len(texts) + len(diagnostics)
        return SearchResponse(
            texts=tuple(texts), diagnostics=tuple(diagnostics), reference_id=echo, records_returned=records
        )

    # -- sending, with faults ---------------------------------------------------------

    async def send(self, header: Header, reply: bytes) -> bool:
        """Send the reply (or misbehave); False when the connection must end."""
        fault = self.fault
        if fault == "oversize" and self.kind != "retrieve":
            reply = SearchResponse(texts=(DocumentText(b"x", b"x" * (self.limit + 1000)),)).encode()
        if fault == "unreadable":
            reply = b"\x00\x05\x17garbage-after-the-fixed-part"
        whole = message(reply, header)
        if fault == "close":
            return False
        if fault == "empty":
            await self.stream.send_all(message(b"", header))
            return True
        if fault == "garbage":
            await self.stream.send_all(b"<html><body>\x1b[31mnot a WAIS server</body></html>\r\n")
            return False
        if fault == "reset":
            await self.stream.send_all(whole[: HEADER_SIZE + len(reply) // 2])
            self.stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if fault == "stall":
            await self.stream.send_all(whole[: HEADER_SIZE + len(reply) // 2])
            await trio.sleep_forever()
        await self.stream.send_all(whole)
        return True


def _local_id(docid: bytes) -> str | None:
    try:
        return DocID.decode(docid).local_id
    except WaisDecodeError:
        return None


def _top_words(text: bytes) -> list[bytes]:
    """The words relevance feedback adds: the document's three most frequent words of 4+ letters."""
    counts: dict[bytes, int] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) >= 4:
            counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda word: (-counts[word], word))[:3]

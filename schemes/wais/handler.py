"""wais:// URLs (RFC 1738 §3.9): a search listing, a document, or how to search a database.

- `wais://host/db?words`: a type-3 search; one Entry per hit, each with the
  hit's Lynx-form document URL so it can be fetched or piped into `fetch -i`.
- `wais://host/db/wtype/[length/]docid`: the document, retrieved in ranges
  of `wais_chunk` bytes on one association and streamed as they arrive.
- `wais://host/db`: the search words come from `--query`, else from the user
  on a terminal, else the result is an advisory saying how to search.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from fetcher.errors import ProtocolError, URLError, UsageError
from fetcher.handler import Advisory, Entry, Resource, Session, trace
from fetcher.schemes.wais.client import Hit, WaisAssociation, raise_for, release, run, search_database
from fetcher.schemes.wais.codec import (
    Diagnostic,
    Retrieval,
    SearchResponse,
    WaisDecodeError,
    media_type,
    retrieval_search,
    split_wpath,
)
from fetcher.schemes.wais.hooks import Hooks, file_name
from fetcher.text import escape
from fetcher.url import URL, WaisURL

log = logging.getLogger("fetcher")


def _entry_type(types: tuple[str, ...]) -> str:
    first = (types[0] if types else "TEXT").upper()
    if first == "WSRC":
        return "source"
    if first == "URL":
        return "link"
    return "text" if media_type(first).startswith("text/") else "binary"


def hit_entry(hit: Hit) -> Entry:
    details = [f"score {hit.score}" if hit.score is not None else "", f"{hit.lines} lines" if hit.lines else ""]
    details.append(",".join(hit.types))
    return Entry(
        name=hit.headline or hit.docid_string,
        url=hit.url,
        type=_entry_type(hit.types),
        size=hit.length,
        description=", ".join(part for part in details if part),
        filename=file_name(hit.docid) or hit.headline.strip() or None,
        extra={
            "score": hit.score,
            "lines": hit.lines,
            "types": list(hit.types),
            "date": hit.date,
            "source": hit.source,
            "docid": hit.docid_string,
        },
    )


def show_diagnostics(diagnostics: list[Diagnostic], where: str) -> None:
    """Every diagnostic record but the end-of-document one, on stderr (escaped), like waissearch."""
    for diagnostic in diagnostics:
        if diagnostic.kind != "end":
            log.warning("fetch: warning: the WAIS server %s says: %s", escape(where), escape(str(diagnostic)))


class Handler(Hooks):
    scheme = "wais"
    default_port = 210

    async def open(self, url: URL, session: Session) -> Resource:
        if not isinstance(url, WaisURL):
            raise UsageError(f"the WAIS handler cannot open {url.scheme}: URLs")
        if url.wtype is not None:
            return await self._document(url, session)
        words = url.search
        if words is None:
            words = session.settings.query
        if words is None:
            words = await session.ask(f"Search words for the WAIS database {url.database} on {url.host}: ")
        if words is None:
            return self._advisory(url)
        searched = url.replace(search=words)
        assert isinstance(searched, WaisURL)
        return await self._search(searched, session, words)

    def _advisory(self, url: WaisURL) -> Resource:
        text = (
            f"{url} is a WAIS database that can be searched. Give search words with "
            f"`fetch --query WORDS {url}` or append them to the URL: {url}?WORD+WORD. "
            "An empty search (URL ending in '?') asks the server to describe the database."
        )
        return Resource(
            url,
            "advisory",
            advisory=Advisory(
                title=f"Searchable WAIS database {url.database} on {url.host}:{url.port}",
                text=text,
                fields={"database": url.database, "search": f"{url}?WORDS"},
            ),
        )

    async def _search(self, url: WaisURL, session: Session, words: str) -> Resource:
        max_hits = session.settings.max_hits
        if max_hits < 1:
            raise UsageError(f"--max-hits must be at least 1, not {max_hits}")

        async def operation(association: WaisAssociation) -> Resource:
            results = await search_database(association, url, words, max_hits=max_hits)
            show_diagnostics(results.diagnostics, association.where)
            return Resource(
                url,
                "listing",
                entries=[hit_entry(hit) for hit in results.hits],
                metadata={
                    "database": url.database,
                    "query": words,
                    "hits": len(results.hits),
                    "diagnostics": [str(diagnostic) for diagnostic in results.diagnostics],
                },
            )

        resource, _ = await run(session, url.host, url.port, operation)
        return resource

    async def _document(self, url: WaisURL, session: Session) -> Resource:
        try:
            length, docid = split_wpath(url.wpath or "")
        except WaisDecodeError as error:
            raise URLError(f"the document id in the URL is malformed: {error}", part="wpath", url=str(url)) from None
        wtype = (url.wtype or "").split(",")[0].strip() or "TEXT"
        if not length:
            length = None
        start = session.offset
        if length is not None and start > length:
            start = 0
        document = _Document(url, wtype, docid, length, session.settings.wais_chunk)
        first, association = await run(session, url.host, url.port, lambda a: document.fetch(a, start), keep=True)
        key = ("wais", url.host, url.port)

        async def closer() -> None:
            await release(session, key, association)

        return Resource(
            url,
            "document",
            content_type=media_type(wtype),
            size=length,
            body=document.body(association, start, first),
            offset=start,
            filename=file_name(docid),
            metadata={"database": url.database, "type": wtype, "length": length},
            closer=closer,
        )


class _Document:
    """The retrieval loop of wais.md §7: consecutive ranges until the length or the end diagnostic."""

    def __init__(self, url: WaisURL, wtype: str, docid: bytes, length: int | None, chunk: int) -> None:
        self.url = url
        self.wtype = wtype
        self.docid = docid
        self.length = length
        self.chunk = chunk

    def _end(self, association: WaisAssociation, position: int) -> int:
        end = position + association.chunk_size(self.chunk, self.docid)
        return end if self.length is None else min(end, self.length)

    async def fetch(self, association: WaisAssociation, position: int) -> SearchResponse | None:
        """The reply for the range starting at `position`; None past the known length."""
        if self.length is not None and position >= self.length:
            return None
        end = self._end(association, position)
        trace.debug("> Retrieve bytes %d-%d of a %s document from %s", position, end, escape(self.wtype),
                    escape(self.url.database))  # fmt: skip
        request = retrieval_search(self.url.database, [Retrieval(self.docid, self.wtype, position, end)])
        reply = await association.search(request, f"retrieval of bytes {position}-{end}")
        if not reply.texts:
            raise_for(reply.diagnostics, association.where, f"retrieval of bytes {position}-{end}")
            if not reply.diagnostics:
                raise ProtocolError(
                    f"the WAIS server {association.where} sent neither text nor a diagnostic for bytes {position}-{end}"
                )
        elif len(reply.texts[0].text) > end - position:
            raise ProtocolError(
                f"the WAIS server {association.where} sent {len(reply.texts[0].text)} bytes for a request of "
                f"{end - position} (bytes {position}-{end})"
            )
        return reply

    async def body(
        self, association: WaisAssociation, position: int, reply: SearchResponse | None
    ) -> AsyncIterator[bytes]:
        while reply is not None:
            wanted = self._end(association, position) - position
            text = reply.texts[0].text if reply.texts else b""
            if text:
                yield text
                position += len(text)
            finished = not text or len(text) < wanted or any(d.kind == "end" for d in reply.diagnostics)
            if finished:
                break
            reply = await self.fetch(association, position)
        if self.length is not None and position < self.length:
            raise ProtocolError(
                f"the WAIS document ended after {position} of the {self.length} bytes its URL announces",
                hint="the document may have changed on the server; search again for a fresh URL",
            )

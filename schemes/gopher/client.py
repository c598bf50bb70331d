"""The trio part of Gopher: connect, send the one request, move the reply's bytes.

Every decision about bytes is made by the pure modules (request, menu,
text, plus, ask); this module only decides which of them reads the reply,
and keeps the connection bounded by the session's timeouts.  A Gopher
server answers one request per connection, so nothing is pooled.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING

from fetcher.errors import LimitExceeded, ProtocolError, TooLarge, UsageError
from fetcher.handler import Advisory, Resource, Session, current_tap, guard
from fetcher.schemes.gopher import ask as forms
from fetcher.schemes.gopher.hooks import Hooks
from fetcher.schemes.gopher.menu import MenuContext, MenuParser, parse_line
from fetcher.schemes.gopher.plus import (
    MAX_ERROR_TEXT,
    MAX_HEADER,
    Header,
    SizedBody,
    describe,
    error_for,
    keep_only,
    looks_like_error,
    parse_attributes,
    parse_error,
    parse_header,
    wanted_names,
)
from fetcher.schemes.gopher.request import request_bytes, split_request
from fetcher.schemes.gopher.server_errors import (
    ERROR_PEEK,
    error_for_message,
    error_only,
    error_reply,
    menu_warning,
    resembles_error,
)
from fetcher.schemes.gopher.stream import Body, Decoder, Raw, Source, finished, plus_decoder, truncated
from fetcher.schemes.gopher.text import DotTerminated, FinalDot
from fetcher.schemes.gopher.types import MENU_VIEWS, content_type_for, item_type
from fetcher.text import escape
from fetcher.url import URL, GopherURL, TelnetURL, parse_url

if TYPE_CHECKING:
    from fetcher.handler import LaneWork, SessionHost

log = logging.getLogger("fetcher")


class Retrieval:
    """One gopher URL: what to send, and which reader turns the reply into a Resource."""

    def __init__(self, url: GopherURL, session: Session) -> None:
        self.url = url
        self.session = session
        self.settings = session.settings
        self.warnings: list[str] = []
        self.ctx = MenuContext(scheme=url.scheme, host=url.host, port=url.port, policy=session.policy)

    # -- deciding what to send ------------------------------------------------

    async def open(self) -> Resource:
        url = self.url
        plus = url.plus or None
        if plus is None:
            early = await self._not_fetched()
            if early is not None:
                return early
        if url.gtype == "7" and url.search is None:
            url = await self._with_search(url)
        if plus == "?":
            return await self._form(url)
        if plus is None and url.search and url.gtype != "7" and url.search[0] in "+!$":
            self.warnings.append(
                "the URL has one %09 before a Gopher+ string, which makes it a search; "
                "write %09%09 for a Gopher+ request"
            )
        return await self._exchange(url)

    async def _not_fetched(self) -> Resource | None:
        url, gtype = self.url, self.url.gtype
        if gtype in ("i", "3"):
            what = "an information line" if gtype == "i" else "an error message"
            raise UsageError(f"gopher type {gtype!r} is {what}, not something to retrieve", url=str(url))
        if gtype in ("8", "T"):
            telnet = TelnetURL(scheme="telnet", user=url.selector or None, password=None, host=url.host,
                               port=url.port, fragment=None)  # fmt: skip
            login = f", then log in as {url.selector!r}" if url.selector else ""
            program = "tn3270" if gtype == "T" else "telnet"
            return Resource(url, "advisory", advisory=Advisory(
                title=f"A {program} session on {url.host} port {url.port}",
                text=f"Open it with: {program} {url.host} {url.port}{login}",
                fields={"url": str(telnet)},
            ))  # fmt: skip
        if gtype == "2":
            return Resource(url, "advisory", advisory=Advisory(
                title=f"A CSO phone-book server on {url.host} port {url.port}",
                text="fetcher does not speak CSO/ph; query it with a ph client.",
                fields={"host": url.host, "port": url.port},
            ))  # fmt: skip
        if gtype == "h" and url.selector.startswith("URL:") and url.search is None:
            target = url.selector[4:]
            if not self.settings.follow_redirects:
                return Resource(url, "advisory", advisory=Advisory(
                    title="A link to another URL", text=target, fields={"url": target}))  # fmt: skip
            return await self.session.follow(target, reason="gopher URL: link")
        return None

    async def _with_search(self, url: GopherURL) -> GopherURL:
        words = self.settings.query
        if words is None:
            words = await self.session.ask("Search for: ", secret=False)
        if words is None:
            raise UsageError(
                f"{url} is a search (gopher type 7) and no search words were given: pass --query WORDS",
                hint="or add %09WORDS to the URL (library: Client(query=...))",
                url=str(url),
            )
        if "\t" in words:
            raise UsageError("search words cannot contain a TAB", url=str(url))
        searched = url.replace(search=words)
        assert isinstance(searched, GopherURL)
        guard.check(searched, self.session.policy)
        return searched

    # -- the exchange ----------------------------------------------------------

    async def _send(self, url: GopherURL) -> Source:
        tls = url.scheme == "gophers"
        connection = await self.session.connect(url.host, url.port, tls=tls)
        try:
            line, block = split_request(request_bytes(url))
            await connection.send_line(line)
            if block:
                # Only the §3.4.9 form has a data block; the guard checked its shape.
                self.session.trace.debug("> [form data: %d lines]", block.count(b"\n"))
                await connection.send_all(block)
        except BaseException:
            await connection.aclose()
            raise
        return Source(connection)

    async def _exchange(self, url: GopherURL) -> Resource:
        source = await self._send(url)
        try:
            if url.plus:
                return await self._plus_reply(url, source)
            return await self._gopher0_reply(url, source)
        except BaseException:
            await source.connection.aclose()
            raise

    def _warn(self, message: str) -> None:
        """A warning the user sees on stderr (escaped) and the library finds in metadata["warnings"]."""
        self.warnings.append(message)
        log.warning("fetch: warning: %s", escape(message))

    def _metadata(self, url: GopherURL, **more: object) -> dict[str, object]:
        data: dict[str, object] = {"gopher_type": url.gtype, "warnings": self.warnings}
        data.update(more)
        return data

    # -- gopher0 ---------------------------------------------------------------

    async def _gopher0_reply(self, url: GopherURL, source: Source) -> Resource:
        reading = item_type(url.gtype).reading
        if reading == "menu":
            return await self._menu(url, source, Raw())
        # Hold up to ERROR_PEEK bytes: a server's "no such item" must not become a saved file.
        while not source.eof and len(source.buffer) < ERROR_PEEK:
            await source.fill()
        if source.eof:
            message = error_reply(source.buffer)
            if message is not None:
                raise error_for_message(message, str(url))
        lookalike = resembles_error(source.buffer, complete=source.eof)
        if lookalike is not None:
            self._warn(f"the reply to {url} looks like a server's error message, kept as the item: {lookalike!r}")
        decoder: Decoder
        if reading != "text" or self.settings.raw:
            decoder = Raw()
        elif self.settings.gopher_strict:
            decoder = DotTerminated("all")
        else:
            decoder = FinalDot()
        return self._document(url, source, decoder, content_type_for(url.gtype, url.selector))

    def _document(self, url: GopherURL, source: Source, decoder: Decoder, content_type: str,
                  size: int | None = None, must_end: bool = False) -> Resource:  # fmt: skip
        return Resource(
            url,
            "document",
            content_type=content_type,
            size=size,
            body=Body(url, source, decoder, must_end),
            metadata=self._metadata(url),
            closer=source.connection.aclose,
        )

    async def _menu(self, url: GopherURL, source: Source, decoder: Decoder, must_end: bool = False) -> Resource:
        parser = MenuParser.for_limits(self.ctx, self.settings.limits)
        limit = self.settings.max_size
        tap = current_tap()
        async for chunk in source.chunks():
            if tap is not None:  # the menu as the server sent it, for an archive
                tap.listing(chunk, "application/gopher-menu")
            data = decoder.feed(chunk)
            parser.feed(data)
            if limit is not None and parser.received > limit:
                raise TooLarge(f"the menu is larger than the limit of {limit} bytes", url=str(url),
                               hint="raise --max-size if you expected this")  # fmt: skip
            if parser.terminated or finished(decoder):
                break
        else:
            if must_end and not finished(decoder):
                raise ProtocolError(truncated(url, decoder), url=str(url))
        if hasattr(decoder, "close"):
            parser.feed(decoder.close())
        parser.close()
        await source.connection.aclose()
        message = error_only(parser)
        if message is not None:
            raise error_for_message(message, str(url))
        first_error = menu_warning(parser)
        if first_error is not None:
            self._warn(f"the menu {url} starts with an error item: {first_error!r}")
        metadata = self._metadata(url, problems=parser.problems, terminated=parser.terminated)
        return Resource(url, "listing", content_type="application/gopher-menu", entries=parser.entries,
                        metadata=metadata)  # fmt: skip

    # -- Gopher+ ------------------------------------------------------------------

    async def _plus_reply(self, url: GopherURL, source: Source) -> Resource:
        line = await source.peek_line(MAX_HEADER + 2)
        header = parse_header(line) if line is not None else None
        if header is None or line is None:
            self.warnings.append("the server did not answer in Gopher+ (no +n/-n header); read as plain gopher")
            self.session.trace.debug("* %s", self.warnings[-1])
            if url.plus and url.plus[0] == "$":
                return await self._menu(url, source, Raw())
            return await self._gopher0_reply(url, source)
        source.connection.trace_received(line)
        source.consume(len(line))
        if not header.ok:
            raise await self._plus_error(url, source, header)
        if header.length >= 0:
            prefix = await source.peek(min(header.length, 256))
            if looks_like_error(prefix):
                second = prefix.partition(b"\n")[0]
                source.consume(len(second) + 1)
                inner = parse_header(second)
                assert inner is not None
                raise await self._plus_error(url, source, inner)
        decoder = plus_decoder(header.length)
        must_end = header.length != -2
        plus = url.plus or ""
        if plus[0] in "!$":
            return await self._attributes(url, source, decoder, must_end)
        view = plus.split("\t", 1)[0][1:].split()
        mime = view[0] if view else None
        if url.gtype in ("1", "7") and (mime is None or mime.lower() in MENU_VIEWS):
            return await self._menu(url, source, decoder, must_end)
        size = header.length if header.length >= 0 else None
        return self._document(url, source, decoder, mime or content_type_for(url.gtype, url.selector), size, must_end)

    async def _plus_error(self, url: GopherURL, source: Source, header: Header) -> Exception:
        decoder = DotTerminated("lone") if header.length < 0 else SizedBody(min(header.length, MAX_ERROR_TEXT))
        text = b""
        async for chunk in source.chunks():
            text += decoder.feed(chunk)
            if len(text) > MAX_ERROR_TEXT or getattr(decoder, "done", False):
                break
        await source.connection.aclose()
        return error_for(parse_error(text[:MAX_ERROR_TEXT]), str(url), self.ctx)

    async def _collect(self, url: GopherURL, source: Source, decoder: Decoder, must_end: bool) -> bytes:
        parts: list[bytes] = []
        total = 0
        cap = self.settings.limits.attribute_bytes
        async for chunk in source.chunks():
            if finished(decoder):
                break
            data = decoder.feed(chunk)
            total += len(data)
            if total > cap:
                raise LimitExceeded("bytes of Gopher+ attributes", cap, "attribute_bytes", url=str(url))
            parts.append(data)
            if finished(decoder):
                break
        else:
            if must_end and not finished(decoder):
                raise ProtocolError(truncated(url, decoder), url=str(url))
        if hasattr(decoder, "close"):
            parts.append(decoder.close())
        await source.connection.aclose()
        data = b"".join(parts)
        if self.session.trace.isEnabledFor(logging.DEBUG):
            for line in data.splitlines()[:1000]:
                if line.startswith(b"+"):
                    self.session.trace.debug("< %s", escape(line.decode("utf-8", "surrogateescape")))
        return data

    async def _attributes(self, url: GopherURL, source: Source, decoder: Decoder, must_end: bool) -> Resource:
        plus = url.plus or ""
        data = await self._collect(url, source, decoder, must_end)
        if (tap := current_tap()) is not None:
            tap.listing(data, "application/gopher+-attributes")
        parsed = parse_attributes(data, self.settings.limits.attribute_bytes)
        items = [keep_only(item, wanted_names(plus)) for item in parsed]
        records = [item.as_dict() for item in items]
        metadata = self._metadata(url, attributes=records)
        if plus.startswith("$"):
            entries = []
            for number, item in enumerate(items, 1):
                if item.info is None:
                    continue
                entry = parse_line(item.info.encode("utf-8", "surrogateescape"), self.ctx, number)
                entry.extra["attributes"] = records[number - 1]
                entry.description = item.abstract[0] if item.abstract else ""
                entries.append(entry)
            return Resource(url, "listing", content_type="application/gopher+-attributes", entries=entries,
                            metadata=metadata)  # fmt: skip
        texts = []
        for item in items:
            info_url = None
            if item.info:
                info_url = parse_line(item.info.encode("utf-8", "surrogateescape"), self.ctx, 0).url
            texts.append(describe(item, info_url))
        advisory = Advisory(title=f"Gopher+ attributes of {url}", text="\n\n".join(texts) or "(no attributes)",
                            fields={"attributes": records})  # fmt: skip
        return Resource(url, "advisory", advisory=advisory, metadata=metadata)

    # -- ASK forms ------------------------------------------------------------------

    async def _form(self, url: GopherURL) -> Resource:
        fields = await self._fetch_form(url)
        given = self.settings.form
        by_number = forms.match_given(fields, given)
        answers: list[str] = []
        missing: list[str] = []
        asked = False
        number = 0
        for item in fields:
            if not item.answerable:
                continue
            number += 1
            value = by_number.get(number)
            if value is None and not given:
                value = await self.session.ask(f"{item.describe()}: ", secret=item.kind == "AskP")
                asked = asked or value is not None
                if value == "" and item.default is not None:
                    value = item.default
            if value is None:
                value = item.default if given else None
            if value is None:
                missing.append(f"{number}. {item.describe()}")
                continue
            answers.extend(forms.check_answer(item, value))
        if missing and not given and not asked:
            advisory = Advisory(title=f"A Gopher+ form: {url}", text=forms.form_advisory_text(fields),
                                fields={"form": [item.as_dict() for item in fields]})  # fmt: skip
            return Resource(url, "advisory", advisory=advisory, metadata=self._metadata(url))
        if missing:
            raise UsageError(
                "the form needs answers for: " + "; ".join(missing),
                hint="give them with --form NAME=VALUE (NAME = the field's number or prompt)",
                url=str(url),
            )
        filled = url.replace(plus=forms.form_plus(answers))
        assert isinstance(filled, GopherURL)
        guard.check(filled, self.session.policy)
        resource = await self._exchange(filled)
        resource.metadata["form_url"] = str(filled)
        return resource

    async def _fetch_form(self, url: GopherURL) -> list[forms.AskField]:
        """The item's +ASK block: `!+ASK` first, then all attributes if that filter is not understood."""
        for plus in ("!+ASK", "!"):
            asking = url.replace(plus=plus)
            assert isinstance(asking, GopherURL)
            source = await self._send(asking)
            try:
                line = await source.peek_line(MAX_HEADER + 2)
                header = parse_header(line) if line is not None else None
                if header is None or line is None:
                    continue
                source.consume(len(line))
                if not header.ok:
                    raise await self._plus_error(url, source, header)
                data = await self._collect(url, source, plus_decoder(header.length), header.length != -2)
            finally:
                await source.connection.aclose()
            for item in parse_attributes(data, self.settings.limits.attribute_bytes):
                if item.ask is not None:
                    return item.ask
            raise ProtocolError(f"{url} is marked as a form, but the server sent no +ASK block", url=str(url))
        raise ProtocolError(
            f"{url} is a Gopher+ form, but the server does not answer Gopher+ attribute requests",
            hint="fetch the item without %09%09? to get it as a plain document",
            url=str(url),
        )


class Handler(Hooks):
    """gopher: and gophers: URLs (RFC 1738 §3.4; RFC 1436; Gopher+)."""

    scheme = "gopher"
    default_port = 70

    # -- the bulk lane (fetcher/bulk/lanes.py): one connection per item anyway, so the
    # lane only saves the task path's frame around each exchange.

    def lane_key(self, url: URL, client: SessionHost, *, resume: bool) -> Hashable | None:
        from fetcher.handler import sequential_key

        return sequential_key(url, client, resume=resume)

    async def run_lane(self, work: LaneWork) -> None:
        from fetcher.handler import run_sequential

        await run_sequential(work)

    async def open(self, url: URL, session: Session) -> Resource:
        if not isinstance(url, GopherURL):
            url = parse_url(str(url))
            if not isinstance(url, GopherURL):
                raise UsageError(f"{url} is not a gopher URL")
        return await Retrieval(url, session).open()

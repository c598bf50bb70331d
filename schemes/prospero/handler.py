"""prospero:// URLs: list a directory, or resolve an object to its access method and follow it.

Request A lists the hsoname as a directory; `FAILURE NOT-A-DIRECTORY` means
it is an object, so request B asks for its ACCESS-METHOD (retrying with
`#ALL` for the 5.3 server's NOT-FOUND quirk), and the chosen method is
fetched through the same Client with `session.follow`, under the guard.
PROSPERO-CONTENTS is streamed over Prospero itself (request C).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fetcher.errors import (
    AuthError,
    ConnectError,
    NotFound,
    ProtocolError,
    Timeout,
    TransientError,
    UnsafeURL,
    URLError,
    UsageError,
)
from fetcher.handler import Advisory, Entry, Resource, check_port
from fetcher.schemes.prospero import access, ardp, protocol, transport
from fetcher.schemes.prospero.hooks import Hooks
from fetcher.text import escape
from fetcher.url import URL, ProsperoURL

if TYPE_CHECKING:
    from fetcher.handler import Session

trace = logging.getLogger("fetcher.trace")

DEFAULT_PORT = 1525
#: FORWARDED hops followed before giving up (the reference client's limit).
MAX_FORWARDS = 20
#: Schemes a resolution may lead to besides the redirect policy: the access
#: methods RFC 1738 lets a Prospero link name.  file: is never among them.
RESOLUTION_SCHEMES = frozenset({"ftp", "gopher", "telnet", "wais", "prospero"})
_AUTH_FAILURES = frozenset({"NOT-AUTHORIZED", "AUTHENTICATION-REQUIRED", "AUTHENTICATION-DATA"})
_TRACE_LINES = 200
#: What makes a resolution try the link's next access method: the archive
#: cannot be reached (nothing listens, no answer), refuses this client, or the
#: guard refuses the method's URL.  A missing file or a protocol error is final.
_FALLBACK = (ConnectError, Timeout, TransientError, AuthError, UnsafeURL)


@dataclass(frozen=True)
class Location:
    host: str
    port: int
    hsoname: str

    def url(self, fields: dict[str, str] | None = None) -> ProsperoURL:
        return ProsperoURL(scheme="prospero", host=self.host, port=self.port, hsoname=self.hsoname,
                           fields=fields or {}, fragment=None)  # fmt: skip

    @property
    def host_field(self) -> str:
        return self.host if self.port == DEFAULT_PORT else f"{self.host}({self.port})"


def _trace_message(prefix: str, message: bytes) -> None:
    if not trace.isEnabledFor(logging.DEBUG):
        return
    lines = message.split(b"\n")
    for raw in lines[:_TRACE_LINES]:
        if raw:
            trace.debug("%s %s", prefix, escape(protocol.text(raw)))
    if len(lines) > _TRACE_LINES:
        trace.debug("%s ... (%d more lines)", prefix, len(lines) - _TRACE_LINES)


def _trace_reply(reader: protocol.ReplyReader) -> None:
    """The first lines of a reply, as the reader split them (server text, so escaped)."""
    for tokens in reader.lines:
        trace.debug("< %s", escape(" ".join(protocol.text(token) for token in tokens)))
    if reader.count > len(reader.lines):
        trace.debug("< ... (%d more lines)", reader.count - len(reader.lines))


def raise_for(reply: protocol.Reply, where: Location, what: str) -> None:
    """Turn a failing reply into the exception of its exit code."""
    shown = f"{where.hsoname} on {where.host}:{where.port}"
    if reply.version_refused is not None:
        raise ProtocolError(
            f"the Prospero server at {where.host}:{where.port} does not speak version 5 "
            f"(VERSION-NOT-SUPPORTED {reply.version_refused})"
        )
    if reply.failure is not None:
        code, detail = reply.failure
        said = f"FAILURE {code} {detail}".rstrip()
        if code == "NOT-FOUND":
            raise NotFound(f"{shown}: not found ({said})", hint="check the hsoname in the URL")
        if code in _AUTH_FAILURES:
            raise AuthError(f"{shown}: {what} not allowed ({said})", hint="the server does not let this client in")
        if code == "SERVER-FAILED":
            raise TransientError(f"{shown}: the server failed ({said})")
        raise ProtocolError(f"{shown}: {what} refused ({said})")
    if reply.error is not None:
        raise ProtocolError(f"{shown}: the server did not accept the request (ERROR {reply.error})")


def _size(attributes: list[protocol.Attribute]) -> int | None:
    for attribute in attributes:
        if attribute.name == "SIZE" and attribute.values:
            number = attribute.values[0].split()[0] if attribute.values[0].split() else ""
            if number.isdigit():
                return int(number)
    return None


class Handler(Hooks):
    scheme = "prospero"
    default_port = DEFAULT_PORT

    async def open(self, url: URL, session: Session) -> Resource:
        if not isinstance(url, ProsperoURL):
            raise UsageError(f"the prospero handler cannot open {url.scheme}: URLs")
        if not url.hsoname:
            raise URLError(
                "prospero URL has no hsoname", part="hsoname", hint="name an object: prospero://host/hsoname"
            )
        target = protocol.target_from_fields(url.fields)
        metadata: dict[str, Any] = {}
        if target.unknown:
            metadata["unknown_fields"] = list(target.unknown)
            trace.warning(
                "* prospero: unknown URL field(s) %s sent as SELECT lines; the server may ignore them",
                ", ".join(escape(name) for name in target.unknown),
            )
        user = session.settings.user or "anonymous"
        start = Location(url.host, url.port, url.hsoname)
        # Per-link ATTRIBUTES only when --json or -v shows them: they make a
        # reply several times larger, and EXTERNAL links carry their
        # ACCESS-METHOD without them (notes §2.3).
        facts = session.settings.listing_facts or trace.isEnabledFor(logging.DEBUG)
        reply, where = await self._ask(
            session, start, lambda hs: protocol.list_request(user, hs, target, attributes=facts)
        )
        if reply.failure is None or reply.failure[0] != "NOT-A-DIRECTORY":
            raise_for(reply, where, "listing")
            return self._listing(url, reply, where, metadata)
        trace.debug("* prospero: %s is not a directory; asking for its access method", escape(where.hsoname))
        reply, where = await self._ask(
            session, where, lambda hs: protocol.object_info_request(user, hs, ["ACCESS-METHOD"], target)
        )
        if reply.failure is not None and reply.failure[0] == "NOT-FOUND":
            trace.debug("* prospero: ACCESS-METHOD alone gave NOT-FOUND; retrying with #ALL (server quirk)")
            reply, where = await self._ask(
                session, where, lambda hs: protocol.object_info_request(user, hs, ["#ALL"], target)
            )
        raise_for(reply, where, "object information")
        return await self._resolve(url, session, reply, where, target, user, metadata)

    # -- requests ---------------------------------------------------------------

    @staticmethod
    def _timers(session: Session, *, streaming: bool = False) -> ardp.Timers:
        """Retransmit on Prospero's own schedule within --timeout: for the whole reply of a listing,
        between two pieces of progress for a document (a long one is not cut short)."""
        settings = session.settings
        return ardp.Timers(
            timeout=settings.prospero_timeout,
            retries=settings.prospero_retries,
            ceiling=settings.timeout,
            budget=settings.timeout,
            renew=streaming,
        )

    @staticmethod
    def _reader(session: Session) -> protocol.ReplyReader:
        limits = session.settings.limits
        keep = _TRACE_LINES if trace.isEnabledFor(logging.DEBUG) else 0
        return protocol.ReplyReader(max_entries=limits.listing_entries, max_bytes=limits.listing_bytes,
                                    max_line=limits.line_bytes, keep_lines=keep)  # fmt: skip

    async def _ask(
        self, session: Session, where: Location, build: Callable[[str], bytes]
    ) -> tuple[protocol.Reply, Location]:
        """One request, following FORWARDED to the object's new home."""
        for _ in range(MAX_FORWARDS + 1):
            check_port("prospero", where.port, session.policy, default_port=DEFAULT_PORT)
            message = build(where.hsoname)
            _trace_message(">", message)
            reader = self._reader(session)
            reply = await transport.request(
                where.host, where.port, message, timers=self._timers(session), policy=session.policy,
                reader=reader, max_packets=session.settings.limits.ardp_packets,
            )  # fmt: skip
            _trace_reply(reader)
            for warning in reply.warnings:
                trace.warning("* prospero: server warning: %s", escape(warning))
            for line in reply.ignored:
                trace.warning("* prospero: unknown reply line ignored: %s", escape(line))
            if reply.forwarded is None:
                return reply, where
            moved = reply.forwarded
            host, port = protocol.split_host(moved.host)
            where = Location(host.lower(), port or DEFAULT_PORT, moved.hsoname)
            trace.debug("* prospero: FORWARDED to %s:%d %s", escape(where.host), where.port, escape(where.hsoname))
        raise ProtocolError(f"more than {MAX_FORWARDS} FORWARDED replies", hint="the servers forward in a loop")

    # -- directories ------------------------------------------------------------

    def _listing(self, url: ProsperoURL, reply: protocol.Reply, where: Location, metadata: dict[str, Any]) -> Resource:
        # Each link is let go as soon as its entry exists, so a long listing is never held twice.
        links, reply.links = reply.links, []
        links.reverse()
        entries = []
        while links:
            entries.append(self._entry(links.pop()))
        if reply.unresolved:
            metadata["unresolved"] = reply.unresolved
        return Resource(url, "listing", entries=entries, metadata=metadata)

    def _entry(self, link: protocol.Link) -> Entry:
        extra: dict[str, Any] = {"link": link.flavour, "target": link.target, "host": link.host,
                                 "hsoname": link.hsoname}  # fmt: skip
        method: access.Method | None = None
        target_url: str | None = None
        description = ""
        if link.target == "EXTERNAL":
            method, skipped = access.choose(link.access_methods(), link.host, link.hsoname)
            if method is not None and method.url is not None:
                target_url = str(method.url)
                extra["method"] = method.name
                description = method.hint
            else:
                description = "no usable access method" + (f" ({'; '.join(skipped)})" if skipped else "")
        elif link.target not in ("SYMBOLIC", "NULL"):
            try:
                target_url = str(access.prospero_url(link.host, link.hsoname))
            except ProtocolError as error:
                description = str(error)
        size = _size(link.attributes)
        return Entry(link.name, target_url, access.entry_type(link, method), size, description, extra)

    # -- objects ------------------------------------------------------------------

    async def _resolve(
        self,
        url: ProsperoURL,
        session: Session,
        reply: protocol.Reply,
        where: Location,
        target: protocol.Target,
        user: str,
        metadata: dict[str, Any],
    ) -> Resource:
        offered = reply.values("ACCESS-METHOD")
        names = ", ".join(values[0] for values in offered if values) or "none"
        methods, skipped = access.candidates(offered, where.host_field, where.hsoname)
        for reason in skipped:
            trace.debug("* prospero: access method skipped: %s", escape(reason))
        if not methods:
            raise ProtocolError(
                f"{where.hsoname} on {where.host}:{where.port}: no access method fetcher can follow (offered: {names})",
                hint="fetcher follows AFTP, FTP, GOPHER, TELNET, WAIS (with a database) and PROSPERO-CONTENTS",
            )
        if method_hint := methods[0].hint:
            trace.debug("* prospero: hint from the server: %s", escape(method_hint))
        if session.settings.resolve_only:
            method = methods[0]
            resolved = method.url if method.url is not None else where.url(url.fields)
            trace.debug("* prospero: %s resolves to %s via %s", escape(str(url)), escape(str(resolved)), method.name)
            info: dict[str, Any] = {"method": method.name, "resolved": str(resolved), "offered": names}
            fields: dict[str, Any] = {}
            if session.settings.listing_facts:  # --json: every method, field by field
                fields = {"url": str(resolved), "method": method.name,
                          "methods": access.describe(offered, where.host_field, where.hsoname)}  # fmt: skip
            return Resource(url, "advisory", advisory=Advisory("", str(resolved), fields=fields),
                            metadata={**metadata, "prospero": info})  # fmt: skip
        failures: list[str] = []
        for position, method in enumerate(methods):
            resolved = method.url if method.url is not None else where.url(url.fields)
            trace.debug("* prospero: %s resolves to %s via %s", escape(str(url)), escape(str(resolved)), method.name)
            info = {"method": method.name, "resolved": str(resolved), "offered": names}
            if failures:
                info["failed"] = list(failures)
            try:
                if method.url is None:
                    return await self._contents(url, session, where, target, user, {**metadata, "prospero": info})
                resource = await session.follow(method.url, reason="prospero resolution", schemes=RESOLUTION_SCHEMES)
            except _FALLBACK as error:
                if position == len(methods) - 1:
                    raise
                failures.append(f"{method.name}: {error}")
                trace.warning(
                    "* prospero: access method %s (%s) failed: %s; trying %s",
                    method.name, escape(str(resolved)), escape(str(error)), methods[position + 1].name,
                )  # fmt: skip
                continue
            resource.metadata.update(metadata)
            resource.metadata["prospero"] = {**info, "from": str(url)}
            return resource
        raise AssertionError("unreachable: the last method returns or raises")

    async def _contents(
        self,
        url: ProsperoURL,
        session: Session,
        where: Location,
        target: protocol.Target,
        user: str,
        metadata: dict[str, Any],
    ) -> Resource:
        """Request C: the bytes over Prospero, streamed out of the quoted DATA token."""
        check_port("prospero", where.port, session.policy, default_port=DEFAULT_PORT)
        message = protocol.object_info_request(user, where.hsoname, ["CONTENTS"], target)
        _trace_message(">", message)
        stack = AsyncExitStack()
        try:
            exchange = await stack.enter_async_context(
                transport.open_exchange(
                    where.host,
                    where.port,
                    message,
                    timers=self._timers(session, streaming=True),
                    policy=session.policy,
                )
            )
            chunks = exchange.__aiter__()
            stack.push_async_callback(chunks.aclose)  # type: ignore[attr-defined]
            limits = session.settings.limits
            decoder = protocol.ContentsDecoder(
                max_kept=limits.listing_bytes, max_lines=limits.listing_entries, max_line=limits.line_bytes
            )
            first = b""
            # Read until the data starts (or the reply ends), so a FAILURE is an
            # error of `open`, not of the body.
            while not first and not decoder.started:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                first += decoder.feed(chunk)
            if not decoder.started:
                reply = decoder.finish()
                raise_for(reply, where, "contents")
                raise ProtocolError(f"{where.hsoname} on {where.host}:{where.port}: the reply carried no CONTENTS")
        except BaseException:
            await stack.aclose()
            raise

        async def body() -> AsyncIterator[bytes]:
            if first:
                yield first
            async for chunk in chunks:
                data = decoder.feed(chunk)
                if data:
                    yield data
            rest = decoder.finish()
            for warning in rest.warnings:
                trace.warning("* prospero: server warning: %s", escape(warning))

        return Resource(url, "document", content_type="application/octet-stream", body=body(),
                        metadata=metadata, closer=stack.aclose)  # fmt: skip

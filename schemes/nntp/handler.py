"""nntp: (RFC 1738 §3.7) and news: (§3.6) URLs: articles, group listings, all groups.

Which server: an nntp:// URL names it; a news: URL names none (unless in
the RFC 5538 form news://host/...), so --nntp-server or $NNTPSERVER does.
Conversations are pooled per (scheme, host, port, user), so listing a group
and then fetching its articles with one Client greets the server once.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TypeVar

from fetcher.errors import AuthError, LimitExceeded, URLError, UsageError
from fetcher.handler import Closer, Connection, Entry, Limits, Resource, Session, current_tap, trace
from fetcher.schemes.nntp.client import Login, NntpSession, StaleSession, open_session, parse_server
from fetcher.schemes.nntp.hooks import Hooks
from fetcher.schemes.nntp.overview import (
    Overview,
    article_window,
    older_note,
    overview_from_headers,
    parse_active,
    parse_headers,
    parse_overview,
)
from fetcher.schemes.nntp.responses import (
    BadReply,
    BlockLimit,
    command,
    message_id_argument,
    parse_article_status,
    parse_group,
)
from fetcher.text import escape, safe_filename
from fetcher.url import URL, NewsURL, NntpURL, parse_url

log = logging.getLogger("fetcher")

TLS_SCHEMES = frozenset({"nntps", "snews"})
#: Codes after which OVER is not there: try XOVER, then HEAD per article.
_NO_OVERVIEW = frozenset({500, 501, 503})


@dataclass(frozen=True)
class Server:
    """Where a URL's articles live, and how to reach them."""

    scheme: str
    host: str
    port: int
    tls: bool

    def pool_key(self, user: str | None) -> tuple[str, str, int, str | None]:
        return (self.scheme, self.host, self.port, user)


def server_for(url: NntpURL | NewsURL, nntp_server: str | None) -> Server:
    """The server a URL's articles come from; a news: URL without one is a usage error (exit 2)."""
    tls = url.scheme in TLS_SCHEMES
    default_port = 563 if tls else 119
    if url.host:
        return Server(url.scheme, url.host, url.port or default_port, tls)
    if not nntp_server:
        raise UsageError(
            f"{url} names no news server, and none is configured",
            hint="name one with --nntp-server HOST[:PORT] or the NNTPSERVER environment variable",
        )
    host, port = parse_server(nntp_server, default_port=default_port)
    return Server(url.scheme, host, port, tls)


def _article_url(server: Server, group: str, number: int) -> str | None:
    scheme = "nntps" if server.tls else "nntp"
    url = NntpURL(scheme=scheme, host=server.host, port=server.port, group=group, article=number, fragment=None)
    return _checked(str(url))


def _group_url(url: NewsURL, name: str) -> str | None:
    return _checked(str(url.replace(group=name, message_id=None, fragment=None)))


def _checked(text: str) -> str | None:
    """A URL built from server data, only if it parses back (a hostile group name gives no URL)."""
    try:
        parse_url(text)
    except URLError:
        return None
    return text


def _modified(item: Overview) -> datetime | None:
    """The overview's Date as an aware UTC time (a date without a zone is taken as UTC)."""
    when = item.timestamp
    if when is None:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _article_entry(server: Server, group: str, item: Overview) -> Entry:
    """One overview line: every fact in --json; -r saves the article as NUMBER.eml, once."""
    return Entry(
        name=str(item.number),
        url=_article_url(server, group, item.number),
        type="article",
        size=item.size,
        description=" | ".join(part for part in (item.subject, item.sender, item.date) if part),
        extra={
            "number": item.number,
            "subject": item.subject,
            "from": item.sender,
            "date": item.date,
            "message_id": item.message_id,
            "references": item.references,
            "bytes": item.size,
            "lines": item.lines,
            # As --json writes Entry.modified; kept out of that field so the
            # terminal table keeps its subject column (facts_table drops it).
            "modified": when.isoformat() if (when := _modified(item)) is not None else None,
        },
        filename=f"{item.number}.eml",
        immutable=True,
    )


class Held:
    """What a listing's entries hold in memory, against listing_bytes.

    Each entry costs ENTRY_COST (the objects around its strings) plus its
    strings as Python stores them, so a listing of short lines and one of
    huge lines both stay within the cap's memory, not only its bytes.
    """

    #: The Overview, the Entry, its `extra` dict, description, file name and
    #: ISO date: about 850 bytes in fact.
    ENTRY_COST = 640

    def __init__(self, limits: Limits, what: str) -> None:
        self.cap = limits.listing_bytes
        self.what = what
        self.size = 0

    def add(self, *texts: str) -> None:
        self.size += self.ENTRY_COST + sum(sys.getsizeof(text) for text in texts)
        if self.size > self.cap:
            raise LimitExceeded(f"bytes in {self.what} (as held in memory)", self.cap, "listing_bytes")


T = TypeVar("T")


async def _listing_block(
    nntp: NntpSession, what: str, archived_as: str, parse: Callable[[bytes], T], texts: Callable[[T], tuple[str, ...]]
) -> list[T]:
    """A listing block (OVER/XOVER, LIST ACTIVE), each line parsed as it arrives, under the listing caps.

    The archive tap gets each line as the server sent it (dot-unstuffed);
    `texts` names what an item keeps in memory (charged by `Held`).  A line
    that does not parse is skipped: one strange line does not fail a listing.
    """
    items: list[T] = []
    held = Held(nntp.limits, what)
    tap = current_tap()
    async for line in nntp.iter_block(BlockLimit.listing(what, nntp.limits)):
        if tap is not None:
            tap.listing(line + b"\r\n", archived_as)
        try:
            item = parse(line)
        except BadReply as error:
            trace.debug("* skipped: %s", escape(str(error)))
            continue
        held.add(*texts(item))
        items.append(item)
    return items


def _overview_texts(item: Overview) -> tuple[str, ...]:
    return (item.subject, item.sender, item.date, item.message_id, item.references)


class Handler(Hooks):
    scheme = "nntp"
    default_port = 119

    async def open(self, url: URL, session: Session) -> Resource:
        if not isinstance(url, NntpURL | NewsURL):
            raise UsageError(f"the news handler cannot open {url.scheme}: URLs")
        server = server_for(url, session.settings.nntp_server)
        found = session.credentials(server.host)
        user = found[0] if found else None
        login = self._login(session, server, found)
        operation: Callable[[NntpSession, Closer], Awaitable[Resource]]
        if isinstance(url, NntpURL) and url.article is not None:
            operation = partial(self._article, url, session, login, group=url.group, number=url.article)
        elif isinstance(url, NewsURL) and url.message_id is not None:
            operation = partial(self._article, url, session, login, message_id=url.message_id)
        elif isinstance(url, NewsURL) and url.group == "*":
            operation = partial(self._all_groups, url, login)
        else:
            group = url.group or ""
            operation = partial(self._group_listing, url, session, server, login, group)
        return await self._run(session, server, server.pool_key(user), operation)

    # -- sessions -------------------------------------------------------------

    async def _run(
        self,
        session: Session,
        server: Server,
        key: tuple[str, str, int, str | None],
        operation: Callable[[NntpSession, Closer], Awaitable[Resource]],
    ) -> Resource:
        """Run `operation` on a pooled session (reconnecting once if it went stale) or a new one.

        A listing's session goes back to the pool at once; a document's goes
        back when its body has been read to the end (see `_release`).
        """
        pooled = await session.pool.take(key)
        if isinstance(pooled, NntpSession):
            pooled.reused = True
            try:
                return await self._guarded(session, key, pooled, operation)
            except StaleSession as error:
                trace.debug("* %s; reconnecting", error)

        async def connect() -> Connection:
            return await session.connect(server.host, server.port, scheme=server.scheme, tls=server.tls)

        nntp = await open_session(connect, starttls=session.settings.starttls, context=session.ssl_context,
                                  limits=session.settings.limits)  # fmt: skip
        return await self._guarded(session, key, nntp, operation)

    async def _guarded(
        self,
        session: Session,
        key: tuple[str, str, int, str | None],
        nntp: NntpSession,
        operation: Callable[[NntpSession, Closer], Awaitable[Resource]],
    ) -> Resource:

        async def closer() -> None:
            await self._release(session, key, nntp)

        try:
            resource = await operation(nntp, closer)
        except StaleSession:
            await nntp.abort()
            raise
        except BaseException:
            await self._release(session, key, nntp)
            raise
        if resource.kind != "document":
            await self._release(session, key, nntp)
        return resource

    async def _release(self, session: Session, key: tuple[str, str, int, str | None], nntp: NntpSession) -> None:
        if nntp.healthy:
            await session.pool.give(key, nntp)
        else:
            await nntp.abort()

    def _login(self, session: Session, server: Server, found: tuple[str, str | None] | None) -> Login:
        async def login() -> tuple[str, str]:
            user, password = found if found else (None, None)
            where = f"{server.host}:{server.port}"
            if user is None:
                user = await session.ask(f"The news server {where} wants a login. User: ")
                if not user:
                    raise AuthError(
                        f"the news server {where} requires a login (480) and no user name is known",
                        hint="give -u USER[:PASSWORD] or add the host to ~/.netrc",
                    )
            if password is None:
                password = await session.ask(f"Password for {user} at {where}: ", secret=True)
                if password is None:
                    raise AuthError(
                        f"the news server {where} requires a password for {user} and none is known",
                        hint="give -u USER:PASSWORD, add the host to ~/.netrc, or run on a terminal to be asked",
                    )
            return user, password

        return login

    # -- operations -------------------------------------------------------------

    async def _article(
        self,
        url: NntpURL | NewsURL,
        session: Session,
        login: Login,
        nntp: NntpSession,
        closer: Closer,
        *,
        group: str | None = None,
        number: int | None = None,
        message_id: str | None = None,
    ) -> Resource:
        if group is not None and number is not None:
            await nntp.request(command("GROUP", group), f"selecting newsgroup {group}", {211}, login=login)
            line, doing = command("ARTICLE", str(number)), f"fetching article {number} of {group}"
            filename = f"{group}.{number}"
        else:
            assert message_id is not None
            line, doing = command("ARTICLE", message_id_argument(message_id)), f"fetching article <{message_id}>"
            filename = safe_filename(message_id)
        reply = await nntp.request(line, doing, {220}, login=login)
        status = parse_article_status(reply)
        metadata: dict[str, object] = {"number": status.number or number, "message_id": status.message_id}
        if group is not None:
            metadata["group"] = group
        body: AsyncIterator[bytes] = nntp.iter_body(raw=session.settings.raw)
        return Resource(
            url,
            "document",
            content_type="message/rfc822",
            size=None,
            body=body,
            filename=filename,
            metadata=metadata,
            closer=closer,
        )

    async def _group_listing(
        self, url: URL, session: Session, server: Server, login: Login, group: str, nntp: NntpSession, _: Closer
    ) -> Resource:
        reply = await nntp.request(command("GROUP", group), f"selecting newsgroup {group}", {211}, login=login)
        status = parse_group(reply)
        wanted = session.settings.article_range
        window = article_window(status.first, status.last, status.count, wanted)
        items = [] if window is None else await self._overview(nntp, group, window, login)
        items.sort(key=lambda item: item.number)
        metadata: dict[str, object] = {"group": group, "count": status.count, "first": status.first,
                                       "last": status.last}  # fmt: skip
        note = None if wanted is not None else older_note(group, status.first, status.last, status.count, window,
                                                          len(items))  # fmt: skip
        if note is not None:
            metadata["note"] = note
            log.warning("fetch: note: %s", escape(note))
        return Resource(
            url,
            "listing",
            entries=[_article_entry(server, group, item) for item in items],
            metadata=metadata,
        )

    async def _overview(self, nntp: NntpSession, group: str, window: tuple[int, int], login: Login) -> list[Overview]:
        low, high = window
        span = f"{low}-{high}"
        doing = f"listing articles {span} of {group}"
        limits = nntp.limits
        for verb in ("OVER", "XOVER") if nntp.offers("OVER") else ("XOVER",):
            reply = await nntp.request(command(verb, span), doing, {224, 420, 423, *_NO_OVERVIEW}, login=login)
            if reply.code in (420, 423):
                return []
            if reply.code == 224:
                what = f"the overview of {group}"
                return await _listing_block(nntp, what, "text/x-nntp-overview", parse_overview, _overview_texts)
        trace.debug("* no overview on this server; reading the headers of each article")
        if high - low + 1 > limits.listing_entries:
            raise LimitExceeded(f"articles to list one HEAD at a time ({span})", limits.listing_entries,
                                "listing_entries")  # fmt: skip
        items = []
        held = Held(limits, f"the heads of {group}")
        for number in range(low, high + 1):
            reply = await nntp.request(command("HEAD", str(number)), doing, {221, 423, 430}, login=login)
            if reply.code == 221:
                lines = await nntp.read_block(BlockLimit.reply(f"the head of article {number}", limits))
                item = overview_from_headers(number, parse_headers(lines))
                held.add(*_overview_texts(item))
                items.append(item)
        return items

    async def _all_groups(self, url: NewsURL, login: Login, nntp: NntpSession, _: Closer) -> Resource:
        doing = "listing the newsgroups"
        reply = await nntp.request("LIST ACTIVE", doing, {215, *_NO_OVERVIEW}, login=login)
        if reply.code != 215:
            await nntp.request("LIST", doing, {215}, login=login)
        groups = await _listing_block(nntp, "the list of newsgroups", "text/x-nntp-active", parse_active,
                                      lambda group: (group.name, group.name, group.status))  # fmt: skip
        entries: list[Entry] = []
        for group in groups:
            flags = {"y": "", "n": ", no posting", "m": ", moderated"}.get(group.status[:1], "")
            entries.append(
                Entry(
                    name=group.name,
                    url=_group_url(url, group.name),
                    type="group",
                    description=f"{group.estimate} articles ({group.low}-{group.high}){flags}",
                    extra={"high": group.high, "low": group.low, "status": group.status},
                )
            )
        entries.sort(key=lambda entry: entry.name)
        return Resource(url, "listing", entries=entries)

"""`Session`: what one retrieval hands to its handler.

The settings, the guarded `connect`, the shared pool, credentials, a way to
ask the user, and `follow` for redirects and resolutions.  Handlers never
see the Client: a Session reaches it only through `SessionHost`, the few
calls it makes back (the client builds Sessions; nothing here imports it).
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Protocol

from fetcher import guard
from fetcher.errors import ProtocolError
from fetcher.handler.notes import NO_NOTES, RequestNotes
from fetcher.net import aio
from fetcher.net.connect import open_connection
from fetcher.net.connection import Connection
from fetcher.net.tracing import trace
from fetcher.url import URL, parse_url

if TYPE_CHECKING:
    from fetcher.archive import tap
    from fetcher.handler.validators import Validators
    from fetcher.net.budget import Budget
    from fetcher.net.pool import Pool
    from fetcher.resource import Resource
    from fetcher.settings import Settings

#: (scheme, host, port): the origin -u credentials belong to (`URL.origin`).
Origin = tuple[str, str, "int | None"]


class SessionHost(Protocol):
    """What a Session (and a bulk lane) calls back: `fetcher.client.Client` provides it."""

    settings: Settings
    policy: guard.Policy
    pool: Pool
    #: Where connections went, for -w's remote_ip/remote_port (None: nothing kept).
    peers: dict[tuple[str, int], tuple[str, int]] | None

    def ssl_context(self) -> ssl.SSLContext: ...

    def remember_peer(self, url: URL, connection: Connection, port: int) -> None: ...

    def netrc_credentials(self, host: str) -> tuple[str, str | None] | None: ...

    def budget(self, url: URL) -> Budget: ...

    async def _open(self, session: Session) -> Resource:
        """Run `session`'s retrieval (the guard, the scheme's handler): how `follow` takes its next hop."""
        ...


class Session:
    """One retrieval's view of the client (see module docstring)."""

    def __init__(
        self,
        client: SessionHost,
        url: URL,
        *,
        offset: int = 0,
        hops: int = 0,
        origin: URL | None = None,
        user_origin: Origin | None = None,
        validators: Validators | None = None,
        notes: RequestNotes = NO_NOTES,
    ) -> None:
        self.client = client
        self.url = url
        self.settings = client.settings
        self.policy = client.policy
        self.pool = client.pool
        #: Resume point the caller asked for; handlers that can resume honour it
        #: and report where the body really starts in `Resource.offset`.
        self.offset = offset
        #: What was recorded about the document the resumed part belongs to (fetcher/disk/resume.py):
        #: a handler that finds it changed starts over instead of appending another version's tail.
        self.validators = validators
        #: What the caller knows about this URL (fetcher.handler.notes): -N's conditions, FTP confinement.
        #: A redirect's or a resolution's session has none: they were about this URL.
        self.notes = notes
        self.hops = hops
        #: The URL the user asked for (before redirects): credentials given for
        #: it must not travel to another origin.
        self.origin = origin if origin is not None else url
        #: (scheme, host, port) the -u credentials were given for.
        self.user_origin = user_origin if user_origin is not None else self.origin.origin
        self.trace = trace
        #: What this retrieval says and hears, for an archive (None unless recording).
        self.tap: tap.Tap | None = None

    def __repr__(self) -> str:
        return f"<Session {self.url.redacted()} hops={self.hops}>"

    async def connect(
        self,
        host: str,
        port: int,
        *,
        scheme: str | None = None,
        tls: bool | ssl.SSLContext = False,
        server_hostname: str | None = None,
        what: str = "port",
    ) -> Connection:
        """A guarded connection; `what` names it in refusals ("data port")."""
        scheme = scheme or self.url.scheme
        context: ssl.SSLContext | None
        context = self.client.ssl_context() if tls is True else tls or None
        connection = await open_connection(
            host,
            port,
            scheme=scheme,
            policy=self.policy,
            default_port=self.url.default_port if scheme == self.url.scheme else None,
            timeout=self.settings.timeout,
            connect_timeout=self.settings.connect_timeout,
            tls=context,
            server_hostname=server_hostname,
            what=what,
        )
        if self.client.peers is not None and what != "data port":  # -w %{remote_ip}: only when asked
            self.client.remember_peer(self.url, connection, port)
        return connection

    def ssl_context(self) -> ssl.SSLContext:
        return self.client.ssl_context()

    def credentials(self, host: str) -> tuple[str, str | None] | None:
        """-u USER[:PASSWORD] on its own origin, else ~/.netrc (or $NETRC) for `host`.

        -u credentials belong to the scheme, host and port of the URL they
        were given for; a redirect, a resolution or another URL of a bulk
        run that leads elsewhere gets that host's netrc entry or nothing
        (anonymous), unless `location_trusted` says otherwise.
        """
        if self.settings.user is not None and (self.settings.location_trusted or self.url.origin == self.user_origin):
            return self.settings.user, self.settings.password
        return self.client.netrc_credentials(host)

    async def ask(self, prompt: str, *, secret: bool = False) -> str | None:
        """Ask the user (on a terminal); None when nobody can answer."""
        asker = self.settings.prompt
        if asker is None:
            return None
        return await aio.run_sync(asker, prompt, secret)

    async def follow(
        self, target: URL | str, *, reason: str = "redirect", schemes: frozenset[str] = frozenset()
    ) -> Resource:
        """Open a URL a server pointed to, under the redirect policy and the guard.

        `schemes` are allowed in addition to the redirect policy (resolutions
        whose whole point is another protocol); file: is never followed.
        """
        url = parse_url(target) if isinstance(target, str) else target
        if self.hops + 1 > self.settings.max_redirects:
            raise ProtocolError(
                f"more than {self.settings.max_redirects} redirects",
                hint="the server may be looping; raise --max-redirs if not",
            )
        guard.check_redirect(self.url, url, self.policy, also=schemes)
        trace.debug("* %s to %s", reason, url.redacted())
        if self.tap is not None:
            await self.tap.commit(hop=True)
        return await self.client._open(Session(
            self.client, url, offset=self.offset, hops=self.hops + 1, origin=self.origin,
            user_origin=self.user_origin, validators=self.validators,
        ))  # fmt: skip

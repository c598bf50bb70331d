"""The NNTP conversation on trio: connect, greet, log in, ask, stream; pool what is idle.

Parsing lives in `responses` and `overview`; this module only moves bytes
between a `fetcher.net.connection.Connection` and those pure functions, and keeps
track of whether a conversation is in step (so it can go back to the pool).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Container

from fetcher.errors import AuthError, ProtocolError, UsageError
from fetcher.handler import DEFAULT_LIMITS, Connection, Limits, aio, move_on_after, trace
from fetcher.schemes.nntp.responses import (
    BlockLimit,
    BodyDecoder,
    Reply,
    capability_summary,
    command,
    error_for,
    parse_capabilities,
    parse_status,
    unstuff_line,
)

#: Asks for (user, password) when the server answers 480; raises AuthError when none can be had.
Login = Callable[[], Awaitable[tuple[str, str]]]


class StaleSession(ProtocolError):
    """A pooled conversation the server had already ended; the caller reconnects."""


def parse_server(text: str, *, default_port: int) -> tuple[str, int]:
    """`HOST`, `HOST:PORT` or `[V6]:PORT` from --nntp-server / $NNTPSERVER."""
    text = text.strip()
    host, port_text = text, ""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            host = ""
        port_text = rest[1:]
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    if not host or any(ch in host for ch in " \t/@") or (port_text and not port_text.isdigit()):
        raise UsageError(
            f"{text!r} is not a news server (HOST or HOST:PORT)",
            hint="for example --nntp-server news.example.org:119",
        )
    port = int(port_text) if port_text else default_port
    if not 0 < port < 65536:
        raise UsageError(f"{port} is not a port number", hint="ports are 1-65535")
    return host, port


class NntpSession:
    """One conversation with a news server.

    `busy` is True from a command until its reply (and data block) has been
    read to the end; a session that is busy or `broken` is closed rather
    than pooled, because the next reply would belong to the wrong command.
    Being poolable, `aclose` says QUIT when the conversation is in step.
    """

    def __init__(self, connection: Connection, limits: Limits = DEFAULT_LIMITS) -> None:
        self.connection = connection
        self.limits = limits
        self.capabilities: dict[str, tuple[str, ...]] = {}
        self.capabilities_known = False
        self.authenticated = False
        self.busy = False
        self.broken = False
        #: Taken from the pool and not yet answered: a failure means the server hung up meanwhile.
        self.reused = False

    @property
    def healthy(self) -> bool:
        return not (self.busy or self.broken or self.connection.closed)

    # -- lines -------------------------------------------------------------

    async def send(self, line: str, *, shown: str | None = None) -> None:
        self.busy = True
        try:
            await self.connection.send_line(line, shown=shown)
        except BaseException:
            self.broken = True
            raise

    async def read_line(self) -> bytes:
        """One line, at most `limits.line_bytes` long (LimitExceeded past it)."""
        return await self.connection.read_line(self.limits.line_bytes, limit_name="line_bytes")

    async def read_reply(self) -> Reply:
        """The next status line; a single-line reply ends the command."""
        try:
            line = await self.read_line()
        except BaseException:
            self.broken = True
            raise
        if not line.endswith(b"\n"):
            self.broken = True
            raise ProtocolError(
                f"the news server {self.connection.host}:{self.connection.port} closed the connection",
                hint="the server may limit connections or idle time; try again",
            )
        self.connection.trace_received(line)
        try:
            reply = parse_status(line)
        except ProtocolError:
            self.broken = True
            raise
        if not reply.multiline:
            self.busy = False
        return reply

    async def ask(self, line: str, *, shown: str | None = None) -> Reply:
        """Send one command and read its status line (not its data block)."""
        reused, self.reused = self.reused, False
        try:
            await self.send(line, shown=shown)
            reply = await self.read_reply()
        except ProtocolError as error:
            if reused:
                raise StaleSession(f"pooled connection was closed: {error}") from None
            raise
        if reused and reply.code in (400, 205):
            self.broken = True
            raise StaleSession(f"pooled connection was ended by the server: {reply}")
        return reply

    async def iter_block(self, limit: BlockLimit | None = None) -> AsyncIterator[bytes]:
        """The lines of a multi-line data block, unstuffed, without line ends.

        `limit` bounds its lines and bytes (by default those of a listing), so
        an endless block ends in LimitExceeded however it is read.
        """
        if limit is None:
            limit = BlockLimit.listing("one reply", self.limits)
        try:
            while True:
                line = await self.read_line()
                if not line.endswith(b"\n"):
                    raise ProtocolError(
                        f"the news server {self.connection.host}:{self.connection.port} closed the connection "
                        "in the middle of a list",
                        hint="the listing is incomplete; try again",
                    )
                data = unstuff_line(line)
                if data is None:
                    break
                limit.count(line)
                yield data
        except BaseException:
            self.broken = True
            raise
        self.busy = False

    async def read_block(self, limit: BlockLimit | None = None) -> list[bytes]:
        return [line async for line in self.iter_block(limit)]

    async def skip_block(self) -> None:
        async for _ in self.iter_block():
            pass

    async def iter_body(self, *, raw: bool) -> AsyncIterator[bytes]:
        """The article of a 220/221/222 reply as decoded chunks; raises if the final "." never comes."""
        decoder = BodyDecoder(raw=raw)
        received = 0
        try:
            while not decoder.done:
                data = await self.connection.receive_some()
                if not data:
                    raise decoder.eof_error(received)
                received += len(data)
                chunk = decoder.feed(data)
                if chunk:
                    yield chunk
        except BaseException:
            self.broken = True
            raise
        if decoder.leftover:
            # Bytes nobody asked for: the conversation is out of step.
            self.broken = True
        self.busy = False

    # -- conversation steps ---------------------------------------------------

    async def request(self, line: str, doing: str, expect: Container[int], *, login: Login | None) -> Reply:
        """Send a command; on 480 log in once and send it again; a reply not in `expect` raises."""
        reply = await self.ask(line)
        if reply.code == 480 and login is not None and not self.authenticated:
            await self.authenticate(login)
            reply = await self.ask(line)
        if reply.code not in expect:
            if reply.multiline:
                await self.skip_block()
            raise error_for(reply, doing)
        return reply

    async def handshake(self, *, starttls: bool, context: Callable[[], ssl.SSLContext]) -> None:
        """Greeting, MODE READER (5xx tolerated), CAPABILITIES when offered, STARTTLS when asked."""
        host, port = self.connection.host, self.connection.port
        self.busy = True
        greeting = await self.read_reply()
        if greeting.code not in (200, 201):
            self.broken = True
            raise error_for(greeting, f"connecting to the news server {host}:{port}")
        reply = await self.ask("MODE READER")
        if reply.code == 400:
            raise error_for(reply, f"MODE READER on {host}:{port}")
        if reply.multiline:
            await self.skip_block()
        await self.load_capabilities()
        if starttls and not self.connection.is_tls:
            if self.capabilities_known and "STARTTLS" not in self.capabilities:
                raise ProtocolError(
                    f"--starttls: the news server {host}:{port} does not offer STARTTLS",
                    hint="use nntps:// (implicit TLS on port 563), or drop --starttls",
                )
            reply = await self.ask("STARTTLS")
            if reply.code != 382:
                if reply.multiline:
                    await self.skip_block()
                raise ProtocolError(
                    f"--starttls: the news server {host}:{port} refused STARTTLS: {str(reply)[:200]!r}",
                    hint="use nntps:// (implicit TLS on port 563), or drop --starttls",
                )
            try:
                await self.connection.start_tls(context(), host)
            except BaseException:
                self.broken = True
                raise
            await self.load_capabilities()

    async def load_capabilities(self) -> None:
        reply = await self.ask("CAPABILITIES")
        if reply.code == 101:
            lines = await self.read_block(BlockLimit.reply("the CAPABILITIES reply", self.limits))
            self.capabilities = parse_capabilities(lines, self.limits)
            self.capabilities_known = True
        else:
            if reply.multiline:
                await self.skip_block()
            self.capabilities, self.capabilities_known = {}, False

    def offers(self, label: str) -> bool:
        """Whether the server may support `label`: listed, or capabilities unknown (an RFC 977 server)."""
        return not self.capabilities_known or label in self.capabilities

    async def authenticate(self, login: Login) -> None:
        """AUTHINFO USER / AUTHINFO PASS (RFC 4643 §2.3)."""
        user, password = await login()
        for what, value in (("user name", user), ("password", password)):
            if not value or any(ch in value for ch in " \t\r\n\x00"):
                raise AuthError(
                    f"the {what} cannot be sent with AUTHINFO (empty, or holds white space)",
                    hint="NNTP user names and passwords are single words",
                )
        where = f"{self.connection.host}:{self.connection.port}"
        reply = await self.ask(command("AUTHINFO", "USER", user))
        if reply.code == 381:
            reply = await self.ask(command("AUTHINFO", "PASS", password), shown="AUTHINFO PASS ****")
        if reply.code != 281:
            if reply.multiline:
                await self.skip_block()
            if reply.code in (381, 480, 482):
                raise AuthError(f"logging in to {where}: the server replied {str(reply)[:200]!r}")
            raise error_for(reply, f"logging in to {where} as {user}")
        self.authenticated = True

    async def aclose(self) -> None:
        """QUIT when in step, then close; never waits long (it also runs at shutdown)."""
        if self.connection.closed:
            return
        if self.healthy:
            with aio.cancel_scope(shield=True), move_on_after(1):
                try:
                    await self.connection.send_line("QUIT")
                    line = await self.read_line()
                    if line:
                        self.connection.trace_received(line)
                except Exception:  # the server may already be gone; closing is all that is left
                    pass
        await self.connection.aclose()

    async def abort(self) -> None:
        """Close without QUIT (the conversation is out of step)."""
        self.broken = True
        await self.connection.aclose()


async def open_session(
    connect: Callable[[], Awaitable[Connection]],
    *,
    starttls: bool,
    context: Callable[[], ssl.SSLContext],
    limits: Limits = DEFAULT_LIMITS,
) -> NntpSession:
    """A fresh, greeted session; the connection is closed again if the greeting fails."""
    session = NntpSession(await connect(), limits)
    try:
        await session.handshake(starttls=starttls, context=context)
    except BaseException:
        await session.abort()
        raise
    trace.debug("* news server capabilities: %s", capability_summary(session.capabilities) or "(none)")
    return session

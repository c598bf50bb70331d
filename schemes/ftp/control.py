"""The FTP control connection (on trio or asyncio): greeting, login, commands, passive data ports.

Only bytes move here; every reply is parsed by `replies`.  A `Control`
remembers what later URLs of the same Client need to reuse it safely: the
login directory (`PWD`), the CWDs done since, the current TYPE,
whether EPSV works, and whether data connections must be protected by TLS.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from typing import cast

from fetcher.errors import AuthError, FetchError, LimitExceeded, ProtocolError, TransientError
from fetcher.handler import DEFAULT_LIMITS, Connection, Limits, aio, trace
from fetcher.schemes.ftp.replies import Reply, ReplyReader, command_line, error_for, parse_epsv, parse_pasv, parse_pwd

#: Replies to EPSV after which PASV is worth trying (not understood / not for this network).
_EPSV_REFUSED = frozenset({500, 501, 502, 504, 522})

Connect = Callable[..., Awaitable[Connection]]
Ask = Callable[..., Awaitable[str | None]]


class StaleControl(Exception):
    """A pooled control connection was closed by the server while idle; reconnect."""


class Control:
    """One logged-in control connection (see the module docstring)."""

    def __init__(self, conn: Connection, *, tls_data: bool = False, limits: Limits = DEFAULT_LIMITS) -> None:
        self.conn = conn
        self.limits = limits
        self.reader = ReplyReader(max_lines=limits.reply_lines, line_bytes=limits.line_bytes)
        #: The login directory from PWD; None when the reply could not be parsed.
        self.home: str | None = None
        #: The CWD arguments that succeeded since login or the last return home,
        #: None when unknown (a CWD whose reply never came).
        self.path: tuple[str, ...] | None = ()
        self.type: str | None = None
        self.epsv = True
        self.tls_data = tls_data
        #: False once the conversation is in an unknown state (never pooled again).
        self.healthy = True
        #: Set when taken from the pool: a failure before the first reply means stale.
        self.reused = False
        #: Commands sent whose final reply has not been read (the greeting counts).
        self.outstanding = 1
        #: True while a RETR body is being read.
        self.transferring = False
        #: The peer's address, asked once (`peer_host`).
        self._peer: str | None = None

    def __repr__(self) -> str:
        return f"<FTP control {self.conn.host}:{self.conn.port}>"

    @property
    def reusable(self) -> bool:
        """In a known, idle state, and able to find its way back to the login directory."""
        return (
            self.healthy
            and not self.conn.closed
            and self.outstanding == 0
            and not self.transferring
            and self.path is not None
            and not (self.path and self.home is None)
        )

    # -- replies and commands ------------------------------------------------

    async def read_reply(self) -> Reply:
        """The next complete reply; the connection is unusable after any error here."""
        try:
            with self.conn.within():  # the whole (multi-line) reply within --timeout
                while True:
                    line = await self._read_line()
                    if not line:
                        raise ProtocolError(
                            f"{self.conn.host}:{self.conn.port} closed the control connection",
                            hint="the server hung up; try again",
                        )
                    self.conn.trace_received(line)
                    reply = self.reader.feed(line)
                    if reply is not None:
                        break
        except BaseException:
            self.healthy = False
            raise
        if not reply.preliminary:
            self.outstanding -= 1
        if self.reused:
            self.reused = False
            if reply.code == 421:
                self.healthy = False
                raise StaleControl(reply.summary)
        return reply

    async def _read_line(self) -> bytes:
        return await self.conn.read_line(limit=self.limits.line_bytes, limit_name="line_bytes")

    async def send(self, verb: str, argument: str | None = None, *, shown: str | None = None) -> None:
        try:
            await self.conn.send_line(command_line(verb, argument), shown=shown)
            self.outstanding += 1
        except ProtocolError as error:
            self.healthy = False
            if self.reused:
                raise StaleControl(str(error)) from None
            raise

    async def command(self, verb: str, argument: str | None = None, *, shown: str | None = None) -> Reply:
        """Send one command and return its final reply (1xx marks are skipped)."""
        await self.send(verb, argument, shown=shown)
        try:
            reply = await self.final_reply()
        except ProtocolError as error:
            if self.reused:
                raise StaleControl(str(error)) from None
            raise
        return reply

    async def final_reply(self) -> Reply:
        """The next reply that is not a 1xx mark (at most `reply_lines` marks before it)."""
        reply = await self.read_reply()
        marks = 0
        while reply.preliminary:
            marks += 1
            if marks > self.limits.reply_lines:
                self.healthy = False
                raise LimitExceeded("1xx replies before a final reply", self.limits.reply_lines, "reply_lines")
            reply = await self.read_reply()
        return reply

    async def expect(self, verb: str, argument: str | None, doing: str, *, shown: str | None = None) -> Reply:
        """A command that must succeed (2xx); anything else raises the mapped error."""
        reply = await self.command(verb, argument, shown=shown)
        if not reply.ok:
            raise error_for(reply, doing)
        return reply

    async def set_type(self, code: str) -> None:
        if self.type == code:
            return
        self.type = None
        await self.expect("TYPE", code, f"switching to TYPE {code}")
        self.type = code

    # -- greeting, TLS and login ---------------------------------------------

    async def greet(self) -> None:
        reply = await self.final_reply()  # after 120 "service ready in nnn minutes"
        if reply.code != 220:
            self.healthy = False
            raise error_for(reply, f"the server at {self.conn.host}:{self.conn.port} refused the connection")

    async def auth_tls(self, context: ssl.SSLContext, server_hostname: str) -> None:
        """Explicit FTPS (RFC 4217): AUTH TLS, then the handshake on the control connection."""
        reply = await self.command("AUTH", "TLS")
        if reply.code != 234:
            self.healthy = False
            raise ProtocolError(
                f'the server does not accept AUTH TLS: "{reply.summary}"',
                hint="drop --ftp-tls to talk in clear text, or use an ftps:// URL for implicit TLS",
            )
        await self.conn.start_tls(context, server_hostname)

    async def login(self, user: str, password: str | None, account: str | None, ask: Ask, where: str) -> None:
        """USER, PASS and ACCT as the server asks for them (RFC 959 §5.4 login sequence)."""
        reply = await self.command("USER", user)
        if reply.code == 331:
            password = await _known_or_asked(
                password,
                ask,
                f"Password for {user} at {where}: ",
                f"{where} asks for a password for {user!r} and none is known",
                "give it with -u USER:PASSWORD, in the URL, or in ~/.netrc; on a terminal you are asked for it",
            )
            reply = await self.command("PASS", password, shown="PASS ****")
        if reply.code == 332:
            account = await _known_or_asked(
                account,
                ask,
                f"Account for {user} at {where}: ",
                f"{where} asks for an account (332) for {user!r} and none is known",
                "give it with --ftp-account ACCOUNT",
            )
            reply = await self.command("ACCT", account, shown="ACCT ****")
        if reply.code not in (230, 202):
            if reply.code == 331 or reply.code == 332 or 500 <= reply.code < 600:
                raise AuthError(
                    f'login as {user!r} at {where} refused: "{reply.summary}"',
                    hint="check the user name and password (-u, ~/.netrc or the URL)",
                )
            raise error_for(reply, f"login as {user!r} at {where}")

    async def protect(self) -> None:
        """PBSZ 0 and PROT P: data connections in TLS too (RFC 4217 §8, §9)."""
        await self.expect("PBSZ", "0", "setting the protection buffer size (PBSZ 0)")
        await self.expect("PROT", "P", "asking for protected data connections (PROT P)")
        self.tls_data = True

    async def remember_home(self) -> None:
        reply = await self.command("PWD")
        if reply.code == 257:
            self.home = parse_pwd(reply)
        if self.home is None:
            trace.debug("* cannot parse the PWD reply; this connection will not be reused after a CWD")

    async def enter(self, segments: tuple[str, ...]) -> Reply | None:
        """Make the directory that `segments` name from the login directory current.

        A reused connection already there does nothing (§3.2.5 allows such
        heuristics: the same CWD sequence from the same place ends in the
        same directory); otherwise it returns home first.  Returns the first
        refused CWD reply, or None when every CWD succeeded.
        """
        if self.path == segments:
            return None
        if self.path != ():
            await self.return_home()
        for segment in segments:
            reply = await self.change_directory(segment)
            if not reply.ok:
                return reply
        return None

    async def return_home(self) -> None:
        """Back to the login directory before a reused connection's next URL (§3.2.5)."""
        if self.home is None:
            raise StaleControl("the login directory is unknown")
        self.path = None
        reply = await self.command("CWD", self.home)
        if not reply.ok:
            self.healthy = False
            raise StaleControl(f"cannot return to the login directory: {reply.summary}")
        self.path = ()

    async def change_directory(self, segment: str) -> Reply:
        # Until the reply arrives the directory is unknown; a refusal (4xx/5xx)
        # means the server stayed where it was.
        path, self.path = self.path, None
        reply = await self.command("CWD", segment)
        if path is not None:
            self.path = (*path, segment) if reply.ok else path
        return reply

    # -- data connections ------------------------------------------------------

    def peer_host(self) -> str:
        """The address the control connection really reached (the data port is dialled there)."""
        if self._peer is None:
            address = self.conn.peer_address()
            self._peer = address if address is not None else self.conn.host
        return self._peer

    async def passive_port(self) -> int:
        """EPSV, or PASV when the server does not know EPSV; only the port is used."""
        if self.epsv:
            reply = await self.command("EPSV")
            if reply.code == 229:
                return parse_epsv(reply)
            if reply.code not in _EPSV_REFUSED:
                raise error_for(reply, "asking for a passive data port (EPSV)")
            self.epsv = False
        reply = await self.command("PASV")
        if reply.code != 227:
            raise error_for(reply, "asking for a passive data port (PASV)")
        host, port = parse_pasv(reply)
        control = self.peer_host()
        if host != control:
            trace.debug("* the 227 reply names %s; dialling the control connection's address %s instead", host, control)
        return port

    async def open_data(self, connect: Connect, scheme: str) -> Connection:
        port = await self.passive_port()
        return await connect(self.peer_host(), port, scheme=scheme, what="data port")

    async def start_data_tls(self, data: Connection, context: ssl.SSLContext, server_hostname: str) -> None:
        """TLS on a data connection, resuming the control connection's TLS session.

        Servers such as vsftpd insist on the resumption (proof that the data
        connection belongs to the same client).  anyio's TLSStream does not pass a
        session to `wrap_bio`, so a small stand-in for the context adds it.
        """
        session = self.conn.tls_session
        wrapper = _ResumingContext(context, session) if session is not None else context
        await data.start_tls(cast(ssl.SSLContext, wrapper), server_hostname)

    # -- closing ---------------------------------------------------------------

    async def aclose(self) -> None:
        """QUIT politely when the conversation is in a known state, then close."""
        if self.healthy and not self.conn.closed:
            # Shielded from the caller's cancellation, bounded by its own second.
            with aio.cancel_scope(shield=True, deadline=aio.current_time() + 1):
                try:
                    await self.conn.send_line(b"QUIT")
                    line = await self.conn.read_line(limit=self.limits.line_bytes, limit_name="line_bytes")
                    if line:
                        self.conn.trace_received(line)
                except (FetchError, OSError):
                    pass
        self.healthy = False
        await self.conn.aclose()


class _ResumingContext:
    """Quacks like the SSLContext for anyio's `TLSStream`, adding the session to resume.

    TLSStream calls `wrap_bio` of a context that is not an `ssl.SSLContext` in
    a worker thread, with positional arguments (session None); the stored
    session wins.
    """

    def __init__(self, context: ssl.SSLContext, session: ssl.SSLSession) -> None:
        self._context = context
        self._session = session

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        return self._context.wrap_bio(
            incoming, outgoing, server_side=server_side, server_hostname=server_hostname, session=self._session
        )


def transient_from(error: ProtocolError, doing: str) -> TransientError:
    """A broken data connection: worth retrying (and resuming) later."""
    if isinstance(error, TransientError):
        return error
    return TransientError(f"{doing}: {error.message}", hint="try again; -C/--continue resumes a saved file")


async def _known_or_asked(known: str | None, ask: Ask, prompt: str, missing: str, hint: str) -> str:
    """A secret the login needs: the one given, else the user's answer to `prompt`, else AuthError (exit 5)."""
    if known is None:
        known = await ask(prompt, secret=True)
    if known is None:
        raise AuthError(missing, hint=hint)
    return known

"""ftp:// and ftps:// URLs exactly as RFC 1738 §3.2 reads them, over RFC 959.

§3.2.1 login, §3.2.2 one CWD per <cwd> segment then RETR or NLST of <name>,
§3.2.3 typecodes (and the guess when there is none), §3.2.5 reuse: control
connections are pooled per (scheme, host, port, user, TLS) and, because
every URL path is relative to the login directory, a reused connection goes
back to the directory PWD named after login before the next URL's CWDs.
"""

from __future__ import annotations

import posixpath
import re
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from fetcher.client import Session, _bulk_run, current_tap
from fetcher.errors import AuthError, LimitExceeded, NotFound, ProtocolError, TooLarge, TransientError, UsageError
from fetcher.mime import guess_type
from fetcher.net.tracing import trace
from fetcher.resource import Advisory, Entry, Resource
from fetcher.url import URL, FtpURL
from schemes.ftp.control import Control, StaleControl, transient_from
from schemes.ftp.data import AsciiDecoder, HeldEntries, LineBatches, NameParser
from schemes.ftp.listing import fact_entries, offers_mlsd, parse_features, parse_list, parse_mlsd
from schemes.ftp.replies import BadReply, Reply, announced_size, error_for, parse_mdtm, parse_pwd, parse_size
from schemes.ftp.retr import RetrBody, resume_problem

if TYPE_CHECKING:
    from fetcher.bulk.lanes import LaneWork
    from fetcher.client import Client

#: The anonymous password when neither --anon-password nor $FETCH_EMAIL gives one.
DEFAULT_ANON_PASSWORD = "anonymous@"

PoolKey = tuple[str, str, int, str, bool]

#: NLST refusals that servers give for an empty directory.
_EMPTY_CODES = frozenset({450, 550})
#: ... unless their text says the listing is forbidden rather than empty.
_PERMISSION = re.compile(r"denied|permission|not allowed|forbidden|access", re.IGNORECASE)
#: What FEAT said, once per control connection (asked before its first facts listing).
_FEATURES: weakref.WeakKeyDictionary[Control, frozenset[str]] = weakref.WeakKeyDictionary()
Release = Callable[[], Awaitable[None]]
T = TypeVar("T")


@dataclass(frozen=True)
class Login:
    user: str
    password: str | None


def choose_login(url: FtpURL, session: Session) -> Login:
    """§3.2.1: the URL's user; else -u or ~/.netrc for the host; else anonymous."""
    found = session.credentials(url.host)
    if url.user is not None:
        password = url.password
        if password is None and found is not None and found[0] == url.user:
            password = found[1]
        return Login(url.user, password)
    if found is not None:
        return Login(found[0], found[1])
    return Login("anonymous", session.settings.anon_password or DEFAULT_ANON_PASSWORD)


def _wants_facts(session: Session) -> bool:
    """SIZE and MDTM before RETR: for a resume, and for the server's time (`Settings.remote_time`)."""
    if session.offset:
        return True
    wanted = session.settings.remote_time
    if wanted is None:
        return not _bulk_run.get()
    return wanted


def _content_type(name: str, code: str) -> str:
    guessed = guess_type(name, strict=False)
    if guessed:
        return guessed
    return "text/plain" if code == "A" else "application/octet-stream"


class Handler:
    scheme = "ftp"
    default_port = 21

    # -- the bulk lane (fetcher/bulk/lanes.py, lane.py): a kept control connection --------

    def lane_key(self, url: URL, client: Client, *, resume: bool) -> Hashable | None:
        from schemes.ftp import lane

        return lane.lane_key(url, client, resume=resume)

    async def run_lane(self, work: LaneWork) -> None:
        from schemes.ftp import lane

        await lane.run_lane(self, work)

    async def open(self, url: URL, session: Session) -> Resource:
        if not isinstance(url, FtpURL):
            raise UsageError(f"the FTP handler cannot open {url.scheme}: URLs")
        implicit = url.scheme == "ftps"
        explicit = not implicit and session.settings.ftp_tls
        login = choose_login(url, session)
        key: PoolKey = (url.scheme, url.host, url.port, login.user, explicit)
        pooled = await session.pool.take(key)
        if isinstance(pooled, Control):
            pooled.reused = True
            try:
                return await self._run(url, session, key, pooled)
            except StaleControl as error:
                trace.debug("* reused connection unusable (%s); reconnecting", error)
                await pooled.aclose()
        control = await self._connect(url, session, login, implicit=implicit, explicit=explicit)
        try:
            return await self._run(url, session, key, control)
        except StaleControl as error:
            raise ProtocolError(f"the FTP conversation with {url.host} broke: {error}") from None

    async def _connect(self, url: FtpURL, session: Session, login: Login, *, implicit: bool, explicit: bool) -> Control:
        conn = await session.connect(url.host, url.port, scheme=url.scheme, tls=implicit)
        control = Control(conn, limits=session.settings.limits)
        where = f"{url.host}:{url.port}"
        try:
            await control.greet()
            if explicit:
                await control.auth_tls(session.ssl_context(), url.host)
            await control.login(login.user, login.password, session.settings.ftp_account, session.ask, where)
            if implicit or explicit:
                await control.protect()
            await control.remember_home()
        except BaseException:
            await control.aclose()
            raise
        return control

    async def _run(self, url: FtpURL, session: Session, key: PoolKey, control: Control) -> Resource:
        async def release() -> None:
            if control.reusable:
                await session.pool.give(key, control)
            else:
                await control.aclose()

        try:
            resource = await self._operate(url, session, control, release)
        except StaleControl:
            raise
        except BaseException:
            await release()
            raise
        if resource.kind != "document":
            await release()
        return resource

    # -- §3.2.2 and §3.2.3 --------------------------------------------------------

    async def _operate(self, url: FtpURL, session: Session, control: Control, release: Release) -> Resource:
        refused = await control.enter(url.cwd)
        if refused is not None:
            segment = url.cwd[len(control.path or ())]
            raise error_for(refused, f"changing to directory {segment!r}")
        name = url.name
        if url.typecode == "d":
            inside = (*url.cwd, name) if name else url.cwd
            return await self._list(url, session, control, name or None, inside)
        if url.typecode in ("a", "i"):
            if not name:
                raise UsageError(
                    f"{url} names no file to retrieve (its last segment is empty)",
                    hint="use ;type=d (or no typecode) to list the directory",
                )
            return await self._retrieve(url, session, control, name, url.typecode.upper(), release, guessing=False)
        if not name:
            return await self._list_facts(url, session, control, url.cwd)
        try:
            found = await self._retrieve(url, session, control, name, "I", release, guessing=True)
        except _MaybeDirectory as refusal:
            scope = session.client.confine.get(str(url))
            before = await self._working_directory(control) if scope is not None else None
            reply = await control.change_directory(name)
            if not reply.ok:
                raise error_for(refusal.reply, f"retrieving {name!r}") from None
            if scope is not None and before is not None:
                leaves = await self._leaves(url, control, before, scope)
                if leaves is not None:
                    return Resource(url, "advisory", advisory=Advisory("not listed", leaves),
                                    metadata={"skipped": leaves})  # fmt: skip
            return await self._list_facts(url, session, control, (*url.cwd, name))
        return found

    @staticmethod
    async def _working_directory(control: Control) -> str | None:
        reply = await control.command("PWD")
        return parse_pwd(reply) if reply.code == 257 else None

    async def _leaves(self, url: FtpURL, control: Control, before: str, scope: str) -> str | None:
        """-r: why the directory a name of unknown target led into is not listed (a loop, or outside), else None.

        PWD before and after the CWD gives where the name really leads,
        relative to the directory listing it (servers answer PWD with the
        resolved path), which `link_refused` judges as it judges LIST's
        `name -> target`.  Nothing is listed before that.
        """
        from fetcher.mirror.rules import link_refused, normalize_path  # -r only: not on the path of a plain fetch

        after = await self._working_directory(control)
        if after is None:
            return None
        directory = "/" + "".join(segment + "/" for segment in url.cwd)
        target = normalize_path(directory + posixpath.relpath(after, before))
        return link_refused(directory, target, scope)

    async def _retrieve(
        self,
        url: FtpURL,
        session: Session,
        control: Control,
        name: str,
        code: str,
        release: Release,
        *,
        guessing: bool,
    ) -> Resource:
        """TYPE, SIZE and MDTM (image mode), a data port, REST when resuming, RETR.

        Raises `_MaybeDirectory` when guessing and RETR says 550: the name may be a directory.
        """
        await control.set_type(code)
        size: int | None = None
        modified: datetime | None = None
        if code == "I" and _wants_facts(session):
            size = parse_size(await control.command("SIZE", name))
            modified = parse_mdtm(await control.command("MDTM", name))
        wanted = session.offset
        restart = resume_problem(wanted, code, size, modified, session.validators) if wanted else None
        offset = wanted if wanted and restart is None else 0
        if offset and offset == size:
            trace.debug("* the local copy already holds all %d bytes", size)
            return self._document(url, control, release, name, code, size, modified, size, _empty())
        data = await control.open_data(session.connect, url.scheme)
        try:
            if offset:
                reply = await control.command("REST", str(offset))
                if reply.code != 350:
                    restart, offset = f"the server refused to resume ({reply.summary})", 0
            if restart is not None:
                trace.debug("* %s; starting over", restart)
            await control.send("RETR", name)
            reply = await control.read_reply()
            if not reply.preliminary and not reply.ok:
                if reply.code == 550 and guessing:
                    raise _MaybeDirectory(reply)
                raise error_for(reply, f"retrieving {name!r}")
            if control.tls_data:
                await control.start_data_tls(data, session.ssl_context(), url.host)
        except BaseException:
            await data.aclose()
            raise
        final = None if reply.preliminary else reply
        decoder = AsciiDecoder() if code == "A" and not session.settings.raw else None
        if size is None and code == "I" and not offset:
            size = announced_size(reply)  # without SIZE, what the 150 reply announces checks the length
        expected = size - offset if size is not None and code == "I" else None
        body = RetrBody(control, data, final, name, decoder, expected)
        resource = self._document(url, control, release, name, code, size, modified, offset, body)
        if restart is not None:
            resource.metadata["restart"] = restart  # said on stderr by the caller: bytes are fetched again
        return resource

    def _document(
        self,
        url: FtpURL,
        control: Control,
        release: Release,
        name: str,
        code: str,
        size: int | None,
        modified: datetime | None,
        offset: int,
        body: AsyncIterator[bytes],
    ) -> Resource:
        async def closer() -> None:
            if control.transferring:
                # The body was not read to the end: the conversation is mid-transfer.
                control.healthy = False
            await release()

        return Resource(
            url,
            "document",
            content_type=_content_type(name, code),
            # In ASCII mode the local byte count differs from the server's SIZE.
            size=size if code == "I" else None,
            body=body,
            offset=offset,
            modified=modified,
            filename=name,
            metadata={"type": code},
            closer=closer,
        )

    async def _list(
        self, url: FtpURL, session: Session, control: Control, argument: str | None, inside: tuple[str, ...]
    ) -> Resource:
        """TYPE A, a data port, NLST [name]; the names become entries with ftp URLs.

        The names are parsed as they arrive, under the listing caps of
        `session.settings.limits`.  A 450/550 refusal of a directory known
        to exist is an empty listing (see `_refused_listing`).
        """
        where = "/".join(inside) or "the login directory"
        limits = session.settings.limits
        parser = NameParser(
            argument,
            max_entries=limits.listing_entries,
            max_bytes=limits.listing_bytes,
            line_bytes=limits.line_bytes,
        )
        held = HeldEntries(url, inside, max_bytes=limits.listing_bytes, max_entries=limits.listing_entries)
        reply, sent = await self._receive(
            url, session, control, "NLST", argument, where, lambda chunk: held.add(parser.feed(chunk))
        )
        if not sent or (not reply.ok and not held.entries and reply.code in _EMPTY_CODES):
            return await self._refused_listing(url, control, argument, where, reply)
        held.add(parser.close())
        if not reply.ok:
            raise error_for(reply, f"listing {where!r}")
        return Resource(url, "listing", entries=held.entries, metadata={"directory": where})

    async def _receive(
        self,
        url: FtpURL,
        session: Session,
        control: Control,
        verb: str,
        argument: str | None,
        where: str,
        consume: Callable[[bytes], None],
    ) -> tuple[Reply, bool]:
        """TYPE A, a data port, `verb`; every chunk of the listing goes to `consume` as it arrives.

        Returns the final reply and whether the server sent a listing at all
        (False: it refused the command at once; that reply is returned).
        A cap raised by `consume` ends the conversation (the data connection
        is closed mid-listing).
        """
        await control.set_type("A")
        data = await control.open_data(session.connect, url.scheme)
        try:
            await control.send(verb, argument)
            reply = await control.read_reply()
            if not reply.preliminary and not reply.ok:
                return reply, False
            if control.tls_data:
                await control.start_data_tls(data, session.ssl_context(), url.host)
            tap = current_tap()
            try:
                async for chunk in data.iter_to_close():
                    if tap is not None:  # the listing as the server sent it, for an archive
                        tap.listing(chunk, f"text/x-ftp-{verb.lower()}-listing")
                    consume(chunk)
            except LimitExceeded:
                control.healthy = False
                raise
            except ProtocolError as error:
                control.healthy = False
                raise transient_from(error, f"listing {where!r}") from None
        finally:
            await data.aclose()
        if reply.preliminary:
            reply = await control.final_reply()
        return reply, True

    async def _refused_listing(
        self, url: FtpURL, control: Control, argument: str | None, where: str, reply: Reply
    ) -> Resource:
        """NLST refused: an empty directory on many servers, else the refusal's error.

        Pure-FTPd, wu-ftpd and BSD ftpd answer NLST of an empty directory
        with 450 or 550 ("No files found").  The refusal means "empty" only
        when the directory is known to exist: it is the current directory
        (the login directory, or every CWD to it succeeded) or a CWD into
        the named one succeeds now; and its text does not speak of
        permissions.  Anything else keeps its meaning (550: not found).
        """
        if reply.code in _EMPTY_CODES and _PERMISSION.search(reply.text):
            raise AuthError(
                f'listing {where!r}: the server answered "{reply.summary}"',
                hint="the directory is there but not readable for this login",
            )
        if reply.code in _EMPTY_CODES:
            exists = argument is None
            if argument is not None:
                exists = (await control.change_directory(argument)).ok
            if exists:
                trace.debug("* %s: NLST answered %s; the directory exists, so it is empty", where, reply.code)
                return Resource(url, "listing", entries=[], metadata={"directory": where})
        raise error_for(reply, f"listing {where!r}")

    # -- listings with facts (RFC 3659 MLSD, else LIST) -------------------------------

    async def _list_facts(self, url: FtpURL, session: Session, control: Control, inside: tuple[str, ...]) -> Resource:
        """The current directory with each entry's facts: MLSD when FEAT offers it, else LIST.

        A refused MLSD falls back to LIST, a refused LIST to NLST (names
        only, with NLST's own reading of refusals), so a server that knows
        less still lists.  So does a LIST that sent no byte at all: the
        OpenBSD-derived ftpd (Debian's `ftpd`) runs /bin/ls for LIST, and in
        an anonymous chroot without it answers 150, nothing, 226, while its
        built-in NLST names every file; an empty directory costs one more
        command.  `;type=d` never comes here: it is NLST (§3.2.2).
        """
        where = "/".join(inside) or "the login directory"
        features = _FEATURES.get(control)
        if features is None:
            reply = await control.command("FEAT")
            features = parse_features(reply.lines[1:-1]) if reply.code == 211 else frozenset()
            _FEATURES[control] = features
        for verb in ("MLSD", "LIST") if offers_mlsd(features) else ("LIST",):
            listed = await self._facts(url, session, control, verb, inside, where)
            if listed is not None:
                break
        if listed is None:
            listed = await self._list(url, session, control, None, inside)
        elif listed.metadata.get("command") == "LIST" and listed.metadata.pop("silent", False):
            trace.debug("* %s: LIST sent nothing (not even a total line); asking NLST", where)
            try:
                listed = await self._list(url, session, control, None, inside)
            except (AuthError, NotFound, ProtocolError) as error:
                if isinstance(error, TransientError | TooLarge):
                    raise
                trace.debug("* %s: NLST refused too (%s); the directory is empty", where, error.message)
        if session.settings.ftp_facts:
            await self._fill_facts(control, listed.entries)
        return listed

    async def _fill_facts(self, control: Control, entries: list[Entry]) -> None:
        """--ftp-facts: SIZE and MDTM (RFC 3659) for each entry the listing left without size or exact time.

        Asked of files, of links (a link's listed size and time are the
        link's own, not its target's) and of NLST's names of unknown type (a
        213 to SIZE makes one a file).  Directories are never asked.  A
        verb the server does not implement (500, 502) is not sent again.
        """
        asking = {"SIZE", "MDTM"}
        for entry in entries:
            if entry.url is None or entry.type not in ("file", "link", "unknown", None) or not asking:
                continue
            link = entry.type == "link"
            if "SIZE" in asking and (entry.size is None or link):
                await control.set_type("I")  # SIZE counts bytes as RETR in image mode sends them
                size = await self._ask(control, "SIZE", entry.name, asking, parse_size)
                if size is not None:
                    entry.size = size
                    if entry.type in ("unknown", None):
                        entry.type = "file"
                    elif link:
                        entry.extra["target_facts"] = True  # -N may compare these: they are the target's
            if "MDTM" in asking and (entry.modified is None or entry.extra.get("precision") != "second" or link):
                modified = await self._ask(control, "MDTM", entry.name, asking, parse_mdtm)
                if modified is not None:
                    entry.modified = modified
                    entry.extra["precision"] = "second"

    @staticmethod
    async def _ask(control: Control, verb: str, name: str, asking: set[str], parse: Callable[[Reply], T]) -> T | None:
        reply = await control.command(verb, name)
        if reply.code in (500, 502):
            asking.discard(verb)
            return None
        try:
            return parse(reply)
        except BadReply:
            return None  # a reply that holds no usable fact leaves the entry as listed

    async def _facts(
        self, url: FtpURL, session: Session, control: Control, verb: str, inside: tuple[str, ...], where: str
    ) -> Resource | None:
        """MLSD or LIST parsed batch by batch as the lines arrive; None when the server refused `verb`.

        LIST holds back a line per batch for the VMS dialect, which may wrap
        one entry onto two lines.
        """
        limits = session.settings.limits
        batches = LineBatches(max_bytes=limits.listing_bytes, line_bytes=limits.line_bytes, hold_last=verb == "LIST")
        held = HeldEntries(url, inside, max_bytes=limits.listing_bytes, max_entries=limits.listing_entries)
        now = datetime.now(UTC)
        received = 0

        def consume(chunk: bytes) -> None:
            nonlocal received
            received += len(chunk)
            batch = batches.feed(chunk) if chunk else batches.close()
            if verb == "MLSD":
                listed = parse_mlsd(batch, max_entries=limits.listing_entries, max_bytes=limits.listing_bytes)
            else:
                listed = parse_list(batch, now=now, max_entries=limits.listing_entries, max_bytes=limits.listing_bytes)
            held.add_entries(fact_entries(url, inside, listed, max_bytes=limits.listing_bytes))

        reply, sent = await self._receive(url, session, control, verb, None, where, consume)
        if not sent:
            trace.debug("* %s refused (%s)", verb, reply.summary)
            return None
        if not reply.ok:
            raise error_for(reply, f"listing {where!r}")
        consume(b"")
        metadata = {"directory": where, "command": verb, **({"silent": True} if received == 0 else {})}
        return Resource(url, "listing", entries=held.entries, metadata=metadata)


class _MaybeDirectory(Exception):
    """RETR said 550 while guessing: perhaps the name is a directory (§3.2.3)."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.summary)
        self.reply = reply


async def _empty() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator

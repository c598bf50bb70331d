"""One ftp URL on a logged-in control connection: §3.2.2 CWDs, §3.2.3 typecodes and the guess, RETR.

The task path (handler) and the bulk lane (lane) both run a URL through
`operate`; they differ only in where the control connection comes from and
what `release` does with it afterwards (back to the pool, or kept by the
lane for its next URL).  Directory listings are `directory`'s job.
"""

from __future__ import annotations

import posixpath
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING

from fetcher.errors import UsageError
from fetcher.handler import Advisory, Resource, Session, guess_type, in_bulk_run, trace
from fetcher.schemes.ftp.control import Control
from fetcher.schemes.ftp.data import AsciiDecoder
from fetcher.schemes.ftp.directory import list_facts, list_names
from fetcher.schemes.ftp.replies import Reply, announced_size, error_for, parse_mdtm, parse_pwd, parse_size
from fetcher.schemes.ftp.retr import RetrBody, resume_problem
from fetcher.url import FtpURL

if TYPE_CHECKING:
    from fetcher.handler import Confinement

#: What becomes of the control connection once the URL's resource is done with it.
Release = Callable[[], Awaitable[None]]


def _wants_facts(session: Session) -> bool:
    """SIZE and MDTM before RETR: for a resume, and for the server's time (`Settings.remote_time`)."""
    if session.offset:
        return True
    wanted = session.settings.remote_time
    if wanted is None:
        return not in_bulk_run()
    return wanted


def _content_type(name: str, code: str) -> str:
    guessed = guess_type(name, strict=False)
    if guessed:
        return guessed
    return "text/plain" if code == "A" else "application/octet-stream"


async def operate(url: FtpURL, session: Session, control: Control, release: Release) -> Resource:
    """CWD to the URL's directory, then list it or retrieve its name as the typecode (or the guess) says."""
    refused = await control.enter(url.cwd)
    if refused is not None:
        segment = url.cwd[len(control.path or ())]
        raise error_for(refused, f"changing to directory {segment!r}")
    name = url.name
    if url.typecode == "d":
        inside = (*url.cwd, name) if name else url.cwd
        return await list_names(url, session, control, name or None, inside)
    if url.typecode in ("a", "i"):
        if not name:
            raise UsageError(
                f"{url} names no file to retrieve (its last segment is empty)",
                hint="use ;type=d (or no typecode) to list the directory",
            )
        return await _retrieve(url, session, control, name, url.typecode.upper(), release, guessing=False)
    if not name:
        return await list_facts(url, session, control, url.cwd)
    try:
        found = await _retrieve(url, session, control, name, "I", release, guessing=True)
    except _MaybeDirectory as refusal:
        scope = session.notes.confinement
        before = await _working_directory(control) if scope is not None else None
        reply = await control.change_directory(name)
        if not reply.ok:
            raise error_for(refusal.reply, f"retrieving {name!r}") from None
        if scope is not None and before is not None:
            leaves = await _leaves(url, control, before, scope)
            if leaves is not None:
                return Resource(url, "advisory", advisory=Advisory("not listed", leaves),
                                metadata={"skipped": leaves})  # fmt: skip
        return await list_facts(url, session, control, (*url.cwd, name))
    return found


async def _working_directory(control: Control) -> str | None:
    reply = await control.command("PWD")
    return parse_pwd(reply) if reply.code == 257 else None


async def _leaves(url: FtpURL, control: Control, before: str, scope: Confinement) -> str | None:
    """-r: why the directory a name of unknown target led into is not listed (a loop, or outside), else None.

    PWD before and after the CWD gives where the name really leads,
    relative to the directory listing it (servers answer PWD with the
    resolved path), which the confinement note judges as the mirror
    judges LIST's `name -> target`.  Nothing is listed before that.
    """
    after = await _working_directory(control)
    if after is None:
        return None
    directory = "/" + "".join(segment + "/" for segment in url.cwd)
    return scope.refusal(directory, directory + posixpath.relpath(after, before))


async def _retrieve(
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
        return _document(url, control, release, name, code, size, modified, size, _empty())
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
    resource = _document(url, control, release, name, code, size, modified, offset, body)
    if restart is not None:
        resource.metadata["restart"] = restart  # said on stderr by the caller: bytes are fetched again
    return resource


def _document(
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


class _MaybeDirectory(Exception):
    """RETR said 550 while guessing: perhaps the name is a directory (§3.2.3)."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.summary)
        self.reply = reply


async def _empty() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator

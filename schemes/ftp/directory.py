"""Listing an FTP directory over a data connection: NLST names, MLSD or LIST facts, and their fallbacks.

Every listing is parsed as it arrives, under the listing caps of
`Settings.limits`, by the pure parsers (`data` for NLST names, `listing`
for MLSD and LIST).  What this module decides is which command to send,
and what a refusal or a silent listing means (an empty directory on many
servers).  `;type=d` is NLST (§3.2.2); a directory reached without a
typecode is listed with facts.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from fetcher.errors import AuthError, LimitExceeded, NotFound, ProtocolError, TooLarge, TransientError
from fetcher.handler import Entry, Resource, Session, current_tap, trace
from fetcher.schemes.ftp.control import Control, transient_from
from fetcher.schemes.ftp.data import HeldEntries, LineBatches, NameParser
from fetcher.schemes.ftp.listing import fact_entries, offers_mlsd, parse_features, parse_list, parse_mlsd
from fetcher.schemes.ftp.replies import BadReply, Reply, error_for, parse_mdtm, parse_size
from fetcher.url import FtpURL

#: NLST refusals that servers give for an empty directory.
_EMPTY_CODES = frozenset({450, 550})
#: ... unless their text says the listing is forbidden rather than empty.
_PERMISSION = re.compile(r"denied|permission|not allowed|forbidden|access", re.IGNORECASE)
#: What FEAT said, once per control connection (asked before its first facts listing).
_FEATURES: weakref.WeakKeyDictionary[Control, frozenset[str]] = weakref.WeakKeyDictionary()
T = TypeVar("T")


async def list_names(
    url: FtpURL, session: Session, control: Control, argument: str | None, inside: tuple[str, ...]
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
    reply, sent = await _receive(
        url, session, control, "NLST", argument, where, lambda chunk: held.add(parser.feed(chunk))
    )
    if not sent or (not reply.ok and not held.entries and reply.code in _EMPTY_CODES):
        return await _refused_listing(url, control, argument, where, reply)
    held.add(parser.close())
    if not reply.ok:
        raise error_for(reply, f"listing {where!r}")
    return Resource(url, "listing", entries=held.entries, metadata={"directory": where})


async def _receive(
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


async def _refused_listing(url: FtpURL, control: Control, argument: str | None, where: str, reply: Reply) -> Resource:
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


async def list_facts(url: FtpURL, session: Session, control: Control, inside: tuple[str, ...]) -> Resource:
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
        listed = await _facts(url, session, control, verb, inside, where)
        if listed is not None:
            break
    if listed is None:
        listed = await list_names(url, session, control, None, inside)
    elif listed.metadata.get("command") == "LIST" and listed.metadata.pop("silent", False):
        trace.debug("* %s: LIST sent nothing (not even a total line); asking NLST", where)
        try:
            listed = await list_names(url, session, control, None, inside)
        except (AuthError, NotFound, ProtocolError) as error:
            if isinstance(error, TransientError | TooLarge):
                raise
            trace.debug("* %s: NLST refused too (%s); the directory is empty", where, error.message)
    if session.settings.ftp_facts:
        await _fill_facts(control, listed.entries)
    return listed


async def _fill_facts(control: Control, entries: list[Entry]) -> None:
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
            size = await _ask(control, "SIZE", entry.name, asking, parse_size)
            if size is not None:
                entry.size = size
                if entry.type in ("unknown", None):
                    entry.type = "file"
                elif link:
                    entry.extra["target_facts"] = True  # -N may compare these: they are the target's
        if "MDTM" in asking and (entry.modified is None or entry.extra.get("precision") != "second" or link):
            modified = await _ask(control, "MDTM", entry.name, asking, parse_mdtm)
            if modified is not None:
                entry.modified = modified
                entry.extra["precision"] = "second"


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
    url: FtpURL, session: Session, control: Control, verb: str, inside: tuple[str, ...], where: str
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

    reply, sent = await _receive(url, session, control, verb, None, where, consume)
    if not sent:
        trace.debug("* %s refused (%s)", verb, reply.summary)
        return None
    if not reply.ok:
        raise error_for(reply, f"listing {where!r}")
    consume(b"")
    metadata = {"directory": where, "command": verb, **({"silent": True} if received == 0 else {})}
    return Resource(url, "listing", entries=held.entries, metadata=metadata)

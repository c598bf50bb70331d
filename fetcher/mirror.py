"""The rules of `fetch -r`: what is in scope, loops, timestamping, robots.txt, the summary.

`bulk.py` runs the jobs and writes the manifest; this module decides, for
each link a listing or an HTML page gave, whether to take it on, and for
each file whether it needs transferring at all.  Handlers only list and
retrieve; nothing here speaks a protocol.

- Scope (wget's --no-parent, the default): a link is followed only when it
  lies at or below the directory a start URL named, on the same scheme,
  host and port (paths are compared after resolving `.` and `..`, so a
  listing's `..` or a menu item pointing up never climbs).  `--parent`
  lifts the rule.
- Loops: an FTP or file: symlink whose target is the directory being listed
  or one of its ancestors is not entered, and a directory whose listing is
  the same as an ancestor's (a link back under another name) is not
  followed further.  Each loop is reported once, as a skipped record.
  FTP names whose target the listing does not give (MLSD's
  `OS.unix=slink:`, NLST names) are judged by the same rule
  (`link_refused`) once the FTP handler has entered them and asked PWD,
  before anything in them is listed (`Mirror.confinement`).
- Timestamping (-N): a file whose listing gives size and time is not
  transferred when the local copy has that size and is not older; saved
  files get the server's time.  HTTP asks with If-Modified-Since and, for a
  file saved with an ETag (kept in `DIR/.fetch-etags.jsonl`, fetcher.etags),
  If-None-Match; a 304 is "unchanged".
- Items that cannot be mirrored (Gopher search, CSO and telnet items,
  Prospero externals, devices and FIFOs in FTP and file: listings) are
  skipped with the reason.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urldefrag, urljoin

from .errors import FetchError, LimitExceeded
from .etags import EtagStore
from .resource import Entry
from .url import URL

if TYPE_CHECKING:
    import urllib.robotparser

#: Listing types that name something a mirror cannot save, with the reason.
UNMIRRORABLE: dict[str, str] = {
    "search": "a Gopher search item needs words to query (not mirrored)",
    "cso": "a CSO phone-book item is interactive (not mirrored)",
    "telnet": "a telnet item is an interactive session (not mirrored)",
    "tn3270": "a tn3270 item is an interactive session (not mirrored)",
    # Reading a FIFO blocks until someone writes to it; a device may never end.
    "other": "not a regular file, directory or link (a device, FIFO or socket); not mirrored",
}

#: Seconds of slack when comparing a listing's time to a local file's (clock rounding).
_SLACK = 1.0


def place(url: URL) -> tuple[tuple[str, str, object], str] | None:
    """(scheme, host, port) and the normalized path-like part of a URL; None for schemes without a tree."""
    scheme = url.scheme
    host = str(getattr(url, "host", "") or "").lower()
    port = getattr(url, "port", None)
    if scheme in ("ftp", "ftps"):
        cwd: tuple[str, ...] = getattr(url, "cwd", ())
        name: str = getattr(url, "name", "")
        path = "/" + "/".join((*cwd, name))
    elif scheme in ("http", "https"):
        path = str(getattr(url, "path", "") or "/")
    elif scheme == "file":
        path = "/" + str(getattr(url, "path", "")).lstrip("/")
    elif scheme == "gopher":
        path = str(getattr(url, "selector", ""))
    elif scheme == "prospero":
        path = str(getattr(url, "hsoname", ""))
    else:
        return None
    return (scheme, host, port), normalize_path(path)


def normalize_path(path: str) -> str:
    """Resolve `.` and `..` lexically; keep a trailing slash; never above the root."""
    if not path:
        return ""
    lead = "/" if path.startswith("/") else ""
    trail = "/" if path.endswith("/") or path.endswith("/.") or path.endswith("/..") else ""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    joined = lead + "/".join(parts)
    if trail and not joined.endswith("/"):
        joined += "/"
    return joined


def scope_of(url: URL, *, listing: bool) -> tuple[tuple[str, str, object], str] | None:
    """The directory a start URL names: itself when it was a listing, else the one holding it."""
    where = place(url)
    if where is None:
        return None
    origin, path = where
    if listing:
        return origin, path if path.endswith("/") or not path else path + "/"
    return origin, path[: path.rfind("/") + 1] if "/" in path else ""


def in_scope(url: URL, scope: tuple[tuple[str, str, object], str]) -> bool:
    """Is `url` at or below the scope's directory (same scheme, host and port)?"""
    where = place(url)
    if where is None:
        return False
    return where[0] == scope[0] and under(where[1], scope[1])


def under(path: str, prefix: str) -> bool:
    """Is the normalized `path` the directory `prefix` or inside it?"""
    if not prefix:
        return True
    return path == prefix.rstrip("/") or path.startswith(prefix if prefix.endswith("/") else prefix + "/")


def link_target(listed: URL, entry: Entry) -> str | None:
    """Where a symbolic link in directory `listed` points, as a normalized directory path; None if not a link."""
    if entry.type != "link":
        return None
    where = place(listed)
    if where is None:
        return None
    directory = where[1] if where[1].endswith("/") else where[1] + "/"
    target = entry.target
    if target is None and listed.scheme == "file":
        try:  # file: listings do not carry the target; the link is local, read it
            target = os.readlink(directory + entry.name.rstrip("/"))
        except OSError:
            return None
    if not target:
        return None
    return normalize_path(target if target.startswith("/") else directory + target).rstrip("/") + "/"


def link_refused(directory: str, target: str, scope: str) -> str | None:
    """Why -r does not enter a symbolic link in `directory` that leads to `target` (normalized paths), or None.

    A target that is the directory itself or one above it is a loop; one
    not under `scope` (the start directory; "" with --parent) is outside.
    """
    target = target.rstrip("/") + "/"
    if (directory.rstrip("/") + "/").startswith(target):
        return f"a loop: a symbolic link to {target} (this directory or one above it)"
    if scope and not under(target, scope):
        return f"a symbolic link to {target}, outside the start directory (--parent follows it)"
    return None


def fingerprint(entries: list[Entry]) -> str:
    """What a directory holds (names, types, sizes), to recognise the same directory under another name."""
    digest = hashlib.sha256()
    for entry in sorted(entries, key=lambda item: item.name):
        digest.update(f"{entry.name}\0{entry.type}\0{entry.size}\0{entry.target}\n".encode("utf-8", "replace"))
    return digest.hexdigest()


def unmirrorable(entry: Entry, follow_schemes: set[str]) -> str | None:
    """Why an entry cannot be mirrored, or None."""
    if entry.type in UNMIRRORABLE:
        return UNMIRRORABLE[entry.type]
    if entry.extra.get("target") == "EXTERNAL":
        scheme = (entry.url or "").split(":", 1)[0].lower()
        if not entry.url:
            return f"a Prospero external link with {entry.description or 'no usable access method'} (not mirrored)"
        if scheme not in follow_schemes:
            method = entry.extra.get("method") or scheme
            return f"a Prospero external link (access method {method}); add --follow-schemes {scheme} to follow it"
    return None


def unchanged(path: Path, size: int | None, modified: datetime | None) -> bool:
    """-N: the local copy has the listed size and is not older than the listed time."""
    if size is None or modified is None:
        return False
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return info.st_size == size and info.st_mtime + _SLACK >= modified.timestamp()


def set_time(path: Path, modified: datetime | None) -> None:
    """Give a saved file the server's time (when the listing's is as precise as a second)."""
    if modified is None:
        return
    stamp = modified.timestamp()
    try:
        os.utime(path, (stamp, stamp), follow_symlinks=False)
    except (OSError, NotImplementedError):
        pass


@dataclass
class Summary:
    """The counts a mirror ends with."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    failed: int = 0
    bytes: int = 0
    started: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        seconds = time.monotonic() - self.started
        return (
            f"fetch: mirror: {self.new} new, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.skipped} skipped, {self.failed} failed; {self.bytes} bytes in {seconds:.2f} s\n"
        )


class Robots:
    """robots.txt per origin (the standard library's parser); fetched once each."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.rules: dict[str, urllib.robotparser.RobotFileParser | None] = {}

    def known(self, origin: str) -> bool:
        return origin in self.rules

    def learn(self, origin: str, text: str | None) -> None:
        """`text` None: no robots.txt (or it could not be read): everything is allowed."""
        if text is None:
            self.rules[origin] = None
            return
        import urllib.robotparser  # only -r over HTTP reads robots.txt (it pulls in urllib.request)

        parser = urllib.robotparser.RobotFileParser()
        parser.parse(text.splitlines())
        self.rules[origin] = parser

    def allowed(self, origin: str, url: str) -> bool:
        parser = self.rules.get(origin)
        return True if parser is None else parser.can_fetch(self.agent, url)


Scope = tuple[tuple[str, str, object], str]


class Mirror:
    """The state of one `-r` run: scopes, lineage for loops, robots.txt, the summary."""

    def __init__(
        self,
        *,
        parent: bool,
        timestamping: bool,
        robots: bool,
        follow_schemes: set[str],
        user_agent: str,
        log: Any,
    ) -> None:
        self.parent = parent
        self.timestamping = timestamping
        self.use_robots = robots
        self.follow_schemes = follow_schemes
        self.robots = Robots(user_agent)
        self.log = log
        self.summary = Summary()
        #: URL -> the scope of the start URL it was found from (None: not known yet, or no scope).
        self.scopes: dict[str, Scope | None] = {}
        #: URL -> the URL whose listing or page it was found in (for loop detection).
        self.lineage: dict[str, str] = {}
        #: Listing URL -> what it held (names, types, sizes).
        self.prints: dict[str, str] = {}
        #: File URL -> (size, time) its listing gave, until it is saved.
        self.facts: dict[str, tuple[int | None, datetime | None, object]] = {}
        self.existed: set[str] = set()
        self.loops = 0
        #: -N over HTTP: the ETags of saved files (the run sets it: it knows the output directory).
        self.etags: EtagStore | None = None

    # -- scope ------------------------------------------------------------

    def started(self, url: URL, *, listing: bool) -> None:
        """A start URL's result is known: its directory becomes the scope of all it leads to."""
        key = str(url)
        if key not in self.lineage and self.scopes.get(key) is None:
            self.scopes[key] = scope_of(url, listing=listing)

    def consider(self, parent: URL, entry: Entry, url: URL | None) -> str | None:
        """Why a link is not followed ("" to drop it silently as out of scope), or None to follow it."""
        reason = unmirrorable(entry, self.follow_schemes)
        if reason is not None:
            return reason
        if url is None:
            return ""
        if url.scheme == "wais" and getattr(url, "wtype", None) is None and getattr(url, "search", None) is None:
            return "a WAIS database to search needs words (fetch --query WORDS URL); not mirrored"
        scope = self.scopes.get(str(parent))
        target = link_target(parent, entry)
        if target is not None:
            here = place(parent)
            directory = here[1].rstrip("/") + "/" if here is not None else ""
            reason = link_refused(directory, target, "" if self.parent or scope is None else scope[1])
            if reason is not None:
                self.loops += reason.startswith("a loop")
                return reason
        if not self.parent and scope is not None and not in_scope(url, scope):
            where = place(url)
            # Another scheme or host (allowed by --follow-schemes/--span-hosts) has its own tree.
            return "" if where is not None and where[0] == scope[0] else None
        return None

    def confinement(self, parent: URL, entry: Entry, url: URL) -> str | None:
        """FTP: the start directory ("" with --parent) a link of unknown target must stay in, else None.

        MLSD says `OS.unix=slink:` without the target and NLST does not say
        what a name is, so the handler learns where such a name leads with
        PWD after entering it, and lists it only if `link_refused` allows.
        """
        if url.scheme not in ("ftp", "ftps") or entry.type not in ("link", "unknown") or entry.target:
            return None
        scope = self.scopes.get(str(parent))
        return "" if self.parent or scope is None else scope[1]

    def adopt(self, parent: URL, url: URL, entry: Entry | None) -> None:
        """`url` will be retrieved, found in `parent`: it inherits the scope; keep the listing's facts."""
        key = str(url)
        scope = self.scopes.get(str(parent))
        where = place(url)
        if scope is not None and where is not None and where[0] != scope[0]:
            scope = scope_of(url, listing=where[1].endswith("/"))  # a new tree: it starts where the link points
        self.scopes[key] = scope
        self.lineage[key] = str(parent)
        if entry is not None and self.timestamping and entry.type not in ("directory", "menu"):
            if entry.type == "link" and not entry.extra.get("target_facts"):
                return  # LIST and MLSD give a link's own size and time, not its target's (--ftp-facts asks those)
            self.facts[key] = (entry.size, entry.modified, entry.extra.get("precision"))

    def looped(self, url: URL, entries: list[Entry]) -> str | None:
        """The ancestor whose listing this one repeats (a link back), reported once; else None."""
        key = str(url)
        mark = fingerprint(entries)
        self.prints[key] = mark
        ancestor = self.lineage.get(key)
        steps = 0
        while ancestor is not None and steps < 10_000:
            if self.prints.get(ancestor) == mark and entries:
                self.loops += 1
                return ancestor
            ancestor = self.lineage.get(ancestor)
            steps += 1
        return None

    # -- timestamping -------------------------------------------------------

    def up_to_date(self, url: URL, path: Path) -> bool:
        """-N: does the local copy match what the listing says (no transfer needed)?"""
        key = str(url)
        if not self.timestamping:
            return False
        if path.exists():
            self.existed.add(key)
        size, modified, _ = self.facts.get(key, (None, None, None))
        if unchanged(path, size, modified):
            self.facts.pop(key, None)
            return True
        return False

    def condition(self, url: URL, path: Path) -> float | None:
        """-N over HTTP: the local copy's time, for If-Modified-Since (None: nothing to compare)."""
        if not self.timestamping or url.scheme not in ("http", "https"):
            return None
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        self.existed.add(str(url))
        return info.st_mtime

    def etag(self, url: URL, path: Path) -> str | None:
        """-N over HTTP: the ETag the local copy was saved with, for If-None-Match (None: none, or changed)."""
        if not self.timestamping or self.etags is None or url.scheme not in ("http", "https"):
            return None
        return self.etags.lookup(str(url), path)

    def saved(self, url: URL, path: Path, etag: str | None = None) -> str:
        """A file was written: give it the listing's time (-N), keep its ETag; "new" or "updated"."""
        key = str(url)
        _, modified, precision = self.facts.pop(key, (None, None, None))
        if modified is not None and precision == "second":
            # A listing to the second (MLSD) is what the next -N run compares with; coarser
            # listings leave the time the retrieval gave (MDTM, Last-Modified), which is as precise.
            set_time(path, modified)
        if self.timestamping and self.etags is not None and url.scheme in ("http", "https"):
            self.etags.remember(key, path, etag)  # after the time is set: the state records the final stat
        return "updated" if key in self.existed else "new"

    # -- the summary ----------------------------------------------------------

    def count(self, record: dict[str, Any]) -> None:
        status = record.get("status")
        if status == "failed":
            self.summary.failed += 1
        elif status in ("skipped", "interrupted"):
            self.summary.skipped += 1
        elif record.get("kind") in ("listing", "advisory") and record.get("change") is None:
            return
        else:
            change = record.get("change") or "new"
            setattr(self.summary, change, getattr(self.summary, change) + 1)
            self.summary.bytes += record.get("bytes") or 0

    # -- HTTP: links of pages, robots.txt ------------------------------------------

    async def robots_allow(self, client: Any, url: URL) -> bool:
        """robots.txt of the URL's origin allows it (fetched once per origin; none or unreadable: allowed)."""
        if not self.use_robots or url.scheme not in ("http", "https"):
            return True
        origin = f"{url.scheme}://{getattr(url, 'host', '')}:{getattr(url, 'port', '')}"
        if not self.robots.known(origin):
            text: str | None = None
            try:
                async with client.open(origin + "/robots.txt") as resource:
                    if resource.kind == "document":
                        body = bytearray()
                        async for chunk in resource:
                            body += chunk
                            if len(body) > _ROBOTS_BYTES:
                                break
                        text = bytes(body[:_ROBOTS_BYTES]).decode("utf-8", "replace")
            except FetchError:
                text = None  # no robots.txt (404) or none reachable: nothing is disallowed
            self.robots.learn(origin, text)
        return self.robots.allowed(origin, str(url))


#: robots.txt is read up to this size (Google's documented limit is 500 KiB).
_ROBOTS_BYTES = 500 * 1024
_HTML_TYPES = ("text/html", "application/xhtml+xml")


def is_html(content_type: str | None, path: Path | None) -> bool:
    """Is a saved document a page to take links from?  (304 replies have no type: go by the name.)"""
    if content_type:
        return content_type.split(";", 1)[0].strip().lower() in _HTML_TYPES
    return path is not None and path.suffix.lower() in (".html", ".htm", ".xhtml")


def page_links(path: Path, page_url: str, content_type: str | None, *, max_links: int) -> tuple[list[str], str | None]:
    """The absolute links of a saved HTML page (read in pieces), resolved against `<base>` or the page URL.

    Returns the links and a note when the page had more links than `max_links` (those found first are kept).
    """
    from schemes.http.links import LinkParser  # the pure HTML part lives with HTTP

    charset = "utf-8"
    for part in (content_type or "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            charset = value.strip("\"' ")
    try:
        decoder = codecs.getincrementaldecoder(charset)(errors="replace")
    except LookupError:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    parser = LinkParser(max_links=max_links)
    note = None
    try:
        with open(path, "rb") as page:
            while chunk := page.read(65536):
                parser.feed(decoder.decode(chunk))
        parser.feed(decoder.decode(b"", final=True))
        parser.close()
    except LimitExceeded as error:
        note = error.message
    except OSError:
        return [], None
    base = urljoin(page_url, parser.base) if parser.base else page_url
    links = []
    for link in parser.links:
        absolute = urldefrag(urljoin(base, link))[0]
        if absolute.split(":", 1)[0].lower() in ("http", "https"):
            links.append(absolute)
    return links, note

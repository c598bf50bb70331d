"""The rules of `fetch -r`: what is in scope, loops, timestamping, robots.txt.

`fetcher.mirror.crawl` takes a run's links through them (the run itself,
its jobs and its manifest, are the command's); this module decides, for
each link a listing or an HTML page gave, whether to take it on, and for
each file whether it needs transferring at all.  Handlers only list and
retrieve; nothing here speaks a protocol.

- Scope (wget's --no-parent, the default): a link is followed only when it
  lies at or below the directory a start URL named, on the same origin
  (scheme, host and port; paths are compared after resolving `.` and `..`,
  so a listing's `..` or a menu item pointing up never climbs, and a
  percent-encoded dot segment is refused: fetcher.mirror.scope).  `--parent`
  lifts the rule.  A link to another port of a start host is reported and
  not followed; `--span-hosts` is the only way off the start origins.
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
  file saved with an ETag (kept in `DIR/.fetch-etags.jsonl`, fetcher.mirror.etags),
  If-None-Match; a 304 is "unchanged", and a page answered so is read
  again from the local copy (its type kept in the same state file, else
  sniffed), so what it links to is checked too.
- Items that cannot be mirrored (Gopher search, CSO and telnet items,
  Prospero externals, devices and FIFOs in FTP and file: listings) are
  skipped with the reason.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fetcher.errors import FetchError
from fetcher.mirror.etags import EtagStore
from fetcher.mirror.scope import (
    Origin,
    Scope,
    encoded_climb,
    in_scope,
    link_refused,
    link_target,
    normalize_path,
    origin,
    place,
    scope_of,
)
from fetcher.registry import hooks
from fetcher.resource import Entry
from fetcher.url import URL

__all__ = ["Mirror", "link_refused", "normalize_path"]

if TYPE_CHECKING:
    import urllib.robotparser

#: Seconds of slack when comparing a listing's time to a local file's (clock rounding).
_SLACK = 1.0


def fingerprint(entries: list[Entry]) -> str:
    """What a directory holds (names, types, sizes), to recognise the same directory under another name."""
    digest = hashlib.sha256()
    for entry in sorted(entries, key=lambda item: item.name):
        digest.update(f"{entry.name}\0{entry.type}\0{entry.size}\0{entry.target}\n".encode("utf-8", "replace"))
    return digest.hexdigest()


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


@dataclass(frozen=True)
class MirrorOptions:
    """What the command line asks of a mirror (-r), read once (fetcher.cli.runoptions builds it)."""

    #: --depth: link levels below a start URL.
    depth: int = 5
    #: --parent: links above the start directory are followed too.
    parent: bool = False
    #: -N: files whose copy is current are not transferred.
    timestamping: bool = False
    #: robots.txt is obeyed over HTTP (--no-robots: not).
    robots: bool = True
    #: --span-hosts: links may lead to other hosts.
    span_hosts: bool = False
    #: --follow-schemes: the other schemes links may lead to.
    follow_schemes: frozenset[str] = frozenset()


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


class Mirror:
    """The state of one `-r` run: scopes, lineage for loops, robots.txt, the facts -N compares."""

    def __init__(self, options: MirrorOptions, *, user_agent: str, log: Any) -> None:
        #: What the command line asked (-r's options): read here, never copied.
        self.options = options
        #: The origins and hosts (lower case) of the start URLs: where links may lead without --span-hosts.
        self.origins: set[Origin] = set()
        self.hosts: set[str] = set()
        self.robots = Robots(user_agent)
        self.log = log
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

    def start(self, url: URL) -> None:
        """A start URL of the run: its origin is one a link may lead to."""
        self.origins.add(origin(url))
        self.hosts.add(origin(url)[1])

    def started(self, url: URL, *, listing: bool) -> None:
        """A start URL's result is known: its directory becomes the scope of all it leads to."""
        key = str(url)
        if key not in self.lineage and self.scopes.get(key) is None:
            self.scopes[key] = scope_of(url, listing=listing)

    def consider(self, parent: URL, entry: Entry, url: URL | None) -> str | None:
        """Why a link is not followed ("" to drop it silently as out of scope), or None to follow it."""
        # What a scheme's items or URLs cannot be mirrored as is its handler's hook: the core names no scheme.
        reason = hooks(parent.scheme).not_mirrored(entry, self.options.follow_schemes)
        if reason is not None:
            return reason
        if url is None:
            return ""
        reason = hooks(url.scheme).not_mirrored_url(url)
        if reason is not None:
            return reason
        scope = self.scopes.get(str(parent))
        target = link_target(parent, entry)
        if target is not None:
            here = place(parent)
            directory = here[1].rstrip("/") + "/" if here is not None else ""
            reason = link_refused(directory, target, "" if self.options.parent or scope is None else scope[1])
            if reason is not None:
                self.loops += reason.startswith("a loop")
                return reason
        if not self.options.parent and (segment := encoded_climb(url)) is not None:
            return (f"the path segment {segment!r} is a dot segment once a server decodes it "
                    "(it may climb above the start directory); not followed")  # fmt: skip
        if not self.options.parent and scope is not None and not in_scope(url, scope):
            where = place(url)
            if where is not None and where[0] == scope[0]:
                return ""  # above or beside the start directory: not this tree
        return None  # on another origin, `leaves` decides

    def leaves(self, parent: URL, url: URL) -> str | None:
        """Why a link to another origin is not followed: a reason, "" to drop it silently, None to follow it.

        Another scheme needs --follow-schemes (a news: group's articles are
        nntp: URLs by nature); another host, or another port of a start host
        (another server), needs --span-hosts.  The port case is reported: it
        looks like the same site, and is not.
        """
        here, there = origin(parent), origin(url)
        if parent.scheme == "news" and url.scheme in ("nntp", "nntps"):
            return None
        if url.scheme != parent.scheme and url.scheme not in self.options.follow_schemes:
            return ""
        if self.options.span_hosts or there == here or there in self.origins:
            return None
        if there[1] not in self.hosts and there[1] != here[1]:
            return ""
        if url.scheme != parent.scheme:
            return None  # --follow-schemes: the other scheme of the same host, on its own port
        return (f"{there[0]}://{there[1]}:{there[2]} is another port of the same host, another server; "
                "-r stays on the origins it started on (--span-hosts follows it)")  # fmt: skip

    def confinement(self, parent: URL, entry: Entry, url: URL) -> str | None:
        """FTP: the start directory ("" with --parent) a link of unknown target must stay in, else None.

        MLSD says `OS.unix=slink:` without the target and NLST does not say
        what a name is, so the handler learns where such a name leads with
        PWD after entering it, and lists it only if `link_refused` allows.
        """
        if url.scheme not in ("ftp", "ftps") or entry.type not in ("link", "unknown") or entry.target:
            return None
        scope = self.scopes.get(str(parent))
        return "" if self.options.parent or scope is None else scope[1]

    def adopt(self, parent: URL, url: URL, entry: Entry | None) -> None:
        """`url` will be retrieved, found in `parent`: it inherits the scope; keep the listing's facts."""
        key = str(url)
        scope = self.scopes.get(str(parent))
        where = place(url)
        if scope is not None and where is not None and where[0] != scope[0]:
            scope = scope_of(url, listing=where[1].endswith("/"))  # a new tree: it starts where the link points
        self.scopes[key] = scope
        self.lineage[key] = str(parent)
        if entry is not None and self.options.timestamping and entry.type not in ("directory", "menu"):
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
        if not self.options.timestamping:
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
        if not self.options.timestamping or url.scheme not in ("http", "https"):
            return None
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        self.existed.add(str(url))
        return info.st_mtime

    def etag(self, url: URL, path: Path) -> str | None:
        """-N over HTTP: the ETag the local copy was saved with, for If-None-Match (None: none, or changed)."""
        if not self.options.timestamping or self.etags is None or url.scheme not in ("http", "https"):
            return None
        return self.etags.lookup(str(url), path)

    def saved(self, url: URL, path: Path, etag: str | None = None, content_type: str | None = None) -> str:
        """A file was written: give it the listing's time (-N), keep its ETag and type; "new" or "updated"."""
        key = str(url)
        _, modified, precision = self.facts.pop(key, (None, None, None))
        if modified is not None and precision == "second":
            # A listing to the second (MLSD) is what the next -N run compares with; coarser
            # listings leave the time the retrieval gave (MDTM, Last-Modified), which is as precise.
            set_time(path, modified)
        if self.options.timestamping and self.etags is not None and url.scheme in ("http", "https"):
            # After the time is set: the state records the final stat.  The type too: a 304 next time has none.
            self.etags.remember(key, path, etag, content_type)
        return "updated" if key in self.existed else "new"

    def page_type(self, url: URL, path: Path) -> str | None:
        """-N over HTTP: the type a page had when its local copy was saved (a 304 does not say it again)."""
        if self.etags is None or url.scheme not in ("http", "https"):
            return None
        return self.etags.content_type(str(url), path)

    # -- HTTP: links of pages, robots.txt ------------------------------------------

    async def robots_allow(self, client: Any, url: URL) -> bool:
        """robots.txt of the URL's origin allows it (fetched once per origin; none or unreadable: allowed)."""
        if not self.options.robots or url.scheme not in ("http", "https"):
            return True
        site = f"{url.scheme}://{getattr(url, 'host', '')}:{getattr(url, 'port', '')}"
        if not self.robots.known(site):
            text: str | None = None
            try:
                async with client.open(site + "/robots.txt") as resource:
                    if resource.kind == "document":
                        body = bytearray()
                        async for chunk in resource:
                            body += chunk
                            if len(body) > _ROBOTS_BYTES:
                                break
                        text = bytes(body[:_ROBOTS_BYTES]).decode("utf-8", "replace")
            except FetchError:
                text = None  # no robots.txt (404) or none reachable: nothing is disallowed
            self.robots.learn(site, text)
        return self.robots.allowed(site, str(url))


#: robots.txt is read up to this size (Google's documented limit is 500 KiB).
_ROBOTS_BYTES = 500 * 1024

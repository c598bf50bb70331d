"""Request notes: what the caller knows about one URL before it is asked for, as plain data.

A mirror (`fetch -r`) learns things about a URL that change how it is
asked for: the local copy's time and ETag (-N: If-Modified-Since and
If-None-Match, a 304 answered as "not modified"), and, for an FTP name of
unknown target, the start directory it must stay in.  They travel with the
request (`Client.open(url, notes=...)`, the `(url, notes)` items of
`fetch_all`, a cluster's batches) and reach the handler as `session.notes`;
a handler reads them and never asks the mirror.

The notes are data, so the rule that reads the confinement lives here
too, pure and written once: `link_refused`, by which the mirror judges a
listing's symbolic links (fetcher.mirror.scope) and the FTP handler judges
where a name of unknown target really led.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from fetcher.url import URL


def normalize_path(path: str, *, encoded: bool = False) -> str:
    """Resolve `.` and `..` lexically; keep a trailing slash; never above the root.

    `encoded`: the path is percent-encoded (HTTP), so `%2e` spells a dot
    too, as a server that decodes before resolving reads it.
    """
    if not path:
        return ""
    dot, dot_dot = (_DOT, _DOT_DOT) if encoded else (_PLAIN_DOT, _PLAIN_DOT_DOT)
    lead = "/" if path.startswith("/") else ""
    last = path.rsplit("/", 1)[-1].lower()
    trail = "/" if path.endswith("/") or (path != last and (last in dot or last in dot_dot)) else ""
    parts: list[str] = []
    for part in path.split("/"):
        folded = part.lower() if encoded else part
        if part == "" or folded in dot:
            continue
        if folded in dot_dot:
            if parts:
                parts.pop()
            continue
        parts.append(part)
    joined = lead + "/".join(parts)
    if trail and not joined.endswith("/"):
        joined += "/"
    return joined


#: Spellings of the dot segments in a percent-encoded path (compared lower-cased), and in a plain one.
_DOT = frozenset({".", "%2e"})
_DOT_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})
_PLAIN_DOT = frozenset({"."})
_PLAIN_DOT_DOT = frozenset({".."})


def under(path: str, prefix: str) -> bool:
    """Is the normalized `path` the directory `prefix` or inside it?"""
    if not prefix:
        return True
    return path == prefix.rstrip("/") or path.startswith(prefix if prefix.endswith("/") else prefix + "/")


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


@dataclass(frozen=True, slots=True)
class Confinement:
    """-r over FTP: the start directory ("" with --parent) a name of unknown target must stay in.

    MLSD says `OS.unix=slink:` without the target and NLST does not say
    what a name is, so the handler learns where such a name leads (PWD
    after entering it) and lists it only if `refusal` finds no reason not to.
    """

    scope: str

    def refusal(self, directory: str, landed: str) -> str | None:
        """Why a name listed in `directory` that led to the path `landed` is not listed (a loop, or
        outside the scope), else None."""
        return link_refused(directory, normalize_path(landed), self.scope)


@dataclass(frozen=True, slots=True)
class RequestNotes:
    """What the caller knows about one URL (see the module docstring); every field optional."""

    #: The local copy's time (epoch seconds): HTTP asks If-Modified-Since, and a 304 comes
    #: back as an advisory ("not modified", metadata status 304).
    modified_since: float | None = None
    #: The ETag the local copy was saved with (checked when it was stored: fetcher.mirror.etags):
    #: If-None-Match beside it.
    etag: str | None = None
    #: FTP: where a name of unknown target may lead (None: anywhere).
    confinement: Confinement | None = None


#: A request without notes (what `Session.notes` is unless the caller gave some).
NO_NOTES = RequestNotes()

#: One item of `Client.fetch_all`: a URL (or its text), alone or with its notes.
Request: TypeAlias = "URL | str | tuple[URL | str, RequestNotes]"


def split_request(item: Request) -> tuple[URL | str, RequestNotes | None]:
    """The URL of a `fetch_all` item and its notes (None: it came without)."""
    if isinstance(item, tuple):
        return item[0], item[1]
    return item, None

"""Where `fetch -r` may go: the tree a start URL names, its origin, and the paths that climb out of it.

Pure functions over URLs (no I/O but reading a file: symlink), used by
`fetcher.mirror.rules`.  The path rules a handler needs too (normalizing,
`link_refused`) are the request notes' (fetcher.handler.notes): the FTP
handler judges a name of unknown target by them, as data it is given.

- The tree of a start URL is its directory on its origin: scheme, host and
  port together.  Another port of the same host is another server (another
  daemon, perhaps another user's), so it is outside the tree like another
  host; `--span-hosts` is what lets a mirror leave its origins.
- Paths are compared after resolving `.` and `..` (RFC 3986 5.2.4).  In an
  HTTP path a dot segment may also come percent-encoded (`%2e%2e`, `.%2E`):
  many servers decode it and then serve what lies above the start
  directory, so the comparison decodes those segments first, and a link
  that spells one (or hides `..` behind an encoded slash or a backslash) is
  refused with a reason rather than requested (`encoded_climb`).
"""

from __future__ import annotations

import os
from urllib.parse import unquote

from fetcher.handler.notes import link_refused, normalize_path, under
from fetcher.registry import hooks
from fetcher.resource import Entry
from fetcher.url import URL

__all__ = ["Origin", "Scope", "encoded_climb", "in_scope", "link_refused", "link_target", "normalize_path", "origin",
           "place", "scope_of", "under"]  # fmt: skip

Origin = tuple[str, str, object]
Scope = tuple[Origin, str]


def origin(url: URL) -> Origin:
    """(scheme, host in lower case, port): what must match for two URLs to be on the same server."""
    return url.origin


def place(url: URL) -> Scope | None:
    """The origin and the normalized path-like part of a URL; None for schemes without a tree.

    The path is the handler's to say (its `tree_path` hook: an FTP path, an
    HTTP path still percent-encoded, a Gopher selector...): no scheme is named here.
    """
    where = hooks(url.scheme).tree_path(url)
    if where is None:
        return None
    path, encoded = where
    return origin(url), normalize_path(path, encoded=encoded)


def scope_of(url: URL, *, listing: bool) -> Scope | None:
    """The directory a start URL names: itself when it was a listing, else the one holding it."""
    where = place(url)
    if where is None:
        return None
    home, path = where
    if listing:
        return home, path if path.endswith("/") or not path else path + "/"
    return home, path[: path.rfind("/") + 1] if "/" in path else ""


def in_scope(url: URL, scope: Scope) -> bool:
    """Is `url` at or below the scope's directory (same scheme, host and port)?"""
    where = place(url)
    if where is None:
        return False
    return where[0] == scope[0] and under(where[1], scope[1])


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


def encoded_climb(url: URL) -> str | None:
    """The segment of an HTTP path or Gopher selector that reaches a dot segment only once decoded, or None.

    `%2e%2e`, `.%2E` or `%2e` is `..` or `.` to a server that decodes the
    path before resolving it, and `..%2f`, `%2e%2e%5c` or `..\\` hides a `..`
    behind a slash that is not one yet.  A page has no honest use for
    either, and the scope compares what the client sees, so such a link is
    refused.  (A Gopher selector is held decoded once already: a server that
    decodes again meets the same trap.)
    """
    if url.scheme in ("http", "https"):
        path = str(getattr(url, "path", "") or "")
    elif url.scheme in ("gopher", "gophers"):
        path = str(getattr(url, "selector", "") or "")
    else:
        return None
    if "%" not in path and "\\" not in path:
        return None
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            continue
        decoded = unquote(segment, errors="surrogateescape")
        if decoded in (".", "..") or ".." in decoded.replace("\\", "/").split("/"):
            return segment
    return None

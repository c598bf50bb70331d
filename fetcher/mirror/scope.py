"""Where `fetch -r` may go: the tree a start URL names, its origin, and the paths that climb out of it.

Pure functions over URLs (no I/O but reading a file: symlink), used by
`fetcher.mirror.rules` and, for links of unknown target, by the FTP handler.

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

from fetcher.registry import hooks
from fetcher.resource import Entry
from fetcher.url import URL

Origin = tuple[str, str, object]
Scope = tuple[Origin, str]

#: Spellings of the dot segments in a percent-encoded path (compared lower-cased).
_DOT = frozenset({".", "%2e"})
_DOT_DOT = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})


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


def normalize_path(path: str, *, encoded: bool = False) -> str:
    """Resolve `.` and `..` lexically; keep a trailing slash; never above the root.

    `encoded`: the path is percent-encoded (HTTP), so `%2e` spells a dot
    too, as a server that decodes before resolving reads it.
    """
    if not path:
        return ""
    dot, dot_dot = (_DOT, _DOT_DOT) if encoded else (frozenset({"."}), frozenset({".."}))
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

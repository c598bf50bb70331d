"""The handler shape and its hooks: where each scheme says what the core would otherwise decide per scheme.

Every `schemes.<name>.Handler` has `scheme`, `default_port` and
`open(url, session)` (`Handler`, the protocol the registry loads).  What
the core needs to know beyond that (how a URL names a file, where it lies
in its server's tree for `-r`, how its listings read on a terminal, what
the archive keeps of its dialogue, its help page) is a hook on
`BaseHandler`, with the default that suits a scheme that says nothing.
Handlers subclass it and override what differs; the core reads the hooks
through `fetcher.registry.hooks(scheme)`, never by naming a scheme.

Hooks are pure: no I/O, no import of anything heavier than the handler's
own module (they run while names are chosen, before any connection).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol
from urllib.parse import unquote  # already loaded by pathlib

from fetcher.url import URL, GenericURL

if TYPE_CHECKING:
    from fetcher.handler.session import Session
    from fetcher.handler.topic import Topic
    from fetcher.resource import Entry, Resource


class Handler(Protocol):
    """What every `schemes.<name>.Handler` provides: the shape the registry loads."""

    scheme: str
    default_port: int | None

    async def open(self, url: URL, session: Session) -> Resource: ...


class BaseHandler:
    """The hooks of a handler, with their defaults (see module docstring)."""

    scheme: str = ""
    default_port: int | None = None
    #: Whether the archive keeps the trace lines of a retrieval as its dialogue.  HTTP's
    #: wire records (request and response bytes) say it all: it does not.
    keeps_dialogue: bool = True
    #: Its HTML documents are pages whose links --links/--json list (the mirror's extractor reads them).
    page_links: bool = False
    #: The help page of a plug-in's scheme (`fetch --help SCHEME`); the built-in schemes'
    #: pages are the registry's table (fetcher/registry/pages.py), so help loads no protocol.
    topic: Topic | None = None

    async def open(self, url: URL, session: Session) -> Resource:
        raise NotImplementedError(f"{type(self).__name__} opens no URLs")

    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        """The file name a URL suggests for -O and bulk runs (unsanitized; the core sanitizes it).

        A URL whose last segment is empty names a directory: None (saved as
        `index`) unless `index` is False, when the directory's own name is
        wanted (bulk runs and mirrors name listings so).
        """
        if isinstance(url, GenericURL) and url.path:
            path = url.path if index else url.path.rstrip("/")
            return unquote(path.rsplit("/", 1)[-1], errors="surrogateescape")
        return None

    def tree_segments(self, url: URL) -> list[str]:
        """The path below the host for --layout tree and -r (unsanitized); a trailing "" names a directory."""
        return []

    def host_directory(self, url: URL, host: str) -> str:
        """The top directory of --layout tree for `host` ("host" or "host_port"): tagged with the scheme."""
        return f"{url.scheme}_{host}"

    def tree_path(self, url: URL) -> tuple[str, bool] | None:
        """Where `url` lies in its server's tree, for -r's scope: (path, percent-encoded?); None: no tree."""
        return None

    def not_mirrored(self, entry: Entry, follow_schemes: frozenset[str]) -> str | None:
        """Why -r does not follow an entry of this scheme's listings, or None (to follow it).

        The default refuses what no scheme can save: a device, FIFO or socket
        (`other`), whose reading may block or never end.
        """
        if entry.type == "other":
            return "not a regular file, directory or link (a device, FIFO or socket); not mirrored"
        return None

    def not_mirrored_url(self, url: URL) -> str | None:
        """Why -r does not retrieve a URL of this scheme that a link led to, or None (to retrieve it)."""
        return None

    def listing_view(self, entries: list[Entry]) -> Iterator[str] | None:
        """A listing's lines on a terminal in the scheme's own form (a Gopher menu); None: the common table."""
        return None


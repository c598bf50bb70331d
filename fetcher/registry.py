"""Scheme name -> handler, as curl's table of protocol handlers.

Handlers are named as strings and imported on first use, so the core never
imports `schemes` and `fetch --version` imports no protocol.  Third parties
add schemes through the entry-point group `fetcher.schemes`
(`myscheme = "mypackage.module:Handler"`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

from fetcher.errors import NoHandler

if TYPE_CHECKING:
    from fetcher.client import Session
    from fetcher.resource import Resource
    from fetcher.url import URL

HANDLERS: dict[str, str] = {
    "file": "schemes.file:Handler",
    "telnet": "schemes.telnet:Handler",
    "mailto": "schemes.mailto:Handler",
    "ftp": "schemes.ftp:Handler",
    "ftps": "schemes.ftp:Handler",
    "http": "schemes.http:Handler",
    "https": "schemes.http:Handler",
    "gopher": "schemes.gopher:Handler",
    "gophers": "schemes.gopher:Handler",
    "nntp": "schemes.nntp:Handler",
    "nntps": "schemes.nntp:Handler",
    "news": "schemes.nntp:Handler",
    "snews": "schemes.nntp:Handler",
    "wais": "schemes.wais:Handler",
    "prospero": "schemes.prospero:Handler",
}

ENTRY_POINT_GROUP = "fetcher.schemes"


class Handler(Protocol):
    """What every `schemes.<name>.Handler` provides."""

    scheme: str
    default_port: int | None

    async def open(self, url: URL, session: Session) -> Resource: ...


_loaded: dict[str, Handler] = {}


def _plugin_target(scheme: str) -> str | None:
    from importlib.metadata import entry_points

    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == scheme:
            return str(entry.value)
    return None


def get_handler(scheme: str) -> Handler:
    """The handler instance for `scheme`; raise NoHandler (exit 2) if there is none."""
    handler = _loaded.get(scheme)
    if handler is not None:
        return handler
    target = HANDLERS.get(scheme) or _plugin_target(scheme)
    if target is None:
        raise NoHandler(
            f"no handler for scheme {scheme!r}",
            hint=f"fetcher knows {', '.join(sorted(HANDLERS))}; plug-ins register in {ENTRY_POINT_GROUP!r}",
        )
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise NoHandler(
                f"no handler for scheme {scheme!r}: {module_name} is not installed or not implemented yet"
            ) from None
        raise
    instance: Handler = getattr(module, attribute or "Handler")()
    _loaded[scheme] = instance
    return instance


def register(scheme: str, target: str) -> None:
    """Add or replace a handler at run time ("package.module:Class")."""
    HANDLERS[scheme] = target
    _loaded.pop(scheme, None)

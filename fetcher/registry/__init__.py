"""Scheme name -> handler, as curl's table of protocol handlers; the one core module that reaches scheme code.

Handlers are named as strings and imported on first use, so the rest of the
core never imports `schemes` and `fetch --version` imports no protocol.
Third parties add schemes through the entry-point group `fetcher.schemes`
(`myscheme = "mypackage.module:Handler"`).

What differs per scheme beyond retrieving (names on disk, place in a tree,
listing view, archive dialogue) the core asks through `hooks(scheme)`: the
handler's hooks (fetcher.handler.base.BaseHandler), or their defaults.  The
built-in schemes' help pages are this room's table too (pages.py), so that
help loads no protocol.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from fetcher.errors import NoHandler

if TYPE_CHECKING:
    from fetcher.handler.base import BaseHandler, Handler
    from fetcher.handler.topic import Topic

HANDLERS: dict[str, str] = {
    "file": "fetcher.schemes.file:Handler",
    "telnet": "fetcher.schemes.telnet:Handler",
    "mailto": "fetcher.schemes.mailto:Handler",
    "ftp": "fetcher.schemes.ftp:Handler",
    "ftps": "fetcher.schemes.ftp:Handler",
    "http": "fetcher.schemes.http:Handler",
    "https": "fetcher.schemes.http:Handler",
    "gopher": "fetcher.schemes.gopher:Handler",
    "gophers": "fetcher.schemes.gopher:Handler",
    "nntp": "fetcher.schemes.nntp:Handler",
    "nntps": "fetcher.schemes.nntp:Handler",
    "news": "fetcher.schemes.nntp:Handler",
    "snews": "fetcher.schemes.nntp:Handler",
    "wais": "fetcher.schemes.wais:Handler",
    "prospero": "fetcher.schemes.prospero:Handler",
}

ENTRY_POINT_GROUP = "fetcher.schemes"


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
    _hooks.pop(scheme, None)


def unregister(scheme: str) -> None:
    """Forget a handler added with `register` (and what was loaded or asked of it)."""
    HANDLERS.pop(scheme, None)
    _loaded.pop(scheme, None)
    _hooks.pop(scheme, None)


def hooks(scheme: str) -> BaseHandler:
    """The hooks of `scheme`'s handler (fetcher.handler.base.BaseHandler).

    A scheme without a handler, or a plug-in handler that does not derive
    from BaseHandler, gets the defaults: what the core did for a scheme it
    knew nothing about.  Asked for every URL of a bulk run (its file name),
    so the answer is kept per scheme until `register` changes the table.
    """
    found = _hooks.get(scheme)
    if found is not None:
        return found
    from fetcher.handler.base import BaseHandler

    try:
        handler = get_handler(scheme)
    except NoHandler:
        # Kept too: a mirror asks again for every link of that scheme, and the entry points are not read again.
        handler = None
    found = handler if isinstance(handler, BaseHandler) else _defaults()
    _hooks[scheme] = found
    return found


#: The hooks `hooks` found, per scheme, the defaults for a scheme without a handler
#: (until `register` or `unregister` changes the scheme's entry).
_hooks: dict[str, BaseHandler] = {}
_default_hooks: list[BaseHandler] = []


def _defaults() -> BaseHandler:
    if not _default_hooks:
        from fetcher.handler.base import BaseHandler

        _default_hooks.append(BaseHandler())
    return _default_hooks[0]


def topics() -> tuple[Topic, ...]:
    """The built-in schemes' help pages, in the order help shows them (pages.py)."""
    from fetcher.registry.pages import TOPICS

    return TOPICS


def topic(scheme: str) -> Topic | None:
    """The help page of `scheme`: the built-in table's, else its handler's `topic` hook (a plug-in), else None."""
    for page in topics():
        if scheme in page.schemes:
            return page
    return hooks(scheme).topic

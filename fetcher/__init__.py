"""fetcher: a retrieval client for every URL scheme of RFC 1738, on trio.

The public API is re-exported here and loaded lazily, so that importing the
package (and `fetch --version`) does not import trio or any protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "parse_url": "url",
    "join": "url",
    "URL": "url",
    "FtpURL": "url",
    "HttpURL": "url",
    "GopherURL": "url",
    "NewsURL": "url",
    "NntpURL": "url",
    "TelnetURL": "url",
    "WaisURL": "url",
    "FileURL": "url",
    "ProsperoURL": "url",
    "MailtoURL": "url",
    "GenericURL": "url",
    "Client": "client",
    "Session": "client",
    "Fetched": "client",
    "Download": "sink",
    "Outcome": "client",
    "fetch": "client",
    "Settings": "settings",
    "Resource": "resource",
    "Entry": "resource",
    "Advisory": "resource",
    "Policy": "guard",
    "FetchError": "errors",
    "URLError": "errors",
    "UnsafeURL": "errors",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from .client import Client, Fetched, Outcome, Session, fetch
    from .errors import FetchError, UnsafeURL, URLError
    from .guard import Policy
    from .resource import Advisory, Entry, Resource
    from .settings import Settings
    from .sink import Download
    from .url import (
        URL,
        FileURL,
        FtpURL,
        GenericURL,
        GopherURL,
        HttpURL,
        MailtoURL,
        NewsURL,
        NntpURL,
        ProsperoURL,
        TelnetURL,
        WaisURL,
        join,
        parse_url,
    )


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'fetcher' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value
    return value

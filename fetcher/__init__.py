"""fetcher: a retrieval client for every URL scheme of RFC 1738, on trio.

The public API is re-exported here (`__all__` lists it) and loaded lazily, so
that importing the package (and `fetch --version`) imports neither trio nor
any protocol.  Type checkers see the same names through the explicit
re-exports under `TYPE_CHECKING`.

* async: `Client`, `fetch` (and `Client.open`, `download`, `fetch_all`);
* blocking: `fetch_sync`, `download_sync`, `fetch_all_sync` (fetcher.sync);
* URLs: `parse_url`, `join` and one class per scheme;
* results: `Fetched`, `Download`, `Outcome` (`FetchAll`, `Outcomes` for bulk), `Resource`, `Entry`,
  `Advisory`;
* settings: `Settings` (and `SettingsOverrides`, the same as keyword arguments), `Limits`, `Policy`;
* errors: the `fetcher.errors` module and its main classes, each with its exit code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the submodule that defines it
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
    "Outcome": "client",
    "fetch": "client",
    "FetchAll": "batch",
    "Outcomes": "batch",
    "fetch_sync": "sync",
    "download_sync": "sync",
    "fetch_all_sync": "sync",
    "Download": "sink",
    "Settings": "settings",
    "SettingsOverrides": "settings",
    "Limits": "settings",
    "Resource": "resource",
    "Entry": "resource",
    "Advisory": "resource",
    "Policy": "guard",
    "FetchError": "errors",
    "UsageError": "errors",
    "URLError": "errors",
    "UnsafeURL": "errors",
    "ConnectError": "errors",
    "AuthError": "errors",
    "NotFound": "errors",
    "ProtocolError": "errors",
    "TooLarge": "errors",
    "LimitExceeded": "errors",
    "Timeout": "errors",
    "OutputError": "errors",
    "Interrupted": "errors",
}
# submodules reachable as attributes (`fetcher.errors.NotFound`) without an explicit import
_SUBMODULES = frozenset({"errors", "sync"})

__all__ = [
    "URL",
    "Advisory",
    "AuthError",
    "Client",
    "ConnectError",
    "Download",
    "Entry",
    "FetchAll",
    "FetchError",
    "Fetched",
    "FileURL",
    "FtpURL",
    "GenericURL",
    "GopherURL",
    "HttpURL",
    "Interrupted",
    "LimitExceeded",
    "Limits",
    "MailtoURL",
    "NewsURL",
    "NntpURL",
    "NotFound",
    "Outcome",
    "Outcomes",
    "OutputError",
    "Policy",
    "ProsperoURL",
    "ProtocolError",
    "Resource",
    "Session",
    "Settings",
    "SettingsOverrides",
    "TelnetURL",
    "Timeout",
    "TooLarge",
    "URLError",
    "UnsafeURL",
    "UsageError",
    "WaisURL",
    "__version__",
    "download_sync",
    "errors",
    "fetch",
    "fetch_all_sync",
    "fetch_sync",
    "join",
    "parse_url",
]

if TYPE_CHECKING:
    from . import errors as errors
    from .batch import FetchAll as FetchAll
    from .batch import Outcomes as Outcomes
    from .client import Client as Client
    from .client import Fetched as Fetched
    from .client import Outcome as Outcome
    from .client import Session as Session
    from .client import fetch as fetch
    from .errors import AuthError as AuthError
    from .errors import ConnectError as ConnectError
    from .errors import FetchError as FetchError
    from .errors import Interrupted as Interrupted
    from .errors import LimitExceeded as LimitExceeded
    from .errors import NotFound as NotFound
    from .errors import OutputError as OutputError
    from .errors import ProtocolError as ProtocolError
    from .errors import Timeout as Timeout
    from .errors import TooLarge as TooLarge
    from .errors import UnsafeURL as UnsafeURL
    from .errors import URLError as URLError
    from .errors import UsageError as UsageError
    from .guard import Policy as Policy
    from .resource import Advisory as Advisory
    from .resource import Entry as Entry
    from .resource import Resource as Resource
    from .settings import Limits as Limits
    from .settings import Settings as Settings
    from .settings import SettingsOverrides as SettingsOverrides
    from .sink import Download as Download
    from .sync import download_sync as download_sync
    from .sync import fetch_all_sync as fetch_all_sync
    from .sync import fetch_sync as fetch_sync
    from .url import URL as URL
    from .url import FileURL as FileURL
    from .url import FtpURL as FtpURL
    from .url import GenericURL as GenericURL
    from .url import GopherURL as GopherURL
    from .url import HttpURL as HttpURL
    from .url import MailtoURL as MailtoURL
    from .url import NewsURL as NewsURL
    from .url import NntpURL as NntpURL
    from .url import ProsperoURL as ProsperoURL
    from .url import TelnetURL as TelnetURL
    from .url import WaisURL as WaisURL
    from .url import join as join
    from .url import parse_url as parse_url
else:
    # Hidden from type checkers: a module __getattr__ would make every
    # misspelt `from fetcher import ...` an Any instead of an error.

    def __getattr__(name: str) -> Any:
        import importlib

        if name in _SUBMODULES:
            return importlib.import_module(f".{name}", __name__)
        module_name = _EXPORTS.get(name)
        if module_name is None:
            raise AttributeError(f"module 'fetcher' has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module_name}", __name__), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})

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

from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> the submodule that defines it (loaded on first use: fetcher.lazy)
_EXPORTS = {
    "parse_url": ".url",
    "join": ".url",
    "URL": ".url",
    "FtpURL": ".url",
    "HttpURL": ".url",
    "GopherURL": ".url",
    "NewsURL": ".url",
    "NntpURL": ".url",
    "TelnetURL": ".url",
    "WaisURL": ".url",
    "FileURL": ".url",
    "ProsperoURL": ".url",
    "MailtoURL": ".url",
    "GenericURL": ".url",
    "Client": ".client",
    "Session": ".handler",
    "Fetched": ".bulk.outcomes",
    "Outcome": ".bulk.outcomes",
    "fetch": ".client",
    "FetchAll": ".bulk.batch",
    "Outcomes": ".bulk.batch",
    "fetch_sync": ".sync",
    "download_sync": ".sync",
    "fetch_all_sync": ".sync",
    "Download": ".disk.writer",
    "Settings": ".settings",
    "SettingsOverrides": ".settings",
    "Limits": ".settings",
    "Resource": ".resource",
    "Entry": ".resource",
    "Advisory": ".resource",
    "Policy": ".guard",
    "FetchError": ".errors",
    "UsageError": ".errors",
    "URLError": ".errors",
    "UnsafeURL": ".errors",
    "ConnectError": ".errors",
    "AuthError": ".errors",
    "NotFound": ".errors",
    "ProtocolError": ".errors",
    "TooLarge": ".errors",
    "LimitExceeded": ".errors",
    "Timeout": ".errors",
    "OutputError": ".errors",
    "Interrupted": ".errors",
}
# submodules reachable as attributes (`fetcher.errors.NotFound`) without an explicit import
_SUBMODULES = {"errors": ".errors", "sync": ".sync"}

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
    from fetcher import errors as errors
    from fetcher.bulk.batch import FetchAll as FetchAll
    from fetcher.bulk.batch import Outcomes as Outcomes
    from fetcher.bulk.outcomes import Fetched as Fetched
    from fetcher.bulk.outcomes import Outcome as Outcome
    from fetcher.client import Client as Client
    from fetcher.client import fetch as fetch
    from fetcher.disk.writer import Download as Download
    from fetcher.errors import AuthError as AuthError
    from fetcher.errors import ConnectError as ConnectError
    from fetcher.errors import FetchError as FetchError
    from fetcher.errors import Interrupted as Interrupted
    from fetcher.errors import LimitExceeded as LimitExceeded
    from fetcher.errors import NotFound as NotFound
    from fetcher.errors import OutputError as OutputError
    from fetcher.errors import ProtocolError as ProtocolError
    from fetcher.errors import Timeout as Timeout
    from fetcher.errors import TooLarge as TooLarge
    from fetcher.errors import UnsafeURL as UnsafeURL
    from fetcher.errors import URLError as URLError
    from fetcher.errors import UsageError as UsageError
    from fetcher.guard import Policy as Policy
    from fetcher.handler import Session as Session
    from fetcher.resource import Advisory as Advisory
    from fetcher.resource import Entry as Entry
    from fetcher.resource import Resource as Resource
    from fetcher.settings import Limits as Limits
    from fetcher.settings import Settings as Settings
    from fetcher.settings import SettingsOverrides as SettingsOverrides
    from fetcher.sync import download_sync as download_sync
    from fetcher.sync import fetch_all_sync as fetch_all_sync
    from fetcher.sync import fetch_sync as fetch_sync
    from fetcher.url import URL as URL
    from fetcher.url import FileURL as FileURL
    from fetcher.url import FtpURL as FtpURL
    from fetcher.url import GenericURL as GenericURL
    from fetcher.url import GopherURL as GopherURL
    from fetcher.url import HttpURL as HttpURL
    from fetcher.url import MailtoURL as MailtoURL
    from fetcher.url import NewsURL as NewsURL
    from fetcher.url import NntpURL as NntpURL
    from fetcher.url import ProsperoURL as ProsperoURL
    from fetcher.url import TelnetURL as TelnetURL
    from fetcher.url import WaisURL as WaisURL
    from fetcher.url import join as join
    from fetcher.url import parse_url as parse_url
else:
    # Hidden from type checkers: a module __getattr__ would make every
    # misspelt `from fetcher import ...` an Any instead of an error.

    from fetcher.lazy import lazy_getattr as _lazy_getattr

    __getattr__ = _lazy_getattr(globals(), _EXPORTS, _SUBMODULES)

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})

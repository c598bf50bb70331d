"""Every knob of a `Client`, in one place; the CLI maps its flags onto these.

`Settings` is the typed value; `SettingsOverrides` types the same names as
keyword arguments (`Client(timeout=20)`, `fetch_sync(url, timeout=20)`), so a
type checker catches `timout=20` or `timeout="20"`, and `Settings.build`
refuses both at run time with a `UsageError` naming the setting, before
anything reaches the network layer.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from fetcher.errors import UsageError
from fetcher.guard import DEFAULT_REDIRECT_SCHEMES, Policy


@dataclass(frozen=True)
class Limits:
    """Caps on everything a server can make grow (count and bytes).

    The defaults are generous: no real archive reaches them, and together
    they keep one fetch from a hostile server well under 256 MiB of memory.
    Every pure parser takes the caps it needs as arguments and raises
    `fetcher.errors.LimitExceeded` (exit 7) past them; the CLI raises one
    with `--limit NAME=VALUE`, the library with `Client(limits=Limits(...))`
    or `Client(limits={"name": value})`.
    """

    #: Entries in one listing: FTP NLST/LIST/MLSD, Gopher menus, Prospero
    #: replies, NNTP LIST/OVER, WAIS hit lists.
    listing_entries: int = 200_000
    #: Bytes of one listing as the server sent it.
    listing_bytes: int = 64 * 1024 * 1024
    #: Bytes of one protocol line (a reply line, a menu line, a header line).
    line_bytes: int = 64 * 1024
    #: Lines of one multi-line reply: FTP replies, NNTP CAPABILITIES and
    #: article header blocks.
    reply_lines: int = 10_000
    #: HTTP response head: number of header fields and total bytes.
    header_count: int = 256
    header_bytes: int = 256 * 1024
    #: Bytes of one Gopher+ attribute block (`!`, `$`, `+ATTR` replies).
    attribute_bytes: int = 4 * 1024 * 1024
    #: Bytes of one WAIS field (headline, DocID, diagnostic text) and of one APDU.
    wais_field_bytes: int = 1024 * 1024
    wais_apdu_bytes: int = 16 * 1024 * 1024
    #: ARDP packets in one Prospero reply.
    ardp_packets: int = 4096
    #: Decoded bytes per encoded byte (gzip/deflate bombs), checked once the
    #: decoded size passes 1 MiB; and how many Content-Encodings may stack.
    decoded_ratio: int = 1000
    encodings: int = 4
    #: Recursive retrieval (-r): URLs waiting in the frontier, and pages fetched.
    frontier: int = 1_000_000
    pages: int = 1_000_000

    def replace(self, **changes: int) -> Limits:
        names = {f.name for f in dataclasses.fields(self)}
        for name, value in changes.items():
            if name not in names:
                raise TypeError(f"unknown limit {name!r} (known: {', '.join(sorted(names))})")
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"limit {name} must be a positive whole number, not {value!r}")
        return dataclasses.replace(self, **changes)


DEFAULT_LIMITS = Limits()

#: Bytes/s the low-speed rule asks of each URL of a bulk run when the user
#: did not choose (a drip-feed server cannot hold a worker for ever).
BULK_SPEED_LIMIT = 100

#: Ask the user something: (prompt, secret) -> answer, or None when nobody can answer.
Prompt = Callable[[str, bool], "str | None"]


@dataclass
class Settings:
    """Everything a `Client` can be told; `Client(**fields)` or `Client(Settings(...))`.

    The `fetch` options map onto these fields (`--timeout` -> `timeout`,
    `--allow-port` -> `allow_ports`, `--limit NAME=N` -> `limits`, ...).
    """

    # Time limits, in seconds.  `timeout` bounds every wait for the network.
    timeout: float = 30.0
    connect_timeout: float = 15.0
    #: Bound on one whole URL (curl -m); None = no bound.
    max_time: float | None = None
    #: Low-speed rule (curl --speed-limit/--speed-time): fail when fewer than
    #: `speed_limit` bytes/s arrive over `speed_time` seconds of waiting for
    #: the server.  0 = off; None = the default for the context: off for a
    #: single retrieval, `BULK_SPEED_LIMIT` for each URL of `fetch_all`.
    speed_limit: int | None = None
    speed_time: float = 30.0
    #: Caps on what a server can make grow.
    limits: Limits = DEFAULT_LIMITS
    # The guard.
    allow_ports: frozenset[int] = frozenset()
    unsafe_ports: bool = False
    redirect_schemes: frozenset[str] = DEFAULT_REDIRECT_SCHEMES
    # Redirects (HTTP) and resolutions (Prospero).
    follow_redirects: bool = True
    max_redirects: int = 20
    # Credentials: -u USER[:PASSWORD], ~/.netrc, FTP anonymous password.
    user: str | None = None
    #: Never shown in repr (settings end up in logs and tracebacks).
    password: str | None = field(default=None, repr=False)
    #: Send -u credentials to every host a redirect or resolution leads to
    #: (curl --location-trusted); by default they stay with their origin.
    location_trusted: bool = False
    use_netrc: bool = True
    netrc_file: str | None = None
    anon_password: str | None = None
    ftp_account: str | None = None
    # TLS.
    ftp_tls: bool = False
    starttls: bool = False
    cacert: str | None = None
    insecure: bool = False
    # Bodies.
    raw: bool = False
    max_size: int | None = None
    show_error_body: bool = False
    #: -I/--head: HTTP(S) sends HEAD instead of GET; the document has the response's head and no body.
    head: bool = False
    # Protocol inputs the URL may lack.
    query: str | None = None
    form: dict[str, str] = field(default_factory=dict)
    article_range: tuple[int, int] | None = None
    nntp_server: str | None = None
    max_hits: int = 40
    wais_chunk: int = 10000
    gopher_strict: bool = False
    resolve_only: bool = False
    #: --json: listings and advisories show every fact, so handlers may ask
    #: servers for the per-entry details they otherwise skip (Prospero LIST
    #: ATTRIBUTES) and put them in advisory fields.
    listing_facts: bool = False
    #: --ftp-facts: an FTP directory listing (not `;type=d`) asks SIZE and MDTM
    #: of each file whose listing left its size or exact time unknown (NLST,
    #: LIST's minute or day dates, symbolic links).  Off by default: it costs
    #: a round trip per file.
    ftp_facts: bool = False
    #: Give saved files the server's modification time where it costs a
    #: command (FTP MDTM, with SIZE beside it).  None: yes for one retrieval,
    #: no in bulk runs (`fetch_all`), where it would be two of six commands per
    #: file; -N and -R/--remote-time ask for it.  HTTP's Last-Modified is free
    #: and always used.
    remote_time: bool | None = None
    prospero_timeout: float = 4.0
    prospero_retries: int = 3
    interactive: bool = False
    proxy: str | None = None
    # Concurrency and pools.
    jobs: int = 8
    per_host: int = 2
    retries: int = 2
    #: Bulk runs (`fetch_all` with a destination) send plain HTTP GETs down a
    #: lane: several requests in flight on each kept-alive connection
    #: (fetcher/bulk/lanes.py).  False: one request at a time per connection.
    pipeline: bool = True
    retry_max_time: float = 60.0
    #: --limit-rate: bytes per second for all transfers of the client together (None: no limit).
    limit_rate: int | None = None
    idle_timeout: float = 30.0
    user_agent: str | None = None
    #: Extra HTTP(S) request header fields (-H, -e), sent in this order; one
    #: named like a default field (Accept, User-Agent...) replaces it, an empty
    #: value removes it.  CR, LF or NUL anywhere is refused by the guard (exit 3).
    headers: tuple[tuple[str, str], ...] = ()
    # How to ask the user (the CLI sets this on a terminal).
    prompt: Prompt | None = None
    # Settings of third-party handlers.
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, base: Settings | None = None, **overrides: Any) -> Settings:
        """`base` (or the defaults) with `overrides` applied, every value checked against its field's type.

        A misspelt name or a value of the wrong type is a `SettingError`
        (a `UsageError`, exit 2) naming the setting, here and not deep in
        the network layer.
        """
        if base is not None and not isinstance(base, Settings):
            raise SettingError(f"settings= must be a fetcher.Settings value, not {type(base).__name__}")
        settings = dataclasses.replace(base) if base is not None else cls()
        checks = _checks()
        for name, value in overrides.items():
            if name not in checks:
                raise _unknown(name, checks)
            if name in ("allow_ports", "redirect_schemes") and isinstance(value, Iterable | Mapping):
                value = value if isinstance(value, str) else frozenset(value)
            if name == "limits" and isinstance(value, Mapping):
                try:
                    value = DEFAULT_LIMITS.replace(**value)
                except (TypeError, ValueError) as error:
                    raise SettingError(f"setting limits: {error}", hint=_LIMITS_HINT) from None
            setattr(settings, name, value)
        for name, (kind, accepts) in checks.items():
            value = getattr(settings, name)
            if not accepts(value):
                raise SettingError(
                    f"setting {name}={_shown(name, value)} has the wrong type: expected {kind}, "
                    f"got {type(value).__name__}",
                    hint=f"give {name} a value of type {kind} (see fetcher.Settings)",
                )
        if settings.anon_password is None:
            settings.anon_password = os.environ.get("FETCH_EMAIL")
        if settings.nntp_server is None:
            settings.nntp_server = os.environ.get("NNTPSERVER")
        return settings

    @property
    def policy(self) -> Policy:
        return Policy(
            allow_ports=self.allow_ports,
            unsafe_ports=self.unsafe_ports,
            redirect_schemes=self.redirect_schemes,
        )


class SettingError(UsageError, TypeError):
    """A setting that does not exist or has a value of the wrong type (exit 2).

    Also a TypeError, as a wrong keyword argument is in Python.
    """


_LIMITS_HINT = "limits= takes a fetcher.Limits value or a dict of its field names to positive whole numbers"


def _shown(name: str, value: object) -> str:
    """The value as a message shows it (never a password)."""
    if name == "password":
        return "***"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unknown(name: str, checks: Mapping[str, object]) -> SettingError:
    import difflib

    close = difflib.get_close_matches(name, list(checks), n=1)
    hint = f"did you mean {close[0]}=?" if close else "the settings are the fields of fetcher.Settings"
    return SettingError(f"unknown setting {name!r}", hint=hint)


class SettingsOverrides(TypedDict, total=False):
    """The fields of `Settings` as keyword arguments (`Client(**overrides)`, `fetch_sync(url, **overrides)`).

    The same names and types as `Settings`, except where `Settings.build`
    converts: `allow_ports` and `redirect_schemes` take any iterable,
    `limits` a `Limits` or a dict of its fields.  tests/test_typing.py checks
    that the two stay the same.
    """

    timeout: float
    connect_timeout: float
    max_time: float | None
    speed_limit: int | None
    speed_time: float
    limits: Limits | Mapping[str, int]
    allow_ports: Iterable[int]
    unsafe_ports: bool
    redirect_schemes: Iterable[str]
    follow_redirects: bool
    max_redirects: int
    user: str | None
    password: str | None
    location_trusted: bool
    use_netrc: bool
    netrc_file: str | None
    anon_password: str | None
    ftp_account: str | None
    ftp_tls: bool
    starttls: bool
    cacert: str | None
    insecure: bool
    raw: bool
    max_size: int | None
    show_error_body: bool
    head: bool
    query: str | None
    form: dict[str, str]
    article_range: tuple[int, int] | None
    nntp_server: str | None
    max_hits: int
    wais_chunk: int
    gopher_strict: bool
    resolve_only: bool
    listing_facts: bool
    ftp_facts: bool
    remote_time: bool | None
    prospero_timeout: float
    prospero_retries: int
    interactive: bool
    proxy: str | None
    jobs: int
    per_host: int
    retries: int
    pipeline: bool
    retry_max_time: float
    limit_rate: int | None
    idle_timeout: float
    user_agent: str | None
    headers: tuple[tuple[str, str], ...]
    prompt: Prompt | None
    extra: dict[str, Any]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _strings(value: object) -> bool:
    return isinstance(value, str)


def _pair(value: object) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and all(isinstance(item, str) for item in value)


#: What a value of each type written in `Settings` looks like (the annotations are strings: no
#: typing.get_type_hints at start-up).  A field of a type not here fails tests/test_typing.py.
_KINDS: dict[str, Callable[[Any], bool]] = {
    "None": lambda value: value is None,
    "float": _number,
    "int": _whole,
    "bool": lambda value: isinstance(value, bool),
    "str": _strings,
    "Limits": lambda value: isinstance(value, Limits),
    "Prompt": callable,
    "frozenset[int]": lambda value: isinstance(value, frozenset) and all(_whole(item) for item in value),
    "frozenset[str]": lambda value: isinstance(value, frozenset) and all(_strings(item) for item in value),
    "dict[str, str]": lambda value: isinstance(value, dict) and all(_pair(item) for item in value.items()),
    "dict[str, Any]": lambda value: isinstance(value, dict) and all(_strings(key) for key in value),
    "tuple[int, int]": lambda value: isinstance(value, tuple) and len(value) == 2 and all(map(_whole, value)),
    "tuple[tuple[str, str], ...]": lambda value: isinstance(value, tuple) and all(map(_pair, value)),
}

_CHECKS: dict[str, tuple[str, Callable[[Any], bool]]] = {}


def _checks() -> dict[str, tuple[str, Callable[[Any], bool]]]:
    """Setting name -> (its type as written, a test of a value), made once from the fields of `Settings`."""
    if not _CHECKS:
        for item in dataclasses.fields(Settings):
            kind = str(item.type)
            tests = [_KINDS.get(part.strip()) for part in kind.split(" | ")]
            if None in tests:
                raise AssertionError(f"Settings.{item.name}: no run-time check for {kind}")  # a new field's type
            _CHECKS[item.name] = (kind, _any_of([test for test in tests if test is not None]))
    return _CHECKS


def _any_of(tests: list[Callable[[Any], bool]]) -> Callable[[Any], bool]:
    return lambda value: any(test(value) for test in tests)

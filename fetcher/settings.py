"""Every knob of a `Client`, in one place; the CLI maps its flags onto these."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .guard import DEFAULT_REDIRECT_SCHEMES, Policy


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
    #: (fetcher/lanes.py).  False: one request at a time per connection.
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
        settings = dataclasses.replace(base) if base is not None else cls()
        names = {f.name for f in dataclasses.fields(cls)}
        for name, value in overrides.items():
            if name not in names:
                raise TypeError(f"unknown setting {name!r}")
            if name in ("allow_ports", "redirect_schemes") and isinstance(value, Iterable):
                value = frozenset(value)
            if name == "limits" and isinstance(value, dict):
                value = DEFAULT_LIMITS.replace(**value)
            setattr(settings, name, value)
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

"""Every knob of a `Client`, in one place; the CLI maps its flags onto these."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .guard import DEFAULT_REDIRECT_SCHEMES, Policy

#: Ask the user something: (prompt, secret) -> answer, or None when nobody can answer.
Prompt = Callable[[str, bool], "str | None"]


@dataclass
class Settings:
    # Time limits, in seconds.  `timeout` bounds every wait for the network.
    timeout: float = 30.0
    connect_timeout: float = 15.0
    # The guard.
    allow_ports: frozenset[int] = frozenset()
    unsafe_ports: bool = False
    redirect_schemes: frozenset[str] = DEFAULT_REDIRECT_SCHEMES
    # Redirects (HTTP) and resolutions (Prospero).
    follow_redirects: bool = True
    max_redirects: int = 20
    # Credentials: -u USER[:PASSWORD], ~/.netrc, FTP anonymous password.
    user: str | None = None
    password: str | None = None
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
    # Protocol inputs the URL may lack.
    query: str | None = None
    form: dict[str, str] = field(default_factory=dict)
    article_range: tuple[int, int] | None = None
    nntp_server: str | None = None
    max_hits: int = 40
    wais_chunk: int = 10000
    gopher_strict: bool = False
    resolve_only: bool = False
    prospero_timeout: float = 4.0
    prospero_retries: int = 3
    interactive: bool = False
    proxy: str | None = None
    # Concurrency and pools.
    jobs: int = 8
    per_host: int = 2
    retries: int = 2
    retry_max_time: float = 60.0
    idle_timeout: float = 30.0
    user_agent: str | None = None
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

"""telnet: (RFC 1738 §3.8): an advisory naming the host and the suggested login.

The user and password of a telnet URL are advisory only, so by default
fetcher never connects.  `--interactive` runs a real TELNET session on the
terminal (see schemes/telnet_session.py).
"""

from __future__ import annotations

from fetcher.client import Session
from fetcher.resource import Advisory, Resource
from fetcher.url import URL, TelnetURL


class Handler:
    scheme = "telnet"
    default_port = 23

    async def open(self, url: URL, session: Session) -> Resource:
        assert isinstance(url, TelnetURL)
        if session.settings.interactive:
            from .telnet_session import run_interactive

            await run_interactive(url, session)
        port = "" if url.port == 23 else f" {url.port}"
        lines = [f"This is an interactive service. Connect with: telnet {url.host}{port}"]
        if url.user is not None:
            lines.append(f"Suggested login: {url.user}")
        if url.password is not None:
            lines.append(f"Suggested password: {url.password}")
        lines.append("(fetch --interactive opens the session here.)")
        return Resource(
            url,
            "advisory",
            advisory=Advisory(
                title=f"telnet service at {url.host}:{url.port}",
                text="\n".join(lines),
                fields={"host": url.host, "port": url.port, "user": url.user, "password": url.password},
            ),
        )

"""telnet: (RFC 1738 §3.8): an advisory naming the host and the suggested login.

The user and password of a telnet URL are advisory only, so by default
fetcher never connects.  `--interactive` (`Client(interactive=True)`) runs
a real TELNET session on the terminal (see `session`); what the user saw
there is the result, so the resource that comes back is an empty document
whose metadata says how the session ended.
"""

from __future__ import annotations

from fetcher.handler import Advisory, BaseHandler, Resource, Session
from fetcher.url import URL, TelnetURL


def advisory(url: TelnetURL) -> Advisory:
    port = "" if url.port == 23 else f" {url.port}"
    lines = [f"This is an interactive service. Connect with: telnet {url.host}{port}"]
    if url.user is not None:
        lines.append(f"Suggested login: {url.user}")
    if url.password is not None:
        lines.append(f"Suggested password: {url.password}")
    lines.append("(fetch --interactive opens the session here.)")
    return Advisory(
        title=f"telnet service at {url.host}:{url.port}",
        text="\n".join(lines),
        fields={"host": url.host, "port": url.port, "user": url.user, "password": url.password},
    )


class Handler(BaseHandler):
    scheme = "telnet"
    default_port = 23

    async def open(self, url: URL, session: Session) -> Resource:
        assert isinstance(url, TelnetURL)
        if not session.settings.interactive:
            return Resource(url, "advisory", advisory=advisory(url))
        from fetcher.schemes.telnet.session import run_interactive

        result = await run_interactive(url, session)
        return Resource(
            url,
            "document",
            size=0,
            advisory=advisory(url),
            metadata={"session": result.reason, "received": result.received, "sent": result.sent},
        )

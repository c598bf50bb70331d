"""Servers that try to lead `fetch -r` out of its tree: another port, another scheme, encoded dot segments.

The class (issue 29, item 13): a mirror's scope is its origin (scheme, host
and port) and the directory it started in.  A hostile site links to

- another port of the same host (`Recorder` or a second test server there
  notes every connection: -r must make none, robots.txt included);
- an `https:` port of the same host (a TLS handshake is a connection too;
  an `https:` link is never followed from `http:` without
  --follow-schemes, so nothing may dial it, not even for robots.txt);
- paths whose dot segments are percent-encoded in every spelling (`%2e%2e`,
  `%2E%2e`, `.%2e`, `..%2f`, `%2e%2e%5c`), which a server that decodes
  before resolving (`Decoding`) answers with what lies above the start
  directory.

`SECRET` is what lies above: no test may find it on disk.
"""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

import trio

from tests.servers.gopher import GopherServer, menu_line
from tests.servers.http_server import Exchange, HTTPTestServer, Received, Route, static

SECRET = b"what lies above the start directory\n"
#: Relative links whose dot segments are percent-encoded (or hide `..` behind an encoded separator).
ENCODED_CLIMBS = ("%2e%2e/secret.txt", "%2E%2e/secret.txt", ".%2e/secret.txt", "sub/%2e%2e/%2e%2e/secret.txt",
                  "..%2fsecret.txt", "%2e%2e%5csecret.txt")  # fmt: skip


class Recorder:
    """A TCP port that counts who connects, and hangs up: a server the mirror must never reach."""

    def __init__(self) -> None:
        self.port = 0
        self.connections = 0

    async def handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        await stream.aclose()


class Decoding(dict[str, Route]):
    """HTTP routes as a server that percent-decodes a path, backslashes and all, before resolving it."""

    def get(self, path: str, default: Route | None = None) -> Route | None:  # type: ignore[override]
        found = super().get(path)
        if found is not None:
            return found
        resolved = posixpath.normpath(unquote(path).replace("\\", "/"))
        return super().get(resolved, default)


def http_site(other_port: int, tls_port: int) -> HTTPTestServer:
    """A page at /pub/ linking to a file beside it, to other ports of 127.0.0.1, and above by encoded dots."""
    links = ["ok.txt", f"http://127.0.0.1:{other_port}/pub/x.txt", f"https://127.0.0.1:{tls_port}/pub/y.txt",
             *ENCODED_CLIMBS]  # fmt: skip
    page = "".join(f'<a href="{link}">{link}</a>\n' for link in links).encode()
    routes = Decoding({
        "/pub/": static(page, content_type="text/html"),
        "/pub/ok.txt": static(b"inside\n"),
        "/secret.txt": static(SECRET),
    })  # fmt: skip
    return HTTPTestServer(routes=routes)


def other_http() -> HTTPTestServer:
    """The second server, on another port: it serves /pub/x.txt to whoever asks (only --span-hosts may)."""
    server = HTTPTestServer()
    server.routes["/pub/x.txt"] = static(b"from another server\n")

    async def no_robots(request: Received, exchange: Exchange) -> None:
        await exchange.respond(404, b"none\n")

    server.routes["/robots.txt"] = no_robots
    return server


def gopher_site(other_port: int, tls_port: int) -> GopherServer:
    """A menu /pub with an item of its own, items on other ports of 127.0.0.1, and encoded climbs.

    Its routes answer the encoded selectors with `SECRET`, as a server that
    decodes selectors would.
    """
    server = GopherServer()

    def menu() -> bytes:
        here = {"host": "127.0.0.1", "port": server.port}
        other = {"host": "127.0.0.1", "port": other_port}
        lines = [
            menu_line("0", b"inside", b"/pub/a.txt", **here),
            menu_line("0", b"another server's file", b"/pub/x.txt", **other),
            menu_line("1", b"another server's menu", b"/pub", **other),
            menu_line("h", b"an https page", f"URL:https://127.0.0.1:{tls_port}/".encode(), **here),
            *(menu_line("0", b"climb", b"/pub/" + climb.encode(), **here) for climb in ENCODED_CLIMBS),
        ]
        return b"".join(lines) + b".\r\n"

    server.extra_routes = {b"/pub": lambda request: menu(), b"/pub/a.txt": b"inside\r\n"}
    for climb in ENCODED_CLIMBS:
        server.extra_routes[b"/pub/" + climb.encode()] = SECRET
    return server

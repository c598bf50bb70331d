"""A trio HTTP/1.1 test server that records every request byte and can misbehave.

Each route is an async function `(request, exchange)`: it sees the request
exactly as it arrived (raw head bytes, target still encoded) and answers
through `exchange`, which can send well-formed replies, raw garbage, half a
body, a reset, or nothing at all.  The server binds 127.0.0.1 port 0, keeps
connections alive unless a route closes them, and counts connections so
tests can assert keep-alive reuse.  It can also act as a forward proxy
(absolute-form requests are routed by their path; CONNECT opens a relay).
"""

from __future__ import annotations

import gzip
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import trio

Headers = list[tuple[str, str]]


@dataclass
class Received:
    """One request as the server got it."""

    raw: bytes
    method: str
    target: str
    headers: Headers
    connection: int

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    @property
    def path(self) -> str:
        target = self.target
        if "://" in target:
            target = "/" + target.split("://", 1)[1].partition("/")[2]
        return target.partition("?")[0]


class Exchange:
    """The reply side of one request."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        #: Set by a route that ended the connection (no further requests).
        self.closed = False

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def respond(
        self,
        status: int = 200,
        body: bytes = b"",
        headers: Iterable[tuple[str, str]] = (),
        *,
        reason: str | None = None,
        chunked: bool = False,
        close: bool = False,
        length: bool = True,
    ) -> None:
        """A well-formed reply; `length=False` without `chunked` means a close-delimited body."""
        lines = [f"HTTP/1.1 {status} {reason if reason is not None else REASONS.get(status, 'Whatever')}"]
        lines += [f"{name}: {value}" for name, value in headers]
        if chunked:
            lines.append("Transfer-Encoding: chunked")
        elif length:
            lines.append(f"Content-Length: {len(body)}")
        else:
            close = True
        if close:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        if chunked:
            payload = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in _pieces(body, 7000)) + b"0\r\n\r\n"
        else:
            payload = body
        await self.send(head + payload)
        if close:
            await self.close()

    async def close(self) -> None:
        self.closed = True
        await self.stream.aclose()

    async def reset(self) -> None:
        """Abort with a TCP RST (SO_LINGER 0), as a crashed server would."""
        self.closed = True
        sock = getattr(self.stream, "socket", None)
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await self.stream.aclose()


Route = Callable[[Received, Exchange], Awaitable[None]]

REASONS = {
    200: "OK",
    204: "No Content",
    206: "Partial Content",
    301: "Moved Permanently",
    302: "Found",
    303: "See Other",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    410: "Gone",
    416: "Range Not Satisfiable",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)] or []


async def loopback_listeners(tls: ssl.SSLContext | None) -> tuple[int, list[trio.abc.Listener[trio.abc.Stream]]]:
    """Listeners on a free port of 127.0.0.1 (TLS over them when `tls` is given), and that port."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port: int = listeners[0].socket.getsockname()[1]
    if tls is None:
        return port, list(listeners)
    return port, [trio.SSLListener(listener, tls, https_compatible=True) for listener in listeners]


@dataclass
class HTTPTestServer:
    """`await nursery.start(server.serve)`; then `server.url("/path")`."""

    tls: ssl.SSLContext | None = None
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[Received] = field(default_factory=list)
    connections: int = 0
    port: int = 0
    #: Every proxied CONNECT target ("host:port").
    tunnels: list[str] = field(default_factory=list)
    #: Requests that had already arrived when the reply before them was sent (pipelined).
    pipelined: int = 0

    def url(self, target: str = "/", *, scheme: str | None = None, host: str = "127.0.0.1") -> str:
        scheme = scheme or ("https" if self.tls is not None else "http")
        return f"{scheme}://{host}:{self.port}{target}"

    def route(self, path: str) -> Callable[[Route], Route]:
        def register(function: Route) -> Route:
            self.routes[path] = function
            return function

        return register

    def add(self, path: str, body: bytes, *, content_type: str = "text/plain", **options: object) -> None:
        """A static document at `path` (honours Range like a file server)."""
        self.routes[path] = static(body, content_type=content_type, **options)  # type: ignore[arg-type]

    async def serve(self, *, task_status: trio.TaskStatus[HTTPTestServer] = trio.TASK_STATUS_IGNORED) -> None:
        self.port, served = await loopback_listeners(self.tls)
        task_status.started(self)
        await trio.serve_listeners(self._handle, served)

    async def _handle(self, stream: trio.abc.Stream) -> None:
        number = self.connections
        self.connections += 1
        buffer = b""
        exchange = Exchange(stream)
        try:
            while not exchange.closed:
                if b"\r\n\r\n" in buffer:
                    self.pipelined += 1
                while b"\r\n\r\n" not in buffer:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                request = _parse(head + b"\r\n\r\n", number)
                self.requests.append(request)
                if request.method == "CONNECT":
                    await self._tunnel(request, exchange, buffer)
                    return
                route = self.routes.get(request.path)
                exact = self.routes.get(request.target)
                await (exact or route or not_found)(request, exchange)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError):
            pass
        finally:
            if not exchange.closed:
                with trio.move_on_after(1):
                    await stream.aclose()

    async def _tunnel(self, request: Received, exchange: Exchange, early: bytes) -> None:
        """CONNECT host:port: reply 200, then relay bytes both ways (a forward proxy's tunnel)."""
        self.tunnels.append(request.target)
        host, _, port = request.target.rpartition(":")
        try:
            upstream = await trio.open_tcp_stream(host.strip("[]"), int(port))
        except OSError:
            await exchange.respond(502, b"cannot connect\n", close=True)
            return
        await exchange.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if early:
            await upstream.send_all(early)

        async def pump(source: trio.abc.Stream, sink: trio.abc.Stream, scope: trio.CancelScope) -> None:
            try:
                while data := await source.receive_some(65536):
                    await sink.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            scope.cancel()

        async with upstream:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump, exchange.stream, upstream, nursery.cancel_scope)
                nursery.start_soon(pump, upstream, exchange.stream, nursery.cancel_scope)


def _parse(raw: bytes, connection: int) -> Received:
    lines = raw.decode("latin-1").split("\r\n")
    method, _, rest = lines[0].partition(" ")
    target = rest.rpartition(" ")[0]
    headers: Headers = []
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))
    return Received(raw=raw, method=method, target=target, headers=headers, connection=connection)


async def not_found(request: Received, exchange: Exchange) -> None:
    await exchange.respond(404, b"no such page: " + request.target.encode("latin-1") + b"\n")


def static(
    body: bytes,
    *,
    content_type: str = "text/plain",
    headers: Iterable[tuple[str, str]] = (),
    chunked: bool = False,
    ranges: bool = True,
    close: bool = False,
) -> Route:
    """A document that honours `Range: bytes=N-` (206, or 416 past the end)."""
    extra = [("Content-Type", content_type), *headers]

    async def route(request: Received, exchange: Exchange) -> None:
        wanted = request.header("range")
        if ranges and wanted and wanted.startswith("bytes=") and wanted.endswith("-"):
            start = int(wanted[6:-1])
            if start >= len(body):
                await exchange.respond(416, b"", [*extra, ("Content-Range", f"bytes */{len(body)}")], close=close)
                return
            span = f"bytes {start}-{len(body) - 1}/{len(body)}"
            await exchange.respond(206, body[start:], [*extra, ("Content-Range", span)], close=close)
            return
        await exchange.respond(200, body, extra, chunked=chunked, close=close)

    return route


def redirect(location: str, status: int = 302) -> Route:
    async def route(request: Received, exchange: Exchange) -> None:
        await exchange.respond(status, b"moved\n", [("Location", location)])

    return route


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)

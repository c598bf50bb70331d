"""A hostile HTTP server: one route per way a server can try to make a client grow, hang or lie.

Built on the in-repo trio test server (tests/servers/http_server.py), bound
to 127.0.0.1 on an ephemeral port.  Every endless route streams until the
client hangs up, with a safety stop at `SAFETY_BYTES` so a client that
fails to stop cannot fill the machine either.  The class each route stands
for, not the exact bytes, is what the tests check:

  /header-flood    header lines without end            (head bytes, h11's buffer cap)
  /header-count    a complete head of 1000 tiny fields (field count)
  /huge-header     one field value without end         (head bytes)
  /long-field      one complete 100 KB field           (line bytes)
  /interim-flood   103 Early Hints without end         (interim heads share the head budget)
  /bomb            gzip of zeros without end           (decoded ratio)
  /bomb2           gzip of gzip of zeros               (decoded ratio, stacked)
  /bomb-404        a 404 whose error page is a bomb    (error bodies are read to 64 KiB)
  /stacked         `Content-Encoding: gzip` x 3000     (number of encodings; once a RecursionError)
  /stacked-N       the same with N layers
  /drip-chunks     1-byte chunks without end           (an endless body, bounded by --max-size/-m)
  /chunk-ext       a chunk extension without end       (chunk-size line bytes)
  /trailer-flood   trailer lines without end           (trailer bytes)
  /trailer-huge    one trailer field without end       (trailer line bytes)
  /trailer-count   1000 complete trailer fields        (trailer field count)
  /reason-c1       404 whose reason phrase holds C1 CSI sequences (escaped in errors)
  /reason-esc      404 whose reason phrase holds raw ESC sequences (h11 lets them through)
  /header-c1       200 with a header value holding C1 controls (escaped in -v)
  /moved           302 to a URL with a password        (--no-location names it, masked)
  /target          the plain document /moved points to

`python -m tests.hostile.http_hostile` serves the routes until interrupted and
prints `PORT` on its first line (bench/hostile_rss.py starts it that way).
"""

from __future__ import annotations

import gzip
import sys
import zlib
from collections.abc import Callable

import trio

from tests.servers.http_server import Exchange, HTTPTestServer, Received

#: An endless route stops after this many bytes, hung up on or not.
SAFETY_BYTES = 512 * 1024 * 1024
#: Bytes handed to the socket per send by the endless routes.
BURST = 64 * 1024
TARGET_BODY = b"the redirect target\n"
SECRET = "s3cret-pw"
#: What a 1-byte chunk looks like on the wire.
ONE_BYTE_CHUNK = b"1\r\nx\r\n"


async def endless(exchange: Exchange, head: bytes, unit: bytes) -> None:
    """Send `head`, then `unit` repeated until the client hangs up (or SAFETY_BYTES)."""
    burst = unit * max(1, BURST // len(unit))
    await exchange.send(head)
    sent = len(head)
    while sent < SAFETY_BYTES:
        await exchange.send(burst)
        sent += len(burst)
    await exchange.close()


def zeros_gzip(layers: int) -> Callable[[], bytes]:
    """Each call: the next gzip output for 1 MiB more of endless zeros, gzipped `layers` times."""
    compressors = [zlib.compressobj(9, zlib.DEFLATED, 31) for _ in range(layers)]
    zeros = b"\0" * (1 << 20)

    def more() -> bytes:
        data = zeros
        for compressor in compressors:
            data = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
        return data

    return more


async def bomb(exchange: Exchange, layers: int, status: int = 200) -> None:
    codings = ", ".join(["gzip"] * layers)
    reason = "OK" if status == 200 else "Not Found"
    await exchange.send(
        f"HTTP/1.1 {status} {reason}\r\nContent-Encoding: {codings}\r\nConnection: close\r\n\r\n".encode()
    )
    more = zeros_gzip(layers)
    sent = 0
    pending = b""
    while sent < SAFETY_BYTES:
        pending += more()
        if len(pending) >= 4096:
            await exchange.send(pending)
            sent += len(pending)
            pending = b""
    await exchange.close()


def stacked_body(layers: int, payload: bytes = b"deep\n") -> bytes:
    data = payload
    for _ in range(layers):
        data = gzip.compress(data, compresslevel=0, mtime=0)
    return data


async def route(request: Received, exchange: Exchange) -> None:
    """Every hostile route, chosen by path."""
    path = request.path
    ok = b"HTTP/1.1 200 OK\r\n"
    chunked = ok + b"Transfer-Encoding: chunked\r\n\r\n"
    if path == "/header-flood":
        await endless(exchange, ok, b"X-Flood: 0123456789\r\n")
    elif path == "/header-count":
        fields = b"".join(b"X-%d: v\r\n" % n for n in range(1000))
        await exchange.send(ok + fields + b"Content-Length: 2\r\n\r\nok")
        await exchange.close()
    elif path == "/huge-header":
        await endless(exchange, ok + b"X-Huge: ", b"a")
    elif path == "/long-field":
        await exchange.send(ok + b"X-Long: " + b"b" * 100_000 + b"\r\nContent-Length: 2\r\n\r\nok")
        await exchange.close()
    elif path == "/interim-flood":
        await endless(exchange, b"", b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
    elif path == "/bomb":
        await bomb(exchange, 1)
    elif path == "/bomb2":
        await bomb(exchange, 2)
    elif path == "/bomb-404":
        await bomb(exchange, 1, status=404)
    elif path.startswith("/stacked"):
        layers = int(path.partition("-")[2] or 3000)
        body = stacked_body(layers)
        codings = ", ".join(["gzip"] * layers)
        await exchange.respond(200, body, [("Content-Encoding", codings)], close=True)
    elif path == "/drip-chunks":
        await endless(exchange, chunked, ONE_BYTE_CHUNK)
    elif path == "/chunk-ext":
        await endless(exchange, chunked + b"1;ext=", b"e")
    elif path == "/trailer-flood":
        await endless(exchange, chunked + b"2\r\nok\r\n0\r\n", b"X-Trailer: 0123456789\r\n")
    elif path == "/trailer-huge":
        await endless(exchange, chunked + b"2\r\nok\r\n0\r\nX-Huge: ", b"t")
    elif path == "/trailer-count":
        trailers = b"".join(b"X-T%d: v\r\n" % n for n in range(1000))
        await exchange.send(chunked + b"2\r\nok\r\n0\r\n" + trailers + b"\r\n")
        await exchange.close()
    elif path == "/reason-c1":
        await exchange.respond(404, b"gone\n", reason="Not \x9b31mFound\x9b0m \x9d0;pwned\x9c")
    elif path == "/reason-esc":
        await exchange.send(b"HTTP/1.1 404 \x1b[2J\x1b]0;pwned\x07\r\nContent-Length: 2\r\n\r\nno")
        await exchange.close()
    elif path == "/header-c1":
        await exchange.respond(200, b"ok\n", [("X-Evil", "\x9b2J\x9d0;pwned\x9c")])
    elif path == "/moved":
        host = request.header("host") or "127.0.0.1"
        await exchange.respond(302, b"moved\n", [("Location", f"http://user:{SECRET}@{host}/target")])
    elif path == "/target":
        await exchange.respond(200, TARGET_BODY)
    else:
        await exchange.respond(404, b"no such hostile route\n")


PATHS = [
    "/header-flood", "/header-count", "/huge-header", "/long-field", "/interim-flood", "/bomb", "/bomb2",
    "/bomb-404", "/stacked", "/drip-chunks", "/chunk-ext", "/trailer-flood", "/trailer-huge", "/trailer-count",
    "/reason-c1", "/reason-esc", "/header-c1", "/moved", "/target",
]  # fmt: skip


def hostile_server() -> HTTPTestServer:
    """The hostile routes on a fresh test server; `await nursery.start(server.serve)` starts it."""
    server = HTTPTestServer()
    for path in PATHS:
        server.routes[path] = route
    for layers in (10, 300):
        server.routes[f"/stacked-{layers}"] = route
    return server


async def main() -> None:
    server = hostile_server()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        print(server.port, flush=True)


if __name__ == "__main__":
    try:
        trio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)

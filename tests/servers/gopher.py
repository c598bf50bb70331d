"""A Gopher / Gopher+ server on trio for the tests, with the faults of issue 5.

It records the exact bytes of every request (the line and any ASK data
block), answers from a table of canned replies (a request line first, then
its selector), and can misbehave: reset mid-body, stall, send forever, split
writes, garbage, a 100 000-line menu, a 1 MiB menu line.  UMN gopherd is the
model for Gopher+ framing (gopher-plus.md §4.3); pygopherd's quirks
(double header, `+-2` menus without ".") are there too.

Run it alone for the benchmark: `python -m tests.servers.gopher --port N --items 2000`.
"""

from __future__ import annotations

import argparse
import socket
import ssl
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import trio

from tests.servers.common import serving as serving  # the tests import it from here

Ending = Literal["close", "reset", "stall", "endless"]
#: How a missing selector is answered, after real servers (see schemes/gopher/server_errors.py).
Missing = Literal["pygopherd", "geomyidae", "motsognir", "gophernicus"]


def missing_reply(style: Missing, selector: bytes) -> bytes:
    """The whole reply of a server of `style` to a selector it does not have."""
    name = selector.decode("latin-1")
    if style == "geomyidae":
        text = f"3Sorry, but the requested token '{name}' could not be found.\tErr\tlocalhost\t70\r\n.\r\n\r\n"
    elif style == "motsognir":
        text = (f"iThe server says:\t\tnull.host\t1\r\n3Error: the selected resource '{name}' doesn't exist!"
                "\tfake\tfake\t1\r\niGo back to the root.\t\tnull.host\t1\r\n.\r\n")  # fmt: skip
    elif style == "gophernicus":
        text = "Error: File or directory not found! (null)\r\n" + "_" * 67 + "\r\n   Gophered by Gophernicus\r\n"
    else:
        text = f"3'{name}' does not exist (no handler found)\t\terror.host\t1\r\n"
    return text.encode("latin-1")


@dataclass
class Reply:
    data: bytes = b""
    #: What happens after `data`: a clean close, a reset (RST), silence, or endless text.
    after: Ending = "close"
    #: Write `data` in pieces of this size (each its own send).
    chunk: int | None = None


@dataclass
class Request:
    #: The request line without its line end.
    line: bytes
    #: Every byte received, exactly (line, line end, data block).
    raw: bytes
    block: bytes | None = None

    @property
    def selector(self) -> bytes:
        return self.line.split(b"\t", 1)[0]


Route = bytes | Reply | Callable[[Request], "bytes | Reply"]

DOTS_RAW = b"first line\r\n.\r\n.hidden-looking line\r\n..two dots\r\nlast line\r\n"
DOTS_UMN = b"first line\r\n..\r\n.hidden-looking line\r\n..two dots\r\nlast line\r\n.\r\n"
DOTS_RFC = b"first line\r\n..\r\n..hidden-looking line\r\n...two dots\r\nlast line\r\n.\r\n"
BINARY = bytes(range(256)) * 64 + b"\r\n.\r\n" + bytes(range(255, -1, -1)) * 64
EVIL_DISPLAY = b"\x1b[2J\x1b]0;owned\x07Evil title"
ATTRIBUTES = (
    b"+INFO: 0Plus text\t/gp.txt\t{host}\t{port}\t+\r\n"
    b"+ADMIN:\r\n Admin: Test Admin <admin@example.invalid>\r\n"
    b" Mod-Date: Fri Nov 20 23:44:33 2026 <20261120234433>\r\n"
    b"+VIEWS:\r\n text/plain: <10k>\r\n application/postscript Es_ES: <45K>\r\n"
    b" text/plain En_US: <512b>\r\n application/pdf:\r\n"
    b"+ABSTRACT:\r\n A friendly greeting.\r\n This is the abstract.\r\n"
    b"+SMELL:\r\n roses\r\n"
)
FORM = (
    b"+INFO: 0A form\t/form\t{host}\t{port}\t?\r\n"
    b"+ASK:\r\n"
    b" Note: Please fill in the form\r\n"
    b" Ask: What is your name?\tAnonymous\r\n"
    b" AskP: Password?\r\n"
    b" AskL: Tell a story\r\n"
    b" Choose: Favourite colour?\tred\tgreen\tblue\r\n"
    b" Select: Subscribe?:1\r\n"
    b" AskF: Save as?\tresult.txt\r\n"
)


def menu_line(gtype: str, display: bytes, selector: bytes, host: str, port: int, plus: bytes = b"") -> bytes:
    line = gtype.encode() + display + b"\t" + selector + b"\t" + host.encode() + b"\t" + str(port).encode()
    return line + (b"\t" + plus if plus else b"") + b"\r\n"


def root_menu(host: str, port: int) -> bytes:
    item = partial(menu_line, host=host, port=port)
    return b"".join(
        [
            b"iWelcome to the test server.\t\tnull.host\t1\r\n",
            item("0", b"Hello text", b"/hello.txt"),
            item("1", b"A directory", b"/dir", plus=b"+"),
            item("7", b"Search", b"/search"),
            item("9", b"Binary", b"/binary.bin"),
            item("g", b"A GIF", b"/tiny.gif"),
            menu_line("h", b"Web link", b"URL:http://example.test/page", host, port),
            menu_line("8", b"Telnet login", b"guest", "telnet.example.test", 23),
            item("0", b"A form", b"/form", plus=b"?"),
            b"3Something went wrong\t\terror.host\t1\r\n",
            b"0Too few fields\t/short\r\n",
            b"0Bad port\t/badport\texample.test\t(NULL)\r\n",
            b"1Elsewhere\t/\tother.invalid\t70\r\n",
            b"0Redis attack\tSET x y\t127.0.0.1\t6379\r\n",
            b"0Option selector\t-n/tmp/x\t" + host.encode() + b"\t" + str(port).encode() + b"\r\n",
            b"0" + EVIL_DISPLAY + b"\t/evil\t" + host.encode() + b"\t" + str(port).encode() + b"\r\n",
            b"0Caf\xe9 (Latin-1)\t/cafe\t" + host.encode() + b"\t" + str(port).encode() + b"\r\n",
            b"iLF-only line follows\t\tnull.host\t1\n",
            item("0", b"UTF-8 \xc3\xb1ame", b"/utf8-\xc3\xb1ame.txt"),
            b".\r\n",
            b"0After the dot\t/ignored\tx\t70\r\n",
        ]
    )


_BIG_MENU: dict[tuple[str, int, int], bytes] = {}


def big_menu(host: str, port: int, lines: int = 100_000) -> bytes:
    key = (host, port, lines)
    if key not in _BIG_MENU:
        tail = f"\t{host}\t{port}\r\n".encode()
        _BIG_MENU[key] = b"".join(b"0Item %06d\t/items/%06d.txt" % (n, n) + tail for n in range(lines)) + b".\r\n"
    return _BIG_MENU[key]


def standard_routes(host: str, port: int) -> dict[bytes, Route]:
    where = {"host": host, "port": port}

    def fill(template: bytes) -> bytes:
        return template.replace(b"{host}", host.encode()).replace(b"{port}", b"%d" % port)

    item = partial(menu_line, host=host, port=port)
    small_menu = item("0", b"Hello text", b"/hello.txt", plus=b"+") + item("1", b"Sub", b"/dir/sub", plus=b"+")
    return {
        b"": root_menu(host, port),
        b"/": root_menu(host, port),
        b"/dir": small_menu + b".\r\n",
        b"/nodot": small_menu,
        b"/lf": small_menu.replace(b"\r\n", b"\n"),
        b"/big-menu": lambda _: big_menu(host, port),
        b"/long-line": small_menu + b"0" + b"x" * (1 << 20) + b"\t/x\th\t70\r\n" + small_menu + b".\r\n",
        b"/garbage": bytes(range(256)) * 8 + b"\x00\xff\r\n\t\t\t\r\n",
        b"/error3": b"3'/nope' does not exist (no handler found)\t\terror.host\t1\r\n",
        b"/hello.txt": b"Hello, world!\r\n",
        b"/about-errors.txt": b"Error: this text is about error messages.\r\nIt has more lines.\r\n",
        b"/menu-with-error": b"3Some items are missing\t\terror.host\t1\r\n" + small_menu + b".\r\n",
        b"/dots-raw": DOTS_RAW,
        b"/dots-umn": DOTS_UMN,
        b"/dots-rfc": DOTS_RFC,
        b"/empty.txt": b"",
        b"/binary.bin": BINARY,
        b"/tiny.gif": b"GIF89a\x01\x00\x01\x00",
        b"/evil": b"red \x1b[31malert\x1b[0m bell\x07\r\n",
        b"/reset": Reply(BINARY * 8, after="reset"),
        b"/stall": Reply(b"the first part, then silence\r\n", after="stall"),
        b"/endless": Reply(b"", after="endless"),
        b"/split": Reply(DOTS_UMN, chunk=1),
        b"/search\tfoo bar": b"iYou searched for: foo bar\tfake\t(NULL)\t0\r\n"
        + item("0", b"hit", b"/hello.txt")
        + b".\r\n",
        # -- Gopher+ ------------------------------------------------------------
        b"/gp.txt\t+": b"+14\r\nHello, world!\n",
        b"/gp-empty\t+": b"+0\r\n",
        b"/gp-short\t+": b"+100\r\nonly a few bytes",
        b"/gp-dot\t+": b"+-1\r\nline one\r\n..\r\n..x\r\n.\r\nafter the end\r\n",
        b"/gp-open\t+": b"+-1\r\nline one\r\n",
        b"/gp-two\t+": b"+-2\r\n" + BINARY,
        b"/gp-dir\t+": b"+-2\r\n" + small_menu,
        b"/gp-umn-dir\t+": b"+-1\r\n" + small_menu + b".\r\n",
        b"/gone\t+": b"--1\r\n1 Test Admin <admin@example.invalid>\r\nNo such item\r\n.\r\n",
        b"/busy\t+": b"--2\r\n2 Test Admin <admin@example.invalid>\r\nToo busy, try later\r\n",
        b"/moved\t+": _sized_error(b"3 Admin <admin@example.invalid>\r\n0New place\t/new\tnew.example.test\t70\r\n"),
        b"/strange\t+": b"--2\r\n9 Test Admin <a@b>\r\nSomething\tstrange \x1b[1m\r\n",
        b"/double\t+": b"+36\r\n--2\r\n1 Test Admin <admin@example.invalid>\r\nPermission denied\r\n",
        b"/nohdr\t+": b"Hello from a gopher0 server\r\n",
        b"/badhdr\t+": b"+abc\r\nnot a header\r\n",
        b"/gp.txt\t+application/postscript Es_ES": b"+5\r\n%!PS\n",
        b"/gp.txt\t!": b"+-1\r\n" + fill(ATTRIBUTES) + b".\r\n",
        b"/gp.txt\t!+ABSTRACT": b"+-2\r\n" + fill(ATTRIBUTES),
        b"/gp-dir\t$": b"+-2\r\n" + _groups(where),
        b"/search\tfoo bar\t+": b"+-2\r\n" + item("0", b"hit", b"/hello.txt", plus=b"+"),
        b"/s\t\t!": b"+-1\r\n+INFO: 7Index\t/s\t" + host.encode() + b"\t%d\t+\r\n.\r\n" % port,
        b"/form\t!+ASK": b"+-1\r\n" + fill(FORM) + b".\r\n",
        b"/form": b"A form; use a Gopher+ client.\r\n",
        b"/form\t+\t1": _form_reply,
        b"/f\t+\t1": _form_reply,
    }


def _sized_error(text: bytes) -> bytes:
    return b"-%d\r\n" % len(text) + text


def _groups(where: dict[str, object]) -> bytes:
    host, port = str(where["host"]).encode(), b"%d" % where["port"]  # type: ignore[str-bytes-safe]
    return (
        b"+INFO: 0Doc\t/gp-dir/doc.txt\t" + host + b"\t" + port + b"\t+\r\n"
        b"+ADMIN:\r\n Admin: A <a@b>\r\n Mod-Date: x <20240102030405>\r\n"
        b"+VIEWS:\r\n text/plain: <1k>\r\n"
        b"+ABSTRACT:\r\n First abstract line.\r\n"
        b"+INFO: 0Ask me\t/gp-dir/askme.txt\t" + host + b"\t" + port + b"\t+\r\n"
        b"+ASK:\r\n Ask: What is your name?\tAnonymous\r\n Choose: Favourite colour?\tred\tgreen\tblue\r\n"
    )


def _form_reply(request: Request) -> bytes:
    answers = (request.block or b"").split(b"\r\n")
    return b"+-1\r\nThanks: " + b"|".join(answers[1:-2]) + b"\r\n.\r\n"


class GopherServer:
    def __init__(self, routes: dict[bytes, Route] | None = None, *, tls: ssl.SSLContext | None = None,
                 host: str = "127.0.0.1", missing: Missing = "pygopherd", record: bool = True) -> None:  # fmt: skip
        self.extra_routes = routes or {}
        #: Keep every request in `requests` (tests read them); a bench's server, serving tens of
        #: thousands, keeps none: a growing list slowed its later replies (and the tools' figures).
        self.record = record
        self.missing = missing
        self.tls = tls
        self.host = host
        self.port = 0
        self.requests: list[Request] = []
        self._routes: dict[bytes, Route] | None = None

    @property
    def routes(self) -> dict[bytes, Route]:
        if self._routes is None:
            self._routes = {**standard_routes(self.host, self.port), **self.extra_routes}
        return self._routes

    @property
    def raw_requests(self) -> list[bytes]:
        return [request.raw for request in self.requests]

    def reply_for(self, request: Request) -> Reply:
        route = self.routes.get(request.line)
        if route is None:
            route = self.routes.get(request.selector)
        if route is None:
            route = missing_reply(self.missing, request.selector)
        if callable(route):
            route = route(request)
        return route if isinstance(route, Reply) else Reply(route)

    async def handle(self, stream: trio.abc.Stream) -> None:
        raw_stream = stream
        if self.tls is not None:
            stream = trio.SSLStream(stream, self.tls, server_side=True, https_compatible=True)
        try:
            request = await self._read_request(stream)
            if request is None:
                return
            if self.record:
                self.requests.append(request)
            await self._send(stream, raw_stream, self.reply_for(request))
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError):
            pass
        finally:
            with trio.move_on_after(1):
                try:
                    await stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass

    async def _read_request(self, stream: trio.abc.Stream) -> Request | None:
        received = b""
        while b"\n" not in received:
            data = await stream.receive_some(65536)
            if not data:
                return None
            received += data
            if len(received) > 1 << 20:
                return None
        line, _, rest = received.partition(b"\n")
        line = line.removesuffix(b"\r")
        if b"\t" not in line or line.split(b"\t")[-1] != b"1":
            return Request(line=line, raw=received)
        # A data block follows: "+-1" to a "." line, "+n" bytes, "+-2" to half-close.
        while True:
            if rest.startswith(b"+-1") and (rest.endswith(b"\n.\r\n") or rest.endswith(b"\n.\n")):
                break
            head, sep, body = rest.partition(b"\r\n")
            if sep and head[1:].isdigit() and len(body) >= int(head[1:]):
                break
            data = await stream.receive_some(65536)
            if not data:
                break
            rest += data
            received += data
        return Request(line=line, raw=received, block=rest)

    async def _send(self, stream: trio.abc.Stream, raw_stream: trio.abc.Stream, reply: Reply) -> None:
        data = reply.data
        size = reply.chunk or 65536
        for start in range(0, len(data), size):
            await stream.send_all(data[start : start + size])
        if reply.after == "reset":
            sock = getattr(raw_stream, "socket", None)
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()
        elif reply.after == "stall":
            await trio.sleep_forever()
        elif reply.after == "endless":
            line = b"all work and no play makes a dull server\r\n" * 256
            while True:
                await stream.send_all(line)


@dataclass
class Items:
    """`count` small text items /item/0000.txt ... for the benchmark."""

    count: int
    size: int = 2048
    bodies: dict[bytes, bytes] = field(default_factory=dict)

    def routes(self) -> dict[bytes, Route]:
        for number in range(self.count):
            line = b"item %05d " % number
            self.bodies[b"/item/%05d.txt" % number] = (line * (self.size // len(line) + 1))[: self.size - 2] + b"\r\n"
        return dict(self.bodies)


async def _serve_forever(port: int, items: int) -> None:
    server = GopherServer(Items(items).routes(), record=False)
    server.port = port
    await trio.serve_tcp(server.handle, port, host="127.0.0.1", backlog=1024)


def main() -> None:
    parser = argparse.ArgumentParser(description="the test Gopher server, standing alone")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--items", type=int, default=2000)
    args = parser.parse_args()
    trio.run(_serve_forever, args.port, args.items)


if __name__ == "__main__":
    main()

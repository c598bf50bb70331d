"""A hostile Gopher / Gopher+ server on loopback (trio): replies that never end, or that attack a terminal.

One server, one case per selector; each case streams until the client
hangs up, so a client without caps would grow without end:

- `/endless-menu`: plausible menu lines, forever;
- `/fat-menu`: menu lines of 250-byte high-bit names and selectors (each
  costs several times its size as text and URL), forever;
- `/endless-line`: one menu line that never ends;
- `/menu-of/N`, `/fat-menu-of/N`: the same menus, but N lines and a "." (a reply
  just under a cap, which the client keeps and renders whole);
- `/huge-dollar` (`\\t$`): one `+INFO`/`+ADMIN`/`+VIEWS` group after another, forever (`+-2`);
- `/huge-bang` (`\\t!`): one `+ABSTRACT` block whose lines never end (`+-1`, no ".");
- `/tiny-lines` (`\\t!`): empty attribute lines, forever (millions of objects for a naive parser);
- `/escape-attrs` (`\\t!`), `/escape-menu`, `/escape-text`: terminal escapes,
  OSC titles and bidi overrides in attributes, menu names and an error item;
- `/escape-lookalike`: a text that starts like an error message, with escapes (a warning).

Run alone for the RSS benchmark: `python -m tests.hostile.gopher_hostile --port N`.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

import trio

EVIL = b"\x1b]0;owned\x07\x1b[2J\xe2\x80\xae"
BATCH = 64 * 1024


def _line(gtype: bytes, name: bytes, selector: bytes, host: bytes, port: bytes) -> bytes:
    return gtype + name + b"\t" + selector + b"\t" + host + b"\t" + port + b"\r\n"


class HostileGopher:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        #: Every request line received.
        self.requests: list[bytes] = []
        self.cases: dict[bytes, Callable[[trio.abc.Stream], Awaitable[None]]] = {
            b"/endless-menu": self._endless_menu,
            b"/fat-menu": self._fat_menu,
            b"/endless-line": self._endless_line,
            b"/huge-dollar": self._huge_dollar,
            b"/huge-bang": self._huge_bang,
            b"/tiny-lines": self._tiny_lines,
            b"/escape-attrs": self._escape_attrs,
            b"/escape-menu": self._escape_menu,
            b"/escape-text": self._escape_text,
            b"/escape-lookalike": self._escape_lookalike,
        }

    @property
    def _where(self) -> tuple[bytes, bytes]:
        return self.host.encode(), b"%d" % self.port

    async def handle(self, stream: trio.abc.Stream) -> None:
        try:
            received = b""
            while b"\n" not in received and len(received) < 4096:
                data = await stream.receive_some(4096)
                if not data:
                    return
                received += data
            line = received.partition(b"\n")[0].rstrip(b"\r")
            self.requests.append(line)
            selector = line.split(b"\t", 1)[0]
            case = self.cases.get(selector)
            head, _, count = selector.rpartition(b"/")
            if case is None and head in (b"/menu-of", b"/fat-menu-of") and count.isdigit():
                await self._finite_menu(stream, fat=head == b"/fat-menu-of", count=int(count))
            elif case is None:
                await stream.send_all(b"3no such case\t\terror.host\t1\r\n")
            else:
                await case(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            with trio.move_on_after(1):
                await stream.aclose()

    async def _forever(self, stream: trio.abc.Stream, make: Callable[[int], bytes]) -> None:
        """Send make(0), make(1), ... in batches of about BATCH bytes until the client hangs up."""
        number = 0
        while True:
            batch = bytearray()
            while len(batch) < BATCH:
                batch += make(number)
                number += 1
            await stream.send_all(bytes(batch))

    def _plain_item(self, number: int) -> bytes:
        host, port = self._where
        return _line(b"0", b"Item %d" % number, b"/items/%d.txt" % number, host, port)

    def _fat_item(self, number: int) -> bytes:
        host, port = self._where
        high = bytes(range(0x80, 0x100)) * 2
        return _line(b"0", high[:250], b"/" + high[:242] + b"%08d" % number, host, port)

    async def _endless_menu(self, stream: trio.abc.Stream) -> None:
        await self._forever(stream, self._plain_item)

    async def _fat_menu(self, stream: trio.abc.Stream) -> None:
        await self._forever(stream, self._fat_item)

    async def _finite_menu(self, stream: trio.abc.Stream, *, fat: bool, count: int) -> None:
        make = self._fat_item if fat else self._plain_item
        for start in range(0, count, 1000):
            await stream.send_all(b"".join(make(n) for n in range(start, min(start + 1000, count))))
        await stream.send_all(b".\r\n")

    async def _endless_line(self, stream: trio.abc.Stream) -> None:
        await stream.send_all(b"0")
        await self._forever(stream, lambda n: b"x" * 4096)

    async def _huge_dollar(self, stream: trio.abc.Stream) -> None:
        host, port = self._where
        await stream.send_all(b"+-2\r\n")
        await self._forever(stream, lambda n: (
            b"+INFO: 0Doc %d\t/doc/%d.txt\t%s\t%s\t+\r\n" % (n, n, host, port)
            + b"+ADMIN:\r\n Admin: A <a@b>\r\n Mod-Date: x <20240102030405>\r\n+VIEWS:\r\n text/plain: <1k>\r\n"
        ))  # fmt: skip

    async def _huge_bang(self, stream: trio.abc.Stream) -> None:
        host, port = self._where
        await stream.send_all(b"+-1\r\n+INFO: 0Big\t/big\t%s\t%s\t+\r\n+ABSTRACT:\r\n" % (host, port))
        await self._forever(stream, lambda n: b" abstract line %d, and it goes on\r\n" % n)

    async def _tiny_lines(self, stream: trio.abc.Stream) -> None:
        await stream.send_all(b"+-2\r\n+INFO: 0Tiny\t/t\th\t70\t+\r\n+X:\r\n")
        await self._forever(stream, lambda n: b"\n" * 4096)

    async def _escape_attrs(self, stream: trio.abc.Stream) -> None:
        host, port = self._where
        await stream.send_all(
            b"+-1\r\n+INFO: 0" + EVIL + b"Evil\t/e\t" + host + b"\t" + port + b"\t+\r\n"
            b"+ADMIN:\r\n Admin: " + EVIL + b" <a@b>\r\n"
            b"+ABSTRACT:\r\n \x1b[31mred\x1b[0m " + EVIL + b"\r\n"
            b"+" + EVIL + b":\r\n " + EVIL + b"\r\n.\r\n"
        )

    async def _escape_menu(self, stream: trio.abc.Stream) -> None:
        host, port = self._where
        await stream.send_all(
            _line(b"i", EVIL + b" info", b"", b"null.host", b"1")
            + _line(b"0", EVIL + b"Evil name", b"/evil\x1b[2J", host, port)
            + _line(b"1", b"Elsewhere " + EVIL, b"/", b"other.invalid", b"70")
            + b".\r\n"
        )

    async def _escape_text(self, stream: trio.abc.Stream) -> None:
        await stream.send_all(b"3" + EVIL + b" does not exist\t\terror.host\t1\r\n")

    async def _escape_lookalike(self, stream: trio.abc.Stream) -> None:
        await stream.send_all(b"Error: " + EVIL + b" but this is a document\r\nwith more lines\r\n")


async def _serve_forever(port: int) -> None:
    server = HostileGopher()
    server.port = port
    await trio.serve_tcp(server.handle, port, host="127.0.0.1")


def main() -> None:
    parser = argparse.ArgumentParser(description="the hostile Gopher server, standing alone")
    parser.add_argument("--port", type=int, required=True)
    trio.run(_serve_forever, parser.parse_args().port)


if __name__ == "__main__":
    main()

"""A hostile NNTP server on loopback (trio): blocks that never end, lines that never end, escapes.

It greets and answers like a reader server, except where its `case` says:

- `endless-caps`: CAPABILITIES is followed by capability lines, forever;
- `endless-list`: LIST ACTIVE sends group lines, forever;
- `endless-over`: the group claims a billion articles and OVER sends overview lines, forever;
- `fat-over`: OVER sends lines of 2 KiB subjects (each held as text), forever;
- `endless-head`: no OVER/XOVER, and HEAD sends header lines, forever;
- `big-list`, `big-over`: finite LIST ACTIVE and OVER replies of `count`
  lines (a reply just under a cap, which the client keeps and renders whole);
- `endless-line`: the greeting is one line that never ends;
- `escape-caps`: capabilities, group names and subjects carry terminal
  escapes, OSC titles and bidi overrides (a finite, well-formed reply).

Every command line received is recorded in `commands`.  Run alone for
the RSS benchmark: `python -m tests.hostile.nntp_hostile --port N --case C`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import trio

EVIL = b"\x1b]0;owned\x07\x1b[2J\xe2\x80\xae"
BATCH = 64 * 1024
CASES = ("endless-caps", "endless-list", "endless-over", "fat-over", "endless-head", "endless-line", "escape-caps",
         "big-list", "big-over")  # fmt: skip


class HostileNntp:
    def __init__(self, case: str, count: int = 100_000) -> None:
        if case not in CASES:
            raise ValueError(f"unknown case {case!r} (known: {', '.join(CASES)})")
        self.case = case
        self.count = count
        self.port = 0
        self.commands: list[str] = []

    async def handle(self, stream: trio.abc.Stream) -> None:
        try:
            await self._converse(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            with trio.move_on_after(1):
                await stream.aclose()

    async def _finite(self, stream: trio.abc.Stream, make: Callable[[int], bytes]) -> None:
        for start in range(0, self.count, 1000):
            await stream.send_all(b"".join(make(n) for n in range(start, min(start + 1000, self.count))))
        await stream.send_all(b".\r\n")

    async def _forever(self, stream: trio.abc.Stream, make: Callable[[int], bytes]) -> None:
        number = 0
        while True:
            batch = bytearray()
            while len(batch) < BATCH:
                batch += make(number)
                number += 1
            await stream.send_all(bytes(batch))

    async def _converse(self, stream: trio.abc.Stream) -> None:
        case = self.case
        if case == "endless-line":
            await stream.send_all(b"200 ")
            await self._forever(stream, lambda n: b"welcome " * 512)
        await stream.send_all(b"200 hostile news server ready\r\n")
        buffer = b""
        while True:
            while b"\n" not in buffer:
                data = await stream.receive_some(4096)
                if not data:
                    return
                buffer += data
            raw, _, buffer = buffer.partition(b"\n")
            line = raw.rstrip(b"\r").decode("utf-8", "surrogateescape")
            self.commands.append(line)
            words = line.split()
            verb = words[0].upper() if words else ""
            if verb == "QUIT":
                await stream.send_all(b"205 bye\r\n")
                return
            await self._answer(stream, verb, words[1:])

    async def _answer(self, stream: trio.abc.Stream, verb: str, args: list[str]) -> None:
        case = self.case
        if verb == "MODE":
            await stream.send_all(b"200 reader mode\r\n")
        elif verb == "CAPABILITIES":
            await stream.send_all(b"101 capabilities follow\r\nVERSION 2\r\nREADER\r\n")
            if case == "endless-caps":
                await self._forever(stream, lambda n: b"X-%d\r\n" % n)
            extra = b"X-" + EVIL + b"EVIL " + EVIL + b"\r\n" if case == "escape-caps" else b""
            over = b"" if case == "endless-head" else b"OVER\r\n"
            await stream.send_all(b"LIST ACTIVE\r\n" + over + extra + b".\r\n")
        elif verb == "LIST":
            await stream.send_all(b"215 list follows\r\n")
            if case == "endless-list":
                await self._forever(stream, lambda n: b"hostile.group.%d 0000000010 0000000001 y\r\n" % n)
            if case == "big-list":
                await self._finite(stream, lambda n: b"comp.hostile.group.number.%d 0000000010 0000000001 y\r\n" % n)
                return
            name = b"evil." + EVIL + b"group" if case == "escape-caps" else b"calm.group"
            await stream.send_all(name + b" 10 1 y\r\n.\r\n")
        elif verb == "GROUP" and args:
            await stream.send_all(f"211 1000000000 1 1000000000 {args[0]}\r\n".encode())
        elif verb in ("OVER", "XOVER"):
            await self._overview(stream, verb)
        elif verb == "HEAD" and args:
            await stream.send_all(f"221 {args[0]} <h@x> head follows\r\n".encode())
            if case == "endless-head":
                await self._forever(stream, lambda n: b"X-Header-%d: and its value\r\n" % n)
            await stream.send_all(b"Subject: calm\r\n.\r\n")
        else:
            await stream.send_all(b"500 what?\r\n")

    async def _overview(self, stream: trio.abc.Stream, verb: str) -> None:
        case = self.case
        if case == "endless-head":
            await stream.send_all(b"500 no overview here\r\n")
            return
        await stream.send_all(b"224 overview follows\r\n")
        if case == "endless-over":
            await self._forever(stream, lambda n: b"%d\tSubject %d\tA <a@b>\tSat, 21 Nov 2026 00:00:00 +0000"
                                                  b"\t<%d@x>\t\t100\t3\r\n" % (n + 1, n, n))  # fmt: skip
        if case == "big-over":
            row = b"%d\tSubject of article %d\tA Sender <a@example.test>\tSat, 21 Nov 2026 00:00:00 +0000\t<%d@x.test>"
            await self._finite(stream, lambda n: row % (n + 1, n, n) + b"\t<r@example.test>\t1000\t30\r\n")
            return
        if case == "fat-over":
            subject = b"s" * 2048
            await self._forever(stream, lambda n: b"%d\t%s %d\tA <a@b>\tdate\t<%d@x>\t\t100\t3\r\n"
                                                  % (n + 1, subject, n, n))  # fmt: skip
        subject = b"Subject " + EVIL if case == "escape-caps" else b"calm"
        await stream.send_all(b"999999999\t" + subject + b"\tA <a@b>\tdate\t<1@x>\t\t100\t3\r\n.\r\n")


async def _serve_forever(port: int, case: str, count: int) -> None:
    server = HostileNntp(case, count)
    server.port = port
    await trio.serve_tcp(server.handle, port, host="127.0.0.1")


def main() -> None:
    parser = argparse.ArgumentParser(description="the hostile NNTP server, standing alone")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--case", choices=CASES, required=True)
    parser.add_argument("--count", type=int, default=100_000, help="lines of the big-* replies")
    args = parser.parse_args()
    trio.run(_serve_forever, args.port, args.case, args.count)


if __name__ == "__main__":
    main()

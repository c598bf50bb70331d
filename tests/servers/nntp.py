"""A small NNTP server on trio for the tests, with the faults of issue 6.

It speaks enough of RFC 3977/4643 for a reader (MODE READER, CAPABILITIES,
GROUP, ARTICLE, HEAD, OVER/XOVER, LIST [ACTIVE], AUTHINFO USER/PASS,
STARTTLS, QUIT), records every command line it receives, and can misbehave
on request: split the terminating "." line across writes, drop or stall in
the middle of an article, refuse OVER/XOVER/CAPABILITIES/LIST ACTIVE, greet
with an error, or reply with garbage.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import trio

from tests.servers.common import serving as serving  # the tests import it from here


@dataclass
class Article:
    number: int
    message_id: str
    #: The article as it should reach the user: "\n" line ends, not dot-stuffed.
    text: bytes

    @property
    def body(self) -> bytes:
        return self.text.split(b"\n\n", 1)[1] if b"\n\n" in self.text else b""

    @property
    def head(self) -> bytes:
        return self.text.split(b"\n\n", 1)[0] + b"\n"

    def header(self, name: str) -> bytes:
        for line in self.head.split(b"\n"):
            key, _, value = line.partition(b":")
            if key.lower() == name.lower().encode():
                return value.strip()
        return b""


@dataclass
class Group:
    name: str
    articles: list[Article]
    needs_auth: bool = False
    status: str = "y"

    @property
    def numbers(self) -> list[int]:
        return sorted(article.number for article in self.articles)


@dataclass
class Faults:
    greeting: bytes = b"200 test news server ready (posting ok)"
    split_terminator: bool = False
    drop_mid_article: bool = False
    stall_mid_article: bool = False
    stall_after_greeting: bool = False
    no_capabilities: bool = False
    mode_reader_refused: bool = False
    no_over: bool = False
    no_xover: bool = False
    no_list_active: bool = False
    garbage_reply_to: str | None = None
    #: Answer this command with a 200 KiB status line.
    oversized_reply_to: str | None = None
    #: Send replies in pieces of this many bytes, each its own write.
    write_size: int | None = None
    offer_starttls: bool = False
    #: Close the connection after this many commands (a server's idle limit).
    close_after: int | None = None
    #: More CAPABILITIES lines, sent as they are (terminal escapes, oddities).
    extra_capabilities: tuple[bytes, ...] = ()


def article(number: int, message_id: str, subject: str, body: bytes, *, sender: str = "Tester <t@example.test>",
            extra_headers: bytes = b"") -> Article:  # fmt: skip
    head = (
        f"From: {sender}\nNewsgroups: test.group\nSubject: {subject}\n"
        f"Date: Sat, 21 Nov 2026 0{number % 10}:00:00 +0000\nMessage-ID: <{message_id}>\n"
    ).encode()
    return Article(number, message_id, head + extra_headers + b"\n" + body)


def wire(text: bytes) -> bytes:
    """Text with "\\n" line ends -> a dot-stuffed CRLF data block with its terminator."""
    lines = text.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = bytearray()
    for line in lines:
        if line.startswith(b"."):
            out += b"."
        out += line + b"\r\n"
    return bytes(out) + b".\r\n"


class NntpServer:
    def __init__(
        self,
        groups: list[Group],
        *,
        faults: Faults | None = None,
        users: dict[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
        starttls: ssl.SSLContext | None = None,
    ) -> None:
        self.groups = {group.name: group for group in groups}
        self.faults = faults or Faults()
        self.users = users if users is not None else {"reader": "s3cret"}
        self.tls = tls
        self.starttls = starttls
        #: Every command line received, per connection, in order.
        self.sessions: list[list[str]] = []
        self.port = 0

    @property
    def commands(self) -> list[str]:
        return [line for session in self.sessions for line in session]

    def find(self, message_id: str) -> Article | None:
        for group in self.groups.values():
            for item in group.articles:
                if item.message_id == message_id:
                    return item
        return None

    async def handle(self, stream: trio.abc.Stream) -> None:
        log: list[str] = []
        self.sessions.append(log)
        try:
            if self.tls is not None:
                stream = trio.SSLStream(stream, self.tls, server_side=True)
                await stream.do_handshake()
            await Conversation(self, stream, log).run()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError):
            pass
        finally:
            with trio.move_on_after(1, shield=True):
                await stream.aclose()


class _Closed(Exception):
    pass


class Conversation:
    def __init__(self, server: NntpServer, stream: trio.abc.Stream, log: list[str]) -> None:
        self.server = server
        self.faults = server.faults
        self.stream = stream
        self.log = log
        self.buffer = bytearray()
        self.group: Group | None = None
        self.user: str | None = None
        self.authenticated = False

    async def send(self, data: bytes) -> None:
        size = self.faults.write_size
        if size is None:
            await self.stream.send_all(data)
            return
        for start in range(0, len(data), size):
            await self.stream.send_all(data[start : start + size])
            await trio.sleep(0)

    async def reply(self, line: str | bytes) -> None:
        await self.send((line.encode() if isinstance(line, str) else line) + b"\r\n")

    async def read_line(self) -> bytes | None:
        while b"\n" not in self.buffer:
            data = await self.stream.receive_some(4096)
            if not data:
                return None
            self.buffer += data
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        return line.rstrip(b"\r")

    async def run(self) -> None:
        await self.reply(self.faults.greeting)
        if self.faults.stall_after_greeting:
            await trio.sleep_forever()
        if not self.faults.greeting.startswith(b"20"):
            return
        while True:
            raw = await self.read_line()
            if raw is None:
                return
            line = raw.decode("utf-8", "surrogateescape")
            self.log.append(line)
            if self.faults.close_after is not None and len(self.log) > self.faults.close_after:
                return
            words = line.split()
            verb = words[0].upper() if words else ""
            if self.faults.oversized_reply_to == verb:
                await self.reply(b"211 " + b"9" * 200_000)
                continue
            if self.faults.garbage_reply_to == verb:
                await self.reply(b"hello? \x1b[31m this is not nntp")
                continue
            try:
                if not await self.dispatch(verb, words[1:]):
                    return
            except _Closed:
                return

    def readable(self, group: Group) -> bool:
        return not group.needs_auth or self.authenticated

    async def dispatch(self, verb: str, args: list[str]) -> bool:
        faults = self.faults
        if verb == "QUIT":
            await self.reply("205 bye")
            return False
        if verb == "MODE" and args[:1] == ["READER"]:
            await self.reply("502 no reader mode here" if faults.mode_reader_refused else "200 reader mode")
        elif verb == "CAPABILITIES":
            if faults.no_capabilities:
                await self.reply("500 what?")
                return True
            caps = ["VERSION 2", "READER", "LIST ACTIVE NEWSGROUPS"]
            if not faults.no_over:
                caps.append("OVER")
            if not self.authenticated:
                caps.append("AUTHINFO USER")
            if faults.offer_starttls and not isinstance(self.stream, trio.SSLStream):
                caps.append("STARTTLS")
            await self.reply("101 capabilities follow")
            await self.send(wire(b"\n".join([cap.encode() for cap in caps] + list(faults.extra_capabilities)) + b"\n"))
        elif verb == "STARTTLS":
            if self.server.starttls is None or isinstance(self.stream, trio.SSLStream):
                await self.reply("580 cannot start TLS")
                return True
            await self.reply("382 go ahead")
            tls = trio.SSLStream(self.stream, self.server.starttls, server_side=True)
            await tls.do_handshake()
            self.stream = tls
        elif verb == "AUTHINFO" and len(args) == 2 and args[0].upper() == "USER":
            self.user = args[1]
            await self.reply("381 password please")
        elif verb == "AUTHINFO" and len(args) == 2 and args[0].upper() == "PASS":
            if self.user is not None and self.server.users.get(self.user) == args[1]:
                self.authenticated = True
                await self.reply("281 welcome")
            else:
                await self.reply("481 authentication failed")
        elif verb == "GROUP" and len(args) == 1:
            group = self.server.groups.get(args[0])
            if group is None:
                await self.reply(f"411 no such group {args[0]}")
            elif not self.readable(group):
                await self.reply("480 authentication required")
            else:
                self.group = group
                numbers = group.numbers
                first, last = (numbers[0], numbers[-1]) if numbers else (1, 0)
                await self.reply(f"211 {len(numbers)} {first} {last} {group.name}")
        elif verb in ("ARTICLE", "HEAD") and len(args) == 1:
            await self.article(verb, args[0])
        elif verb in ("OVER", "XOVER"):
            if (verb == "OVER" and faults.no_over) or (verb == "XOVER" and faults.no_xover):
                await self.reply("500 unknown command")
                return True
            await self.overview(args)
        elif verb == "LIST":
            if args and args[0].upper() == "ACTIVE" and faults.no_list_active:
                await self.reply("501 syntax error")
                return True
            await self.reply("215 list of newsgroups follows")
            lines = []
            for group in self.server.groups.values():
                if not self.readable(group):
                    continue
                numbers = group.numbers or [0]
                lines.append(f"{group.name} {max(numbers):010d} {min(numbers) or 1:010d} {group.status}")
            await self.send(wire(("\n".join(lines) + "\n").encode() if lines else b""))
        else:
            await self.reply("500 unknown command")
        return True

    async def article(self, verb: str, which: str) -> None:
        if which.startswith("<"):
            found = self.server.find(which[1:-1])
            if found is None:
                await self.reply("430 no such article")
                return
            number = 0
        else:
            if self.group is None:
                await self.reply("412 no newsgroup selected")
                return
            found = next((a for a in self.group.articles if str(a.number) == which), None)
            if found is None:
                await self.reply(f"423 no article {which}")
                return
            number = found.number
        if verb == "HEAD":
            await self.reply(f"221 {number} <{found.message_id}> head")
            await self.send(wire(found.head))
            return
        await self.reply(f"220 {number} <{found.message_id}> article")
        data = wire(found.text)
        faults = self.faults
        if faults.drop_mid_article or faults.stall_mid_article:
            await self.send(data[: len(data) // 2])
            if faults.stall_mid_article:
                await trio.sleep_forever()
            raise _Closed
        if faults.split_terminator:
            body, end = data[:-3], data[-3:]
            await self.send(body + end[:1])
            await trio.sleep(0.05)
            await self.send(end[1:2])
            await trio.sleep(0.05)
            await self.send(end[2:])
            return
        await self.send(data)

    async def overview(self, args: list[str]) -> None:
        if self.group is None:
            await self.reply("412 no newsgroup selected")
            return
        low, _, high = (args[0] if args else "").partition("-")
        first = int(low) if low.isdigit() else 0
        last = int(high) if high.isdigit() else first
        rows = [a for a in self.group.articles if first <= a.number <= last]
        if not rows:
            await self.reply("423 no articles in that range")
            return
        await self.reply("224 overview follows")
        lines = []
        for item in sorted(rows, key=lambda a: a.number):
            fields = [str(item.number).encode()] + [
                item.header(name) for name in ("Subject", "From", "Date", "Message-ID", "References")
            ]
            # :bytes is the article on the wire; :lines counts its body (RFC 3977 8.3.2).
            fields += [str(len(wire(item.text)) - 3).encode(), str(item.body.count(b"\n")).encode()]
            lines.append(b"\t".join(fields))
        await self.send(wire(b"\n".join(lines) + b"\n"))

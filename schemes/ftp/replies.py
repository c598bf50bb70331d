"""FTP replies and command lines as pure functions over bytes (RFC 959 §4.2).

Nothing here touches a socket, so the whole codec is fuzzed with hypothesis:
any bytes fed to `ReplyReader` give replies or a `BadReply`, never another
exception and never an unbounded buffer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from fetcher.errors import AuthError, FetchError, NotFound, ProtocolError, TransientError
from fetcher.url import to_bytes

#: A reply longer than this is hostile or broken, not informative.
MAX_REPLY_LINES = 500
MAX_REPLY_BYTES = 64 * 1024

# Control characters a reply may not carry (TAB is tolerated: it cannot
# move a terminal's cursor anywhere surprising and some banners use it).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_FIRST_LINE = re.compile(r"([1-5][0-9][0-9])([ -]|$)")
_PASV = re.compile(r"(\d{1,3}),(\d{1,3}),(\d{1,3}),(\d{1,3}),(\d{1,3}),(\d{1,3})")
_MDTM = re.compile(r"(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(?:\.\d+)?")


class BadReply(ProtocolError):
    """The server sent something that is not an acceptable FTP reply (exit 7)."""


@dataclass(frozen=True)
class Reply:
    """One complete reply: its code and every line as received (without CRLF)."""

    code: int
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        """The human part: the lines without the code prefix, joined by spaces."""
        parts = [self.lines[0][4:]]
        if len(self.lines) > 1:
            parts.extend(line[4:] if line[:3] == self.lines[0][:3] else line for line in self.lines[1:])
        return " ".join(part.strip() for part in parts if part.strip())

    @property
    def summary(self) -> str:
        """The first line, shortened for error messages."""
        line = self.lines[0]
        return line if len(line) <= 160 else line[:157] + "..."

    @property
    def preliminary(self) -> bool:
        return 100 <= self.code < 200

    @property
    def ok(self) -> bool:
        return 200 <= self.code < 300

    @property
    def intermediate(self) -> bool:
        return 300 <= self.code < 400


class ReplyReader:
    """Assembles replies from lines, as the state machine of RFC 959 §4.2.

    `feed(line)` returns a `Reply` when `line` completes one, else None.
    A multi-line reply starts with "xyz-" and ends with a line that starts
    with the same code followed by a space (or nothing).
    """

    def __init__(self) -> None:
        self._code: str | None = None
        self._lines: list[str] = []
        self._size = 0

    @property
    def pending(self) -> bool:
        """True in the middle of a multi-line reply."""
        return self._code is not None

    def feed(self, raw: bytes) -> Reply | None:
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        line = raw.decode("utf-8", "surrogateescape")
        if _CONTROL.search(line):
            self._reset()
            raise BadReply(
                "the server sent a reply containing control characters",
                hint="the server is broken or hostile; nothing it said was shown",
            )
        self._size += len(raw)
        if self._code is None:
            match = _FIRST_LINE.match(line)
            if match is None:
                self._reset()
                shown = line if len(line) <= 60 else line[:57] + "..."
                raise BadReply(f"the server sent a line that is not an FTP reply: {shown!r}")
            if match.group(2) != "-":
                return Reply(int(match.group(1)), (line,))
            self._code = match.group(1)
            self._lines = [line]
            return None
        self._lines.append(line)
        if len(self._lines) > MAX_REPLY_LINES or self._size > MAX_REPLY_BYTES:
            self._reset()
            raise BadReply(f"the server sent a reply of more than {MAX_REPLY_LINES} lines or {MAX_REPLY_BYTES} bytes")
        if line.startswith(self._code) and (len(line) == 3 or line[3] == " "):
            reply = Reply(int(self._code), tuple(self._lines))
            self._reset()
            return reply
        return None

    def _reset(self) -> None:
        self._code = None
        self._lines = []
        self._size = 0


def parse_replies(data: bytes) -> list[Reply]:
    """Every complete reply in `data` (a trailing partial line is ignored)."""
    reader = ReplyReader()
    replies = []
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        reply = reader.feed(line)
        if reply is not None:
            replies.append(reply)
    return replies


# -- command lines ---------------------------------------------------------


def command_line(verb: str, argument: str | None = None) -> bytes:
    """`VERB` or `VERB argument` as wire bytes (CRLF is added by the line-writer).

    `argument=""` gives "VERB " with an empty argument, which is what
    RFC 1738 §3.2.2 asks for an empty <cwd> segment; `None` gives no argument.
    The line-writer refuses CR, LF and NUL in the result.
    """
    if argument is None:
        return verb.encode("ascii")
    return verb.encode("ascii") + b" " + to_bytes(argument)


# -- reply contents ------------------------------------------------------------


def parse_pwd(reply: Reply) -> str | None:
    """The directory of a `257 "dir" ...` reply ("" doubled inside), or None if absent."""
    if reply.code != 257:
        return None
    text = reply.lines[0][4:]
    start = text.find('"')
    if start < 0:
        return None
    chars = []
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == '"':
            if text[index + 1 : index + 2] == '"':
                chars.append('"')
                index += 2
                continue
            path = "".join(chars)
            return path or None
        chars.append(char)
        index += 1
    return None


def parse_epsv(reply: Reply) -> int:
    """The port of `229 Entering Extended Passive Mode (|||port|)` (RFC 2428)."""
    text = reply.lines[0]
    start = text.find("(")
    end = text.find(")", start + 1)
    inner = text[start + 1 : end] if start >= 0 and end > start else ""
    if len(inner) >= 5:
        delimiter = inner[0]
        fields = inner.split(delimiter)
        port = fields[3] if len(fields) == 5 and fields[1] == fields[2] == fields[4] == "" else ""
        if port.isascii() and port.isdigit() and 0 < int(port) < 65536:
            return int(port)
    raise BadReply(f"cannot find a port in the EPSV reply {reply.summary!r}")


def parse_pasv(reply: Reply) -> tuple[str, int]:
    """The address and port a `227 ... (h1,h2,h3,h4,p1,p2)` reply names."""
    match = _PASV.search(reply.lines[0])
    if match is not None:
        numbers = [int(group) for group in match.groups()]
        if all(number <= 255 for number in numbers):
            port = numbers[4] * 256 + numbers[5]
            if port > 0:
                return ".".join(str(number) for number in numbers[:4]), port
    raise BadReply(f"cannot find an address in the PASV reply {reply.summary!r}")


def parse_size(reply: Reply) -> int | None:
    """The byte count of a `213 n` reply to SIZE (RFC 3659), or None."""
    if reply.code != 213:
        return None
    text = reply.lines[0][4:].strip()
    if text.isascii() and text.isdigit() and len(text) <= 19:
        return int(text)
    return None


def parse_mdtm(reply: Reply) -> datetime | None:
    """The time of a `213 YYYYMMDDHHMMSS[.sss]` reply to MDTM (UTC, RFC 3659), or None."""
    if reply.code != 213:
        return None
    match = _MDTM.fullmatch(reply.lines[0][4:].strip())
    if match is None:
        return None
    try:
        year, month, day, hour, minute, second = (int(group) for group in match.groups())
        return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None


# -- reply codes to errors -----------------------------------------------------


def error_for(reply: Reply, doing: str, *, hint: str | None = None) -> FetchError:
    """The exception (and so the exit code of DESIGN.md) for an unwanted reply.

    530/532 are login refusals (exit 5), 550 says the file or directory is
    not there or not readable (exit 6), every 4xx says "try again later"
    (transient, retried by bulk runs), anything else is a protocol error (7).
    """
    message = f"{doing}: the server answered {reply.summary!r}"
    if reply.code in (530, 532):
        return AuthError(message, hint=hint or "check the user name and password (-u, ~/.netrc or the URL)")
    if reply.code == 550:
        return NotFound(message, hint=hint or "check the path; names on FTP servers are usually case-sensitive")
    if 400 <= reply.code < 500:
        return TransientError(message, hint=hint or "the server refused for now; try again later")
    return ProtocolError(message, hint=hint)

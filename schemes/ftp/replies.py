"""FTP replies and command lines as pure functions over bytes (RFC 959 §4.2).

Nothing here touches a socket, so the whole codec is fuzzed with hypothesis:
any bytes fed to `ReplyReader` give replies, a `BadReply` or a
`LimitExceeded`, never another exception and never an unbounded buffer.

Strict only where it must be: the text of a reply is information for a
human and may hold anything (decorated banners carry colour codes); it is
kept as data and escaped whenever it is shown.  The fields fetcher acts on
(the PASV numbers, the EPSV port, SIZE, MDTM, the 257 path) are parsed
strictly and refused with a `BadReply` (exit 7) when they are not exactly
what the RFCs describe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from fetcher.errors import AuthError, FetchError, LimitExceeded, NotFound, ProtocolError, TransientError
from fetcher.handler import DEFAULT_LIMITS
from fetcher.text import escape
from fetcher.url import to_bytes

# Characters that no field fetcher acts on may hold (C0, DEL, C1).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_FIRST_LINE = re.compile(r"([1-5][0-9][0-9])([ -]|$)")
_PASV = re.compile(r"(?<![0-9])([0-9]{1,3}),([0-9]{1,3}),([0-9]{1,3}),([0-9]{1,3}),([0-9]{1,3}),([0-9]{1,3})(?![0-9])")
_MDTM = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})(?:\.[0-9]{1,9})?")


class BadReply(ProtocolError):
    """The server sent something that is not an acceptable FTP reply (exit 7)."""


def shorten(text: str, size: int = 160) -> str:
    """`text` escaped for a terminal and cut to about `size` characters."""
    text = text if len(text) <= size else text[: size - 3] + "..."
    return escape(text)


@dataclass(frozen=True)
class Reply:
    """One complete reply: its code and its lines as received (without CRLF).

    The lines are data, not yet escaped.  `omitted` counts the middle lines
    of a long multi-line reply that were counted but not kept (see
    `ReplyReader`).
    """

    code: int
    lines: tuple[str, ...]
    omitted: int = 0

    @property
    def text(self) -> str:
        """The human part: the lines without the code prefix, joined by spaces (not escaped)."""
        parts = [self.lines[0][4:]]
        if len(self.lines) > 1:
            parts.extend(line[4:] if line[:3] == self.lines[0][:3] else line for line in self.lines[1:])
        return " ".join(part.strip() for part in parts if part.strip())

    @property
    def summary(self) -> str:
        """The first line, escaped and shortened for messages."""
        return shorten(self.lines[0])

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

    Caps (`fetcher.settings.Limits`): a line longer than `line_bytes` and a
    reply of more than `max_lines` lines raise `LimitExceeded`.  Memory
    stays small whatever the caps: of a multi-line reply only the first
    lines up to `line_bytes` in all and the last line are kept (nothing
    fetcher acts on lives in the middle of one); the rest are counted.
    """

    def __init__(
        self, *, max_lines: int = DEFAULT_LIMITS.reply_lines, line_bytes: int = DEFAULT_LIMITS.line_bytes
    ) -> None:
        self.max_lines = max_lines
        self.line_bytes = line_bytes
        self._code: str | None = None
        self._lines: list[str] = []
        self._count = 0
        self._kept = 0
        self._omitted = 0

    @property
    def pending(self) -> bool:
        """True in the middle of a multi-line reply."""
        return self._code is not None

    def feed(self, raw: bytes) -> Reply | None:
        if raw.endswith(b"\n"):
            raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
        if len(raw) > self.line_bytes:
            self._reset()
            raise LimitExceeded("bytes in one FTP reply line", self.line_bytes, "line_bytes")
        line = raw.decode("utf-8", "surrogateescape")
        if self._code is None:
            match = _FIRST_LINE.match(line)
            if match is None:
                self._reset()
                raise BadReply(f'the server sent a line that is not an FTP reply: "{shorten(line, 60)}"')
            if match.group(2) != "-":
                return Reply(int(match.group(1)), (line,))
            self._code = match.group(1)
            self._lines = [line]
            self._count = 1
            self._kept = len(raw)
            return None
        self._count += 1
        if self._count > self.max_lines:
            self._reset()
            raise LimitExceeded("lines in one FTP reply", self.max_lines, "reply_lines")
        if line.startswith(self._code) and (len(line) == 3 or line[3] == " "):
            reply = Reply(int(self._code), (*self._lines, line), self._omitted)
            self._reset()
            return reply
        if self._kept + len(raw) <= self.line_bytes:
            self._lines.append(line)
            self._kept += len(raw)
        else:
            self._omitted += 1
        return None

    def _reset(self) -> None:
        self._code = None
        self._lines = []
        self._count = 0
        self._kept = 0
        self._omitted = 0


def parse_replies(
    data: bytes, *, max_lines: int = DEFAULT_LIMITS.reply_lines, line_bytes: int = DEFAULT_LIMITS.line_bytes
) -> list[Reply]:
    """Every complete reply in `data`, lines ending at LF as on the wire (a trailing partial line is ignored)."""
    reader = ReplyReader(max_lines=max_lines, line_bytes=line_bytes)
    replies = []
    lines = data.split(b"\n")
    for line in lines[:-1]:
        reply = reader.feed(line + b"\n")
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
    """The directory of a `257 "dir" ...` reply ("" doubled inside), or None if absent.

    The path is sent back later (CWD to return home), so it is strict: a
    quoted path holding a control character is refused (`BadReply`).
    """
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
            if _CONTROL.search(path):
                raise BadReply(f'the 257 reply names a directory with control characters: "{reply.summary}"')
            return path or None
        chars.append(char)
        index += 1
    return None


def parse_epsv(reply: Reply) -> int:
    """The port of `229 Entering Extended Passive Mode (|||port|)` (RFC 2428 §3).

    The delimiter is one printable ASCII character, the port 1-65535 in
    ASCII digits; anything else is refused.
    """
    text = reply.lines[0]
    start = text.find("(")
    end = text.find(")", start + 1)
    inner = text[start + 1 : end] if start >= 0 and end > start else ""
    if len(inner) >= 5 and "!" <= inner[0] <= "~":
        delimiter = inner[0]
        fields = inner.split(delimiter)
        port = fields[3] if len(fields) == 5 and fields[1] == fields[2] == fields[4] == "" else ""
        if port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536:
            return int(port)
    raise BadReply(f'cannot find a port in the EPSV reply "{reply.summary}"')


def parse_pasv(reply: Reply) -> tuple[str, int]:
    """The address and port a `227 ... (h1,h2,h3,h4,p1,p2)` reply names.

    Six ASCII decimal numbers 0-255 not run into other digits, the port not 0.
    """
    match = _PASV.search(reply.lines[0])
    if match is not None:
        numbers = [int(group) for group in match.groups()]
        if all(number <= 255 for number in numbers):
            port = numbers[4] * 256 + numbers[5]
            if port > 0:
                return ".".join(str(number) for number in numbers[:4]), port
    raise BadReply(f'cannot find an address in the PASV reply "{reply.summary}"')


_ANNOUNCED = re.compile(r"\((\d{1,19}) bytes?\)")


def announced_size(reply: Reply) -> int | None:
    """The byte count a 150 reply announces ("... (4096 bytes)"), as vsftpd, ProFTPD and others do."""
    if reply.code != 150:
        return None
    found = _ANNOUNCED.search(reply.lines[-1])
    return int(found.group(1)) if found else None


def parse_size(reply: Reply) -> int | None:
    """The byte count of a `213 n` reply to SIZE (RFC 3659 §4), or None for a refusal.

    A 213 whose value is not a plain decimal number is refused: the size
    decides when a transfer is complete.
    """
    if reply.code != 213:
        return None
    text = reply.lines[0][4:].strip(" ")
    if text.isascii() and text.isdigit() and len(text) <= 19:
        return int(text)
    raise BadReply(f'the SIZE reply holds no byte count: "{reply.summary}"')


def parse_mdtm(reply: Reply) -> datetime | None:
    """The time of a `213 YYYYMMDDHHMMSS[.sss]` reply to MDTM (UTC, RFC 3659 §3), or None for a refusal.

    A 213 whose value is not such a time is refused: it would be stamped on the saved file.
    """
    if reply.code != 213:
        return None
    match = _MDTM.fullmatch(reply.lines[0][4:].strip(" "))
    if match is not None:
        try:
            year, month, day, hour, minute, second = (int(group) for group in match.groups())
            return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:
            pass
    raise BadReply(f'the MDTM reply holds no valid time: "{reply.summary}"')


# -- reply codes to errors -----------------------------------------------------


def error_for(reply: Reply, doing: str, *, hint: str | None = None) -> FetchError:
    """The exception (and so the exit code) for an unwanted reply.

    530/532 are login refusals (exit 5), 550 says the file or directory is
    not there or not readable (exit 6), every 4xx says "try again later"
    (transient, retried by bulk runs), anything else is a protocol error (7).
    """
    message = f'{doing}: the server answered "{reply.summary}"'
    if reply.code in (530, 532):
        return AuthError(message, hint=hint or "check the user name and password (-u, ~/.netrc or the URL)")
    if reply.code == 550:
        return NotFound(message, hint=hint or "check the path; names on FTP servers are usually case-sensitive")
    if 400 <= reply.code < 500:
        return TransientError(message, hint=hint or "the server refused for now; try again later")
    return ProtocolError(message, hint=hint)

"""NNTP on the wire, without I/O: status lines, commands, multi-line blocks.

Everything here is a pure function or a small state machine over bytes
(RFC 977, RFC 3977, RFC 4643), so it is tested and fuzzed without sockets;
`fetcher.schemes.nntp.client` only moves bytes between these and a connection.
"""

from __future__ import annotations

from dataclasses import dataclass

from fetcher.errors import AuthError, FetchError, LimitExceeded, NotFound, ProtocolError, TransientError
from fetcher.handler import DEFAULT_LIMITS, Limits
from fetcher.text import escape

#: Status codes followed by a multi-line data block (RFC 3977 §3.2 and the
#: command descriptions; 282 is XGTITLE of RFC 2980).
MULTILINE = frozenset({100, 101, 215, 220, 221, 222, 224, 225, 230, 231, 282})

#: Longest server text kept in an error message.
_SHOWN = 200


class BadReply(ProtocolError):
    """The server sent bytes that are not an NNTP reply at all."""


@dataclass(frozen=True)
class Reply:
    """One status line: the three-digit code and the text after it (decoded, trimmed)."""

    code: int
    text: str

    @property
    def multiline(self) -> bool:
        return self.code in MULTILINE

    @property
    def ok(self) -> bool:
        return 100 <= self.code < 400

    def __str__(self) -> str:
        return f"{self.code} {self.text}".rstrip()


def decode(raw: bytes) -> str:
    """Server text as str: UTF-8 where valid (RFC 3977 §3.1), Latin-1 for the old servers that are not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def parse_status(line: bytes) -> Reply:
    """Parse `NNN text CRLF`; anything else raises BadReply (exit 7)."""
    stripped = line.rstrip(b"\r\n")
    code = stripped[:3]
    if len(code) != 3 or not code.isdigit() or code[:1] not in b"12345":
        shown = decode(stripped[:60])
        raise BadReply(
            f"the server sent {shown!r} where an NNTP status line was expected",
            hint="is this really an NNTP server? check the host and port",
        )
    if len(stripped) > 3 and stripped[3:4] not in (b" ", b"\t"):
        raise BadReply(f"malformed NNTP status line {decode(stripped[:60])!r}")
    return Reply(int(code), decode(stripped[4:]).strip())


def command(verb: str, *arguments: str) -> str:
    """One command line (without CRLF).

    Arguments come from URLs and settings; NNTP separates them by spaces, so
    an argument holding a space, a control character or nothing at all
    would change the command and is refused.  `Connection.send_line`
    refuses CR, LF and NUL once more on the way out.
    """
    for argument in arguments:
        if not argument or any(ch == " " or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in argument):
            raise ProtocolError(
                f"refusing to send {verb} with the argument {argument!r}",
                hint="newsgroup names and message-ids hold no white space or control characters",
            )
    return " ".join((verb, *arguments))


def message_id_argument(message_id: str) -> str:
    """`<id>` for ARTICLE; the URL carries the id without its angle brackets."""
    if not message_id or "<" in message_id or ">" in message_id:
        raise ProtocolError(
            f"{message_id!r} is not a message-id",
            hint="write news:local-part@domain, without angle brackets inside",
        )
    return f"<{message_id}>"


# -- multi-line blocks ------------------------------------------------------


def unstuff_line(line: bytes) -> bytes | None:
    """One line of a multi-line block, without its line end; None for the terminating ".".

    RFC 3977 §3.1.1: the server doubles a leading "." on every data line,
    so one leading "." is removed; a line that is just "." ends the block.
    """
    body = line[:-2] if line.endswith(b"\r\n") else line.rstrip(b"\n")
    if body == b".":
        return None
    if body.startswith(b"."):
        return body[1:]
    return body


class BodyDecoder:
    """Turn the data block of ARTICLE/BODY/HEAD into the article's bytes, chunk by chunk.

    It removes the dot-stuffing, recognises the terminating "." line even
    when it arrives split across reads, and turns CRLF line ends into "\\n"
    unless `raw` (which keeps the article's CRLF wire form; the transport's
    dot-stuffing and terminator are removed either way).  It never holds
    more than three undecided bytes, so one enormous line streams as well
    as many short ones.  After `done`, `leftover` holds bytes the server
    sent past the terminator (a well-behaved server sends none).
    """

    def __init__(self, *, raw: bool = False) -> None:
        self.raw = raw
        self.done = False
        self.leftover = b""
        self._pending = b""
        self._at_line_start = True

    def feed(self, data: bytes) -> bytes:
        """The decoded bytes that `data` completes (possibly b"")."""
        if self.done:
            self.leftover += data
            return b""
        buffer = self._pending + data
        self._pending = b""
        out = bytearray()
        position = 0
        size = len(buffer)
        while position < size:
            if self._at_line_start:
                if buffer[position] == 0x2E:  # "."
                    if position + 1 >= size:
                        break
                    following = buffer[position + 1]
                    if following == 0x0A:
                        self._finish(buffer[position + 2 :])
                        return bytes(out)
                    if following == 0x0D:
                        if position + 2 >= size:
                            break
                        if buffer[position + 2] == 0x0A:
                            self._finish(buffer[position + 3 :])
                            return bytes(out)
                    position += 1  # drop the stuffed dot
                self._at_line_start = False
            newline = buffer.find(b"\n", position)
            if newline < 0:
                end = size - 1 if not self.raw and buffer.endswith(b"\r") else size
                out += buffer[position:end]
                position = end
                break
            # Copy every following line up to the next one that starts with a dot.
            dotted = buffer.find(b"\n.", newline)
            stop = dotted + 1 if dotted >= 0 else buffer.rfind(b"\n") + 1
            stretch = buffer[position:stop]
            out += stretch if self.raw else stretch.replace(b"\r\n", b"\n")
            position = stop
            self._at_line_start = True
        self._pending = buffer[position:]
        return bytes(out)

    def _finish(self, rest: bytes) -> None:
        self.done = True
        self.leftover = rest

    def eof_error(self, received: int) -> ProtocolError:
        """The error for a stream that ended before the terminating "." line."""
        return ProtocolError(
            f"the server closed the connection after {received} bytes of the article, before its end",
            hint="the article is incomplete; try again",
        )


@dataclass
class BlockLimit:
    """Caps on one multi-line block: its lines and its bytes, each named after its `Limits` field.

    `count` is called once per line as it arrives, so nothing past a cap is
    ever kept: an endless LIST or CAPABILITIES ends with LimitExceeded (exit 7).
    """

    what: str
    max_lines: int
    lines_name: str
    max_bytes: int
    bytes_name: str
    lines: int = 0
    size: int = 0

    def count(self, line: bytes) -> None:
        self.lines += 1
        self.size += len(line)
        if self.lines > self.max_lines:
            raise LimitExceeded(f"lines in {self.what}", self.max_lines, self.lines_name)
        if self.size > self.max_bytes:
            raise LimitExceeded(f"bytes in {self.what}", self.max_bytes, self.bytes_name)

    @classmethod
    def reply(cls, what: str, limits: Limits) -> BlockLimit:
        """A reply read whole (CAPABILITIES, an article head): reply_lines lines, header_bytes bytes."""
        return cls(what, limits.reply_lines, "reply_lines", limits.header_bytes, "header_bytes")

    @classmethod
    def listing(cls, what: str, limits: Limits) -> BlockLimit:
        """A listing (LIST, OVER/XOVER): listing_entries lines, listing_bytes bytes."""
        return cls(what, limits.listing_entries, "listing_entries", limits.listing_bytes, "listing_bytes")


def parse_capabilities(lines: list[bytes], limits: Limits = DEFAULT_LIMITS) -> dict[str, tuple[str, ...]]:
    """CAPABILITIES block (RFC 3977 §5.2): label (upper case) -> arguments.

    At most `limits.reply_lines` lines and `limits.header_bytes` bytes (LimitExceeded past them).
    """
    cap = BlockLimit.reply("the CAPABILITIES reply", limits)
    capabilities: dict[str, tuple[str, ...]] = {}
    for line in lines:
        cap.count(line)
        words = decode(line).split()
        if words:
            capabilities[words[0].upper()] = tuple(words[1:])
    return capabilities


def capability_summary(capabilities: dict[str, tuple[str, ...]], limit: int = 400) -> str:
    """The labels for the -v trace, escaped (server text is data) and cut short."""
    text = escape(" ".join(sorted(capabilities)))
    return text if len(text) <= limit else text[:limit] + "..."


# -- single-line replies with arguments -------------------------------------


@dataclass(frozen=True)
class GroupStatus:
    """211 count first last group (RFC 3977 §6.1.1)."""

    count: int
    first: int
    last: int
    name: str


def parse_group(reply: Reply) -> GroupStatus:
    words = reply.text.split()
    try:
        count, first, last = (int(word) for word in words[:3])
    except ValueError:
        count = first = last = -1
    if len(words) < 3 or min(count, first, last) < 0:
        raise BadReply(f"malformed GROUP reply {str(reply)[:_SHOWN]!r}")
    return GroupStatus(count, first, last, words[3] if len(words) > 3 else "")


@dataclass(frozen=True)
class ArticleStatus:
    """22x n <message-id> (RFC 3977 §6.2); n is 0 when asked by message-id."""

    number: int
    message_id: str


def parse_article_status(reply: Reply) -> ArticleStatus:
    words = reply.text.split()
    number = int(words[0]) if words and words[0].isdigit() else 0
    message_id = ""
    if len(words) > 1 and words[1].startswith("<") and words[1].endswith(">"):
        message_id = words[1][1:-1]
    return ArticleStatus(number, message_id)


# -- reply codes to errors ----------------------------------------------------


def error_for(reply: Reply, doing: str) -> FetchError:
    """The exception (and so the exit code) for a refusal while `doing` something.

    411/423/430 are "not found" (6); 480/481/502 are login refusals (5); 400
    ("service not available") is worth retrying; anything else is a protocol
    error (7).
    """
    said = str(reply)[:_SHOWN]
    message = f"{doing}: the server replied {said!r}"
    code = reply.code
    if code == 411:
        return NotFound(f"{doing}: no such newsgroup ({said})", hint="news:* lists the groups the server carries")
    if code == 423:
        return NotFound(f"{doing}: no such article ({said})", hint="list the group to see which numbers exist")
    if code == 430:
        return NotFound(f"{doing}: no article with that message-id ({said})")
    if code == 480:
        return AuthError(message, hint="the server wants a login: give -u USER[:PASSWORD] or a ~/.netrc entry")
    if code == 481:
        return AuthError(message, hint="check the user name and password (-u or ~/.netrc)")
    if code == 502:
        return AuthError(message, hint="the server does not give this client access; a login (-u) may help")
    if code == 400:
        return TransientError(message, hint="the server is unavailable right now; try again later")
    if code == 483:
        return ProtocolError(message, hint="the server wants an encrypted connection: use nntps:// or --starttls")
    return ProtocolError(message)

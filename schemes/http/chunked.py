"""The chunked transfer coding (RFC 9112 §7.1) read without h11, sans-IO, with caps.

h11 frames a chunked body one event per chunk, at some ten microseconds
each: a server sending endless 1-byte chunks holds a client to a few dozen
KB/s of CPU-bound work.  This reader walks a whole receive buffer in one
loop and hands back the data it held as one piece, so tiny chunks cost
about what their bytes cost.  It accepts what h11 accepts in chunk-size
lines and chunk ends (tests/hostile/test_http_fuzz.py checks it against h11
on any input) and is lenient only in trailers, which fetcher discards.

Caps (arguments, from `fetcher.settings.Limits`): a chunk-size line (with
its extensions) is at most `line_bytes`; a trailer block at most
`header_bytes` in all, `header_count` fields, `line_bytes` a line.
"""

from __future__ import annotations

import re

from fetcher.errors import LimitExceeded, ProtocolError
from fetcher.text import escape

#: chunk-size [ ";" chunk-ext ] OWS CRLF, as h11 reads it (1 to 20 hex digits).
_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,20})(?:;[^\n]*)?[ \t]*\r\n")
_BLANK_LINE = re.compile(rb"\n\r?\n")

SIZE, DATA, DATA_END, TRAILER, DONE = range(5)


class ChunkedReader:
    """Feed received bytes; get the body bytes they held. `done` once the last chunk and trailers are in.

    A chunk-size line or trailer block cut between reads waits in a
    bytearray that grows by appending and is searched only where new bytes
    arrived, so a server dripping one byte per read costs linear time.
    """

    def __init__(self, where: str, *, line_bytes: int, header_bytes: int, header_count: int) -> None:
        self.where = where
        self.line_bytes = line_bytes
        self.header_bytes = header_bytes
        self.header_count = header_count
        self._state = SIZE
        self._remaining = 0
        #: An incomplete chunk end ("\r" of "\r\n").
        self._pending = b""
        #: An incomplete chunk-size line or trailer block, with what is known of it.
        self._line = bytearray()
        self._newlines = 0
        self._line_start = 0
        #: Bytes received after the end of the body (none from a well-behaved server).
        self.leftover = b""

    @property
    def done(self) -> bool:
        return self._state == DONE

    def feed(self, data: bytes) -> bytes:
        """The body bytes in `data` (b"" when it held only framing)."""
        if self._state == DONE:
            self.leftover += data
            return b""
        if self._line:
            resumed = self._resume(data)
            if resumed is None:
                return b""
            data = resumed
        elif self._pending:
            data = self._pending + data
            self._pending = b""
        return self._parse(data)

    def end_of_stream(self) -> None:
        """The server closed the connection: fine only after the last chunk."""
        if self._state != DONE:
            raise ProtocolError(
                f"{self.where} closed the connection before the end of the body",
                hint="run again with -C/--continue to resume",
            )

    # -- the walk over one buffer ---------------------------------------------------------------

    def _parse(self, buf: bytes) -> bytes:
        size = len(buf)
        pos = 0
        out: list[bytes] = []
        while pos < size:
            state = self._state
            if state == DATA:
                take = min(self._remaining, size - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._remaining -= take
                if self._remaining == 0:
                    self._state = DATA_END
            elif state == SIZE:
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    self._hold(buf, pos)
                    break
                if end + 2 - pos > self.line_bytes:
                    raise self._too_long()
                match = _SIZE_LINE.fullmatch(buf, pos, end + 2)
                if match is None:
                    raise self._malformed("chunk-size line", buf[pos:end])
                self._remaining = int(match.group(1), 16)
                self._state = DATA if self._remaining else TRAILER
                pos = end + 2
            elif state == DATA_END:
                got = buf[pos : pos + 2]
                if got != b"\r\n"[: len(got)]:
                    raise self._malformed("chunk end", got)
                if len(got) < 2:
                    self._pending = got
                    break
                pos += 2
                self._state = SIZE
            elif state == TRAILER:
                block_end = self._trailer_end(buf, pos)
                if block_end is None:
                    self._hold(buf, pos)
                    break
                self._check_trailers(buf[pos:block_end])
                self._state = DONE
                pos = block_end
            else:  # DONE: what follows is not part of this body
                self.leftover = buf[pos:]
                break
        if len(out) == 1:
            return out[0]
        return b"".join(out)

    @staticmethod
    def _trailer_end(buf: bytes | bytearray, pos: int) -> int | None:
        """Where the trailer block starting at `pos` ends (after its blank line), or None."""
        if buf.startswith(b"\r\n", pos):
            return pos + 2
        if buf.startswith(b"\n", pos):
            return pos + 1
        match = _BLANK_LINE.search(buf, pos)
        return None if match is None else match.end()

    def _check_trailers(self, block: bytes) -> None:
        """A complete trailer block against the caps (its closing blank line does not count)."""
        match = _BLANK_LINE.search(block)
        self._newlines = 0
        self._line_start = 0
        if match is not None:
            self._scan(block[: match.start() + 1], 0)

    # -- a line cut between reads -------------------------------------------------------------------

    def _hold(self, buf: bytes, pos: int) -> None:
        """Keep the incomplete line or block that starts at `pos`, after checking it against the caps."""
        self._line = bytearray(buf[pos:])
        self._newlines = 0
        self._line_start = 0
        self._check_held(0)

    def _resume(self, data: bytes) -> bytes | None:
        """Append to the held line; the whole buffer to parse once it is complete, else None."""
        line = self._line
        start = max(0, len(line) - 2)
        scanned = len(line)
        line += data
        if self._state == SIZE:
            complete = line.find(b"\r\n", start) >= 0
        else:
            complete = line.startswith((b"\n", b"\r\n")) or _BLANK_LINE.search(line, start) is not None
        if not complete:
            self._check_held(scanned)
            return None
        self._line = bytearray()
        return bytes(line)

    def _check_held(self, scanned: int) -> None:
        if self._state == SIZE:
            if len(self._line) > self.line_bytes:
                raise self._too_long()
            return
        self._scan(self._line, scanned)

    def _scan(self, block: bytes | bytearray, scanned: int) -> None:
        """Trailer lines from `scanned` on against the caps; the cap broken at the earliest byte wins.

        So the error does not depend on how the reads cut the block: one
        line over `line_bytes` breaks at its byte line_bytes + 1, the field
        over `header_count` at its end, the block at byte header_bytes + 1.
        """
        pos = scanned
        while True:
            newline = block.find(b"\n", pos)
            end = newline + 1 if newline >= 0 else len(block)
            broken: list[tuple[int, int, LimitExceeded]] = []
            if self._line_start + self.line_bytes + 1 <= end:
                error = LimitExceeded("bytes in one trailer field", self.line_bytes, "line_bytes")
                broken.append((self._line_start + self.line_bytes + 1, 0, error))
            if newline >= 0 and self._newlines + 1 > self.header_count:
                broken.append((end, 1, LimitExceeded("trailer fields", self.header_count, "header_count")))
            if self.header_bytes + 1 <= end:
                error = LimitExceeded("bytes of trailer", self.header_bytes, "header_bytes")
                broken.append((self.header_bytes + 1, 2, error))
            if broken:
                raise min(broken, key=lambda item: item[:2])[2]
            if newline < 0:
                return
            self._newlines += 1
            self._line_start = end
            pos = end

    def _too_long(self) -> LimitExceeded:
        return LimitExceeded("bytes in one chunk-size line", self.line_bytes, "line_bytes")

    def _malformed(self, what: str, got: bytes) -> ProtocolError:
        shown = escape(got[:64].decode("latin-1"))
        return ProtocolError(f"{self.where} sent a malformed HTTP reply: a bad {what} ({shown})")

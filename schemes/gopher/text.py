"""Where a Gopher text ends: the final-dot rule, strict RFC 1436, and Gopher+ `+-1` blocks.

RFC 1436 says text ends with a "." line and lines starting with "." are
stuffed.  Real servers disagree (gophernicus and pygopherd send neither;
UMN doubles only a lone "."), so the default is what the UMN client does:
read to close and drop a final line that is exactly "." (`FinalDot`).  A
"." in the middle is data.  `DotTerminated` is the strict reading (stop at
the first "." line, unstuff) used for `--strict` and for `+-1` blocks.

Both are fed chunks and return the bytes to pass on; they hold back only
what might still turn out to be the terminator, so a 1 GiB text streams.
"""

from __future__ import annotations

import re
from typing import Literal

#: Hold back at most this much of a possible final "." line plus trailing blank space.
MAX_HELD = 64 * 1024

_FINAL_DOT = re.compile(rb"\.\r?(?:\n[ \t\r\n]*)?")
_BLANK = b" \t\r\n"


class FinalDot:
    """Pass text through, dropping a final line that is exactly "." (only blank space after it)."""

    def __init__(self) -> None:
        self._held = b""
        self._at_line_start = True

    def feed(self, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        data = self._held + chunk if self._held else chunk
        self._held = b""
        cut = self._candidate(data)
        if cut is None or len(data) - cut > MAX_HELD:
            out = data
        else:
            out, self._held = data[:cut], data[cut:]
        if out:
            self._at_line_start = out.endswith(b"\n")
        return out

    def _candidate(self, data: bytes) -> int | None:
        stripped = len(data.rstrip(_BLANK))
        if stripped == 0 or data[stripped - 1 : stripped] != b".":
            return None
        dot = stripped - 1
        if dot == 0:
            if not self._at_line_start:
                return None
        elif data[dot - 1 : dot] != b"\n":
            return None
        return dot if _FINAL_DOT.fullmatch(data, dot) else None

    def close(self) -> bytes:
        """End of stream: whatever is still held is the final "." line; drop it."""
        self._held = b""
        return b""


class DotTerminated:
    """Read up to the first line that is exactly "."; unstuff as `mode` says.

    mode "all" (RFC 1436): a line starting ".." loses its first ".".
    mode "lone" (UMN `+-1`): only a line that is exactly ".." becomes ".".
    """

    def __init__(self, mode: Literal["all", "lone"]) -> None:
        self.mode = mode
        self.done = False
        self._pending = b""
        self._mid_line = False

    def feed(self, chunk: bytes) -> bytes:
        if self.done:
            return b""
        data = self._pending + chunk if self._pending else chunk
        self._pending = b""
        out = bytearray()
        pos, end = 0, len(data)
        while pos < end:
            if self._mid_line:
                newline = data.find(b"\n", pos)
                if newline < 0:
                    out += data[pos:]
                    break
                out += data[pos : newline + 1]
                pos = newline + 1
                self._mid_line = False
                continue
            if data[pos] != 0x2E:  # not "."
                self._mid_line = True
                continue
            newline = data.find(b"\n", pos)
            if newline < 0:
                rest = data[pos:]
                if len(rest) < 4:  # might still become ".", ".\r", ".." or "..\r"
                    self._pending = rest
                    break
                out += self._unstuff(rest, whole=False)
                self._mid_line = True
                break
            line = data[pos : newline + 1]
            content = line[:-1][:-1] if line.endswith(b"\r\n") else line[:-1]
            if content == b".":
                self.done = True
                break
            out += self._unstuff(line, whole=content == b"..")
            pos = newline + 1
        return bytes(out)

    def _unstuff(self, line: bytes, *, whole: bool) -> bytes:
        if line.startswith(b"..") and (self.mode == "all" or whole):
            return line[1:]
        return line

    def close(self) -> bytes:
        """End of stream before the "." line: the held bytes are data."""
        rest, self._pending = self._pending, b""
        if self.done:
            return b""
        return self._unstuff(rest, whole=rest.rstrip(b"\r") == b"..")

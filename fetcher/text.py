"""Text that came from a URL or a server is data: make it safe to print or to name a file."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_ALL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\udc80-\udcff]")
_UNSAFE_NAME = re.compile(r'[\x00-\x1f\x7f-\x9f/\\:*?"<>|]')
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(1, 10)} | {f"lpt{i}" for i in range(1, 10)}
)


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if char == "\t":
        return "\\t"
    if char == "\r":
        return "\\r"
    if char == "\n":
        return "\\n"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """Escape control characters (ESC, CR, C1 ...) so a terminal shows them as text."""
    pattern = _CONTROL if keep_newlines else _CONTROL_ALL
    text = pattern.sub(_escape_char, text)
    return _SURROGATE.sub(_escape_char, text)


def escape_bytes(data: bytes, *, keep_newlines: bool = True) -> str:
    """Decode server bytes for a terminal: UTF-8 where valid, escapes elsewhere."""
    return escape(data.decode("utf-8", "surrogateescape"), keep_newlines=keep_newlines)


def safe_filename(name: str, *, fallback: str = "index") -> str:
    """A single path component that cannot escape a directory or name a device.

    Drops directories (`../x` -> `x`), control characters and characters
    that are special on some file system; never returns "", "." or "..".
    """
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = _SURROGATE.sub("_", name)
    name = _UNSAFE_NAME.sub("_", name).strip(" .")
    if not name:
        return fallback
    if name.split(".", 1)[0].lower() in _WINDOWS_DEVICES:
        name = "_" + name
    return name[:200]

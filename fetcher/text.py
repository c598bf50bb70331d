"""Text that came from a URL or a server is data: make it safe to print or to name a file.

Everything here is pure (no I/O), so it is tested and fuzzed directly:
`escape` leaves no C0/C1 control, no ESC, no bidi or other format
character (Unicode category Cf), no line/paragraph separator and no lone
surrogate in what it returns; `TerminalText` does the same for a byte
stream cut at arbitrary points; `safe_filename` and `fit_name` make one
path component that cannot escape a directory and fits the file system.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
import re
import sys
import unicodedata
from typing import Any

#: Anything that is not printable ASCII is looked at one character at a time.
_NOT_PLAIN = re.compile(r"[^\x20-\x7e]+")
_NOT_PLAIN_KEEP = re.compile(r"[^\x20-\x7e\t\n]+")
#: Categories never shown raw: controls, format characters (bidi overrides,
#: zero-width joiners, BOM...), surrogates, unassigned code points (a newer
#: terminal may know them as format characters) and line/paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})
_UNSAFE_NAME_ASCII = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(1, 10)} | {f"lpt{i}" for i in range(1, 10)}
)
#: Bytes of one file name on the common file systems (ext4, XFS, btrfs, APFS, NTFS in UTF-16 units).
NAME_MAX = 255
#: Room kept for what fetcher appends to a name: `.part`, `.123` numbering.
_SUFFIX_ROOM = 16


class LazyPatterns:
    """Regular expressions compiled the first time each is read, then plain attributes.

    For patterns that a plain run never needs (error paths, unusual replies,
    URLs the fast route does not take): compiled at import, they cost every
    start-up for nothing (issue 17).  A subclass annotates each name
    (`bad_char: re.Pattern[str]`) and the instance is given the sources
    (`re.compile` arguments).  The first read of a name compiles it and keeps
    it on the instance, so every later read is an ordinary attribute read (no
    call, no lock); two threads racing the first read each compile the same
    pattern, which is harmless.
    """

    def __init__(self, **sources: str | bytes | tuple[str | bytes, int]) -> None:
        self._sources = sources

    def __getattr__(self, name: str) -> Any:
        # Only names not compiled yet get here; so does `_sources` in a copy that __init__ never saw.
        source = self.__dict__.get("_sources", {}).get(name)
        if source is None:
            raise AttributeError(f"{type(self).__name__!r} has no pattern {name!r}")
        pattern = re.compile(*source) if isinstance(source, tuple) else re.compile(source)
        setattr(self, name, pattern)
        return pattern


class _Patterns(LazyPatterns):
    #: `scheme://user:password@` (only text with an "@" is searched).
    url_password: re.Pattern[str]
    #: RFC 9110 §8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE; etagc = %x21 / %x23-7E / obs-text.
    entity_tag: re.Pattern[str]


_PATTERNS = _Patterns(url_password=r"(?i)\b([a-z][a-z0-9+.-]*://[^/?#@\s:]*):([^/?#@\s]*)@",
                      entity_tag=r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"')  # fmt: skip


def is_unsafe_char(char: str) -> bool:
    """True for a character a terminal or a file name must never get raw."""
    return unicodedata.category(char) in _UNSAFE_CATEGORIES


def _escape_one(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if char == "\t":
        return "\\t"
    if char == "\r":
        return "\\r"
    if char == "\n":
        return "\\n"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _escape_run(match: re.Match[str]) -> str:
    run = match.group()
    return "".join(_escape_one(c) if (c != "\t" and c != "\n" and is_unsafe_char(c)) else c for c in run)


def _escape_run_all(match: re.Match[str]) -> str:
    run = match.group()
    return "".join(_escape_one(c) if is_unsafe_char(c) else c for c in run)


def escape(text: str, *, keep_newlines: bool = False) -> str:
    """Escape what a terminal would act on (ESC, CR, C1, bidi overrides, ...) so it shows as text.

    With `keep_newlines`, LF and TAB stay and CRLF becomes LF (a terminal
    shows a line break, never a literal `\\r`); a lone CR is escaped.
    Printable text, including non-ASCII letters, is unchanged, and
    escaping twice changes nothing more (the escapes are plain ASCII).
    """
    if keep_newlines:
        text = text.replace("\r\n", "\n")
        return _NOT_PLAIN_KEEP.sub(_escape_run, text)
    return _NOT_PLAIN.sub(_escape_run_all, text)


def escape_bytes(data: bytes, *, keep_newlines: bool = True) -> str:
    """Decode server bytes for a terminal: UTF-8 where valid, escapes elsewhere."""
    return escape(data.decode("utf-8", "surrogateescape"), keep_newlines=keep_newlines)


class TerminalText:
    """`escape_bytes` for a stream: feeding it in pieces gives what feeding it whole gives.

    A UTF-8 character or a CRLF cut between two reads is held back until
    the next piece completes it, so it is neither escaped as broken bytes
    nor shown as a literal `\\r`.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        self._held_cr = False

    def feed(self, data: bytes, *, final: bool = False) -> str:
        text = self._decoder.decode(data, final)
        if self._held_cr:
            text = "\r" + text
            self._held_cr = False
        if not final and text.endswith("\r"):
            text = text[:-1]
            self._held_cr = True
        return escape(text, keep_newlines=True)

    def close(self) -> str:
        return self.feed(b"", final=True)


def mask_secrets(text: str) -> str:
    """Hide the password of every `scheme://user:password@` in `text` (for logs, manifests, JSON)."""
    if "@" not in text:
        return text
    return _PATTERNS.url_password.sub(r"\1:***@", text)


def safe_text(text: str) -> str:
    """One log or terminal line: passwords masked, everything a terminal acts on escaped."""
    return escape(mask_secrets(text))


#: Longest entity-tag kept (nginx's are ~20 characters, Apache's ~30; a longer one is not a validator).
MAX_TAG = 512


def valid_tag(value: object) -> str | None:
    """The tag if it is a well-formed entity-tag of sensible length, else None.

    A server's ETag goes back into request headers (If-None-Match, If-Range)
    and into files (-N's store, a `.part`'s resume record): only RFC 9110's
    syntax passes, so no server text reaches a header unchecked.
    """
    if not isinstance(value, str) or len(value) > MAX_TAG:
        return None
    value = value.strip(" \t")
    return value if _PATTERNS.entity_tag.fullmatch(value) else None


class SafeFormatter(logging.Formatter):
    """A log formatter whose every line is `safe_text`: the CLI's one place for log output."""

    def format(self, record: logging.LogRecord) -> str:
        return safe_text(super().format(record))


# -- file names ----------------------------------------------------------------


def _name_bytes(name: str) -> int:
    return len(os.fsencode(name))


def fit_name(name: str, limit: int = NAME_MAX) -> str:
    """Cut `name` to `limit` bytes of the file system encoding, keeping a short extension.

    The cut falls on a character boundary; an extension (up to 16 bytes,
    as in `.tar.gz` -> `.gz`) survives so the file still opens with the
    right program.
    """
    if (len(name) <= limit and name.isascii()) or _name_bytes(name) <= limit:  # ASCII: a byte a character
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem or _name_bytes(extension) > 16:
        stem, extension = name, ""
    else:
        extension = "." + extension
    room = limit - _name_bytes(extension)
    encoded = os.fsencode(stem)[:room]
    cut = encoded.decode(sys.getfilesystemencoding(), "ignore")
    while cut and _name_bytes(cut) > room:
        cut = cut[:-1]
    return (cut.rstrip(" .") or "_") + extension


def safe_filename(name: str, *, fallback: str = "index", limit: int = NAME_MAX - _SUFFIX_ROOM) -> str:
    """A single path component that cannot escape a directory, name a device or fool a reader.

    Drops directories (`../x` -> `x`); replaces controls (C0, C1), format
    characters (bidi overrides, zero-width characters), line separators,
    undecodable bytes and characters special on some file system by `_`;
    never returns "", "." or ".."; cuts to `limit` bytes (room is left for
    `.part` and numbering) keeping the extension.
    """
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE_NAME_ASCII.sub("_", name)
    if not name.isascii():
        name = "".join("_" if is_unsafe_char(c) else c for c in name)
    name = name.strip(" .")
    if not name:
        return fallback
    if name.split(".", 1)[0].lower() in _WINDOWS_DEVICES:
        name = "_" + name
    return fit_name(name, limit)


def hashed_name(key: str, name: str, *, keep: int = 40) -> str:
    """A short name that stands for a path too deep or too long: a hash of `key` and the name's tail."""
    digest = hashlib.sha256(os.fsencode(key)).hexdigest()[:16]
    tail = safe_filename(name, fallback="", limit=keep)
    return f"{digest}-{tail}" if tail else digest

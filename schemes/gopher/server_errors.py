"""A Gopher server's "no such item", told apart from the item itself (pure).

RFC 1436 gives a server one way to refuse a selector: an error item, type
3.  Real servers send it as a whole reply to any request, whatever type the
client asked for:

- pygopherd, UMN: `3'/x' does not exist (no handler found)\\t\\terror.host\\t1`
  (no "." line);
- geomyidae: `3Sorry, but the requested token '/x' could not be found.\\tErr\\t
  localhost\\t70`, then ".", then an empty line;
- Motsognir and others: an error item among info lines;
- gophernicus: a plain text `Error: File or directory not found! (null)`
  followed by its footer (a rule and "Gophered by ...").

A reply made only of such lines is an error (exit 6, 5 for "denied", a
retry for "busy"): `error_reply` for documents, `error_only` for menus.  A
reply that merely starts like one (a text whose first line is an error
item, "Error: ..." or a short "not found" page) is kept, with a warning:
`resembles_error`.  Only `ERROR_PEEK` bytes are ever held to decide.
"""

from __future__ import annotations

import re

from fetcher.errors import AuthError, FetchError, NotFound, TransientError
from fetcher.schemes.gopher.menu import MenuParser, decode_display
from fetcher.text import escape

#: How much of a reply may be held back to decide whether it is an error.
ERROR_PEEK = 8 * 1024
#: A short reply (at most this long) that says "not found" looks like an error page.
SHORT_REPLY = 512

#: A type-3 menu line: "3" message (with a letter in it) TAB selector TAB host TAB port [TAB ...].
_ERROR_ITEM = re.compile(rb"3([^\t]*[A-Za-z][^\t]*)\t[^\t]*\t[^\t]*\t[^\t]*(?:\t.*)?")
#: An info line in menu form ("i" text TAB ...).
_INFO_ITEM = re.compile(rb"i[^\t]*\t.*")
_FIRST_WORD_ERROR = re.compile(r"(?i)\s*(?:error|err)\b\s*[:!\-\d]")
_DENIED = ("denied", "permission", "not world-readable", "forbidden", "not allowed", "unauthori")
_MISSING = ("not found", "could not be found", "cannot be found", "can't be found", "does not exist",
            "doesn't exist", "not exist", "no such", "unknown selector", "invalid selector", "404")  # fmt: skip
_BUSY = ("try again", "too busy", "too many", "overloaded", "temporarily")


def _lines(data: bytes) -> list[bytes]:
    lines = data.replace(b"\r\n", b"\n").split(b"\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[-1] == b".":
        lines.pop()
    return lines


#: First bytes after which a reply's first line decides alone (not blank, no error item, no "." line).
_PLAIN_START = frozenset(range(256)) - frozenset(b"3i. \t\n\r\x0b\x0c")
#: First bytes of error items ("3") and info lines ("i") in menu form: each holds a TAB.
_ITEM_START = frozenset(b"3i")


def _plain_first_line(data: bytes) -> bool:
    """True when the reply's first line is text: not blank, not the "." line, not an error or info item."""
    if not data:
        return False
    first = data[0]
    if first in _PLAIN_START:
        return True
    if first in _ITEM_START:
        end = data.find(b"\n")
        return b"\t" not in (data if end < 0 else data[:end])
    return False


def error_reply(data: bytes) -> str | None:
    """The message of a complete reply that is a server's error rather than the document.

    Only error items (and info lines) in menu form, with an optional "."
    line, or gophernicus's "Error: ..." line followed by nothing but its
    footer count: a document that merely starts so stays a document.
    """
    if len(data) > ERROR_PEEK:
        return None
    if _plain_first_line(data) and not data.startswith(b"Error: "):
        return None  # a first line that is text: what `_error_reply` finds too, without splitting the reply
    return _error_reply(data)


def _error_reply(data: bytes) -> str | None:
    lines = _lines(data)
    messages = []
    for line in lines:
        match = _ERROR_ITEM.fullmatch(line)
        if match:
            messages.append(decode_display(match.group(1)).strip())
        elif line.strip() and not _INFO_ITEM.fullmatch(line):
            break
    else:
        if messages:
            return "; ".join(messages)
    if not data.startswith(b"Error: "):
        return None
    first, *rest = decode_display(data).replace("\r\n", "\n").split("\n")
    for text in rest:
        stripped = text.strip()
        if stripped and set(stripped) != {"_"} and "Gophered by" not in stripped:
            return None
    return first[len("Error: ") :]


def resembles_error(data: bytes, *, complete: bool) -> str | None:
    """The first line of a reply that only looks like an error page (warn, keep the bytes).

    `data` is the reply's first `ERROR_PEEK` bytes, or all of it when `complete`.
    """
    if not (complete and len(data) <= SHORT_REPLY) and _plain_first_line(data):
        # The first line is text and the reply is not a short page: only that line's first
        # 200 bytes count (as in `_resembles_error`).
        end = data.find(b"\n", 0, 200)
        text = decode_display(data[:end] if end >= 0 else data[:200]).strip()
        return text if _FIRST_WORD_ERROR.match(text) else None
    return _resembles_error(data, complete=complete)


def _resembles_error(data: bytes, *, complete: bool) -> str | None:
    lines = [line for line in _lines(data[:ERROR_PEEK]) if line.strip()]
    if not lines:
        return None
    first = lines[0]
    text = decode_display(first[:200]).strip()
    if _ERROR_ITEM.fullmatch(first):
        return text.split("\t", 1)[0][1:]
    if _FIRST_WORD_ERROR.match(text):
        return text
    lowered = decode_display(data[:SHORT_REPLY]).lower()
    if complete and len(data) <= SHORT_REPLY and len(lines) <= 3 and any(word in lowered for word in _MISSING):
        return text
    return None


def error_only(parser: MenuParser) -> str | None:
    """The message of a menu made only of error items (and info lines): "no such item"."""
    items = [entry for entry in parser.entries if entry.type != "info"]
    if items and all(entry.type == "error" and entry.extra.get("gopher_type") == "3" for entry in items):
        return "; ".join(entry.name for entry in items)
    if not parser.saw_tab and parser.entries:
        first = parser.entries[0].name
        if first.startswith("Error: "):
            return first
    return None


def menu_warning(parser: MenuParser) -> str | None:
    """A menu whose first item is an error item, followed by real items: worth a warning."""
    for entry in parser.entries:
        if entry.type == "info":
            continue
        if entry.type == "error" and entry.extra.get("gopher_type") == "3":
            return entry.name
        return None
    return None


def error_for_message(message: str, url: str) -> FetchError:
    """A gopher0 error reply as an exit code, by its words.

    "denied" and its kin are a refusal (5), "busy" is worth a retry; any
    other error item is "not found" (6): a Gopher server has no other way
    to say that a selector does not exist, and that is what it says most.
    """
    said = escape(message.strip()) or "(no message)"
    lowered = message.lower()
    if any(word in lowered for word in _DENIED):
        return AuthError(f"the server refused access: {said}", url=url)
    if any(word in lowered for word in _BUSY):
        return TransientError(f"the server says try again later: {said}", url=url)
    if any(word in lowered for word in _MISSING):
        return NotFound(f"the server says there is no such item: {said}", url=url)
    return NotFound(f"the server answered with an error item instead of the item: {said}", url=url,
                    hint="check the selector; fetch the menu above it to see what exists")  # fmt: skip

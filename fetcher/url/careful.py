"""The careful route: unwrap, scan, split step by step, and say exactly what is wrong.

Every `URLError` names the part and the position in the text as given
(wrappers included).  The scheme parsers (`parsers`) take the text after
"scheme:" with the fragment removed and raise with positions counted in
that text; `_parse_text` shifts them.
"""

from __future__ import annotations

from fetcher.errors import URLError
from fetcher.url.grammar import PATTERNS, WHITESPACE
from fetcher.url.parsers import PARSERS, parse_generic
from fetcher.url.values import URL


def _unwrap_indexed(text: str) -> tuple[str, list[int]]:
    """The URL inside the appendix wrappers, and where each of its characters was."""
    start, end = 0, len(text)
    while start < end and text[start] in WHITESPACE:
        start += 1
    while end > start and text[end - 1] in WHITESPACE:
        end -= 1
    if start < end and text[start] == "<":
        if end - start < 2 or text[end - 1] != ">":
            raise URLError(
                "the '<' wrapper is not closed by '>'",
                part="wrapper",
                position=start,
                hint="write <URL:scheme://...> with both brackets",
                url=text,
            )
        kept = [index for index in range(start + 1, end - 1) if text[index] not in WHITESPACE]
    else:
        kept = list(range(start, end))
    if len(kept) >= 4 and "".join(text[index] for index in kept[:4]).upper() == "URL:":
        kept = kept[4:]
    return "".join(text[index] for index in kept), kept


def unwrap(text: str) -> str:
    """Strip the appendix wrappers: `<URL:...>`, `URL:`, and line breaks.

    Inside `<...>` all whitespace is ignored (long URLs broken across lines).
    A line break right after a hyphen keeps the hyphen: the appendix says it
    "may or may not" belong to the URL, and keeping it loses nothing typed.
    Outside a wrapper only leading and trailing whitespace is dropped.
    """
    return _unwrap_indexed(text)[0]


def parse_careful(original: str) -> URL:
    text = original
    where = None
    if text and (text[0] in WHITESPACE or text[0] == "<" or text[-1] in WHITESPACE or text[:4].upper() == "URL:"):
        text, where = _unwrap_indexed(original)
    try:
        return _parse_text(text)
    except URLError as error:
        if error.url is None:
            error.url = original
        if where is not None and error.position is not None:
            # Report positions in the text the user gave, wrappers included.
            at = error.position
            error.position = where[at] if at < len(where) else (where[-1] + 1 if where else 0)
            error.message = error.message.replace(f"at position {at}", f"at position {error.position}")
            error.args = (error.message,)
        raise


def _parse_text(text: str) -> URL:
    bad = PATTERNS.bad_char.search(text)
    if bad is not None and text[bad.start()] == "#":
        bad = PATTERNS.bad_char.search(text, bad.start() + 1)
    if bad is not None:
        raise _bad_character(text, bad.start())
    colon = text.find(":")
    if colon <= 0:
        raise URLError(
            f"no scheme: expected 'scheme:' at the start of {text!r}",
            part="scheme",
            position=0,
            hint="write a full URL such as ftp://host/path",
        )
    if PATTERNS.scheme.fullmatch(text, 0, colon) is None:
        at = next(index for index in range(colon) if PATTERNS.scheme.fullmatch(text[index]) is None)
        raise URLError(
            f"scheme {text[:colon]!r}: character {text[at]!r} at position {at} is not allowed in a scheme name",
            part="scheme",
            position=at,
            hint="scheme names hold letters, digits, '+', '-' and '.'",
        )
    scheme = text[:colon].lower()
    rest = text[colon + 1 :]
    fragment = None
    hash_at = rest.find("#")
    if hash_at >= 0:
        fragment = rest[hash_at + 1 :]
        rest = rest[:hash_at]
    try:
        return PARSERS.get(scheme, parse_generic)(scheme, rest, fragment)
    except URLError as error:
        if error.position is not None:
            error.position += colon + 1
        raise


def _bad_character(text: str, at: int) -> URLError:
    char = text[at]
    if char == "%":
        what = f"'%' at position {at} does not start an escape (%XX with two hex digits)"
        part = "escape"
    elif char == "#":
        what = f"a second '#' at position {at}"
        part = "fragment"
    elif char == " ":
        what = f"raw space at position {at}"
        part = "character"
    elif ord(char) < 0x20 or ord(char) == 0x7F:
        what = f"raw control character {char!r} at position {at}"
        part = "character"
    elif ord(char) > 0x7F:
        what = f"raw non-ASCII character {char!r} at position {at}"
        part = "character"
    else:
        what = f"character {char!r} at position {at} is not allowed raw"
        part = "character"
    return URLError(
        what,
        part=part,
        position=at,
        hint=f"percent-encode it as %{ord(char):02X}" if ord(char) < 0x80 else "percent-encode its UTF-8 octets",
    )

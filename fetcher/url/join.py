"""Relative URLs: RFC 1808 §4 (the W3C notes' "partial form")."""

from __future__ import annotations

from fetcher.url.careful import unwrap
from fetcher.url.fast import parse_url
from fetcher.url.grammar import PATTERNS
from fetcher.url.values import URL


def _split_relative(text: str) -> tuple[str | None, str | None, str, str | None, str | None, str | None]:
    """scheme, net_loc, path, params, query, fragment of RFC 1808 §2.4."""
    fragment = query = params = scheme = netloc = None
    hash_at = text.find("#")
    if hash_at >= 0:
        text, fragment = text[:hash_at], text[hash_at + 1 :]
    colon = text.find(":")
    if colon > 0 and PATTERNS.scheme.fullmatch(text, 0, colon):
        scheme, text = text[:colon].lower(), text[colon + 1 :]
    if text.startswith("//"):
        end = text.find("/", 2)
        end = len(text) if end < 0 else end
        netloc, text = text[2:end], text[end:]
    question = text.find("?")
    if question >= 0:
        text, query = text[:question], text[question + 1 :]
    semicolon = text.find(";")
    if semicolon >= 0:
        text, params = text[:semicolon], text[semicolon + 1 :]
    return scheme, netloc, text, params, query, fragment


def _remove_dot_segments(path: str) -> str:
    """RFC 1808 §4 step 6 on a path without its leading "/".

    A ".." with nothing left to remove stays (RFC 1808 §5.2: `../../../g`
    against `http://a/b/c/d;p?q` is `http://a/../g`).
    """
    segments = path.split("/")
    last = len(segments) - 1
    output: list[str] = []
    for index, segment in enumerate(segments):
        if segment == ".":
            if index == last:
                output.append("")
            continue
        if segment == ".." and output and output[-1] != "..":
            output.pop()
            if index == last:
                output.append("")
            continue
        output.append(segment)
    return "/".join(output)


def join(base: URL | str, reference: str) -> URL:
    """Resolve a partial (relative) URL against a base, as RFC 1808 §4 says, and parse it.

    A reference with its own scheme is absolute.  The result is parsed, so a
    resolution that yields no valid URL of its scheme (RFC 1808's `http:g`)
    raises `URLError`.
    """
    base_text = str(parse_url(base) if isinstance(base, str) else base)
    if reference[:1] in ("<", " ") or reference[-1:] == " " or reference[:4].upper() == "URL:":
        reference = unwrap(reference)
    if not reference:
        return parse_url(base_text)
    r_scheme, r_netloc, r_path, r_params, r_query, r_fragment = _split_relative(reference)
    if r_scheme is not None:
        return parse_url(reference)
    b_scheme, b_netloc, b_path, b_params, b_query, _ = _split_relative(base_text)
    netloc, path, params, query = r_netloc, r_path, r_params, r_query
    if netloc is None:
        netloc = b_netloc
        if not path:
            path = b_path
            if params is None:
                params = b_params
                if query is None:
                    query = b_query
        elif not path.startswith("/"):
            directory = b_path[: b_path.rfind("/") + 1]
            if directory.startswith("/"):
                path = "/" + _remove_dot_segments(directory[1:] + path)
            elif netloc is not None:
                path = "/" + _remove_dot_segments(path)
            else:
                path = _remove_dot_segments(directory + path)
    text = f"{b_scheme}:"
    if netloc is not None:
        text += "//" + netloc
    text += path
    if params is not None:
        text += ";" + params
    if query is not None:
        text += "?" + query
    if r_fragment is not None:
        text += "#" + r_fragment
    return parse_url(text)

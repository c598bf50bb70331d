"""The request bytes of a gopher URL: gopher-plus.md §3.2, "the one rule".

selector, then TAB and the search (an empty search only for type 7, or
when no Gopher+ string follows), then TAB and the Gopher+ string, then
CRLF unless the Gopher+ string is the §3.4.9 ASK shape, which already ends
in CRLF.  The selector is sent byte-exact: no re-encoding, no `?` split.
"""

from __future__ import annotations

from fetcher.url import GopherURL, to_bytes


def request_bytes(url: GopherURL) -> bytes:
    line = to_bytes(url.selector)
    search = to_bytes(url.search) if url.search is not None else None
    plus = to_bytes(url.plus) if url.plus else b""
    if search is not None and (search != b"" or url.gtype == "7" or not plus):
        line += b"\t" + search
    if plus:
        line += b"\t" + plus
    if not plus.endswith(b"\r\n"):
        line += b"\r\n"
    return line


def split_request(data: bytes) -> tuple[bytes, bytes]:
    """The request line (without CRLF) and the data block that follows it (ASK answers)."""
    line, _, block = data.partition(b"\r\n")
    return line, block

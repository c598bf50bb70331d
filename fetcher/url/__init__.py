"""RFC 1738 URLs: parse text into one typed value per scheme, and back.

The parser splits on reserved characters *before* percent-decoding (RFC 1738
§2.2: "the reserved characters shall never be arbitrarily encoded and
decoded"), so `%2F` inside an FTP segment stays inside that segment. Decoded
text is `str`; octets that are not UTF-8 survive as lone surrogates
(`errors="surrogateescape"`), so every component round-trips byte for byte:
`to_bytes(component)` gives back the octets that go on the wire.

Modules: `values` (the classes and their canonical text), `construct` (one
constructor per scheme that decodes and checks the pieces cut from the text),
and the two routes that feed those constructors:

* `fast`: one compiled pattern per scheme that accepts only the common,
  plainly valid shape (lower-case scheme, hostname or IPv4 address, no
  wrappers) and hands its groups to the constructor;
* `careful`: taken whenever the fast pattern does not match; it unwraps
  `<URL:...>`, scans for bad characters, splits step by step and raises
  `URLError` naming the part and its position in the input.  It checks
  against the character classes of `grammar`, cuts the authority with
  `authority` and the rest with one parser per scheme (`parsers`).

`join` resolves relative references (RFC 1808).

The fast patterns accept a subset of what the careful route accepts and cut
it at the same places, so both give equal values (tests/test_url*.py check
this); anything unusual, valid or not, is decided by the careful route.
"""

from __future__ import annotations

from fetcher.url import values
from fetcher.url.careful import unwrap
from fetcher.url.fast import parse_url
from fetcher.url.join import join
from fetcher.url.values import *  # noqa: F403 (the URL classes and their helpers: values.__all__ names them once)

__all__ = ["join", "parse_url", "unwrap"]
__all__ += values.__all__

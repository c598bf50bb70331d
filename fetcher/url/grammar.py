"""The character classes of RFC 1738 (§2.2, §3.1, §5) that the careful route checks text against.

Compiled when the careful route first runs: a URL the fast route takes
never needs them (tests/test_startup.py).
"""

from __future__ import annotations

import re

from fetcher.text import LazyPatterns

# Labels are letter/digit runs joined by hyphens, so no label starts or ends
# with "-"; the top label starts with a letter (RFC 1738 §3.1, §5).
_LABEL = r"[A-Za-z0-9]+(?:-+[A-Za-z0-9]+)*"
_TOPLABEL = r"[A-Za-z][A-Za-z0-9]*(?:-+[A-Za-z0-9]+)*"


class _Patterns(LazyPatterns):
    """Compiled when the careful route first runs: a URL the fast route takes never needs them."""

    #: Anything outside RFC 1738's xchar (plus the "national" characters that real
    #: URLs use raw, such as "~"), or a "%" that does not start an escape.
    bad_char: re.Pattern[str]
    scheme: re.Pattern[str]
    hostname: re.Pattern[str]
    ipv4: re.Pattern[str]
    digits: re.Pattern[str]
    newsgroup: re.Pattern[str]


PATTERNS = _Patterns(
    bad_char=r"[^A-Za-z0-9$\-_.+!*'(),;/?:@&=%{}|\\^~\[\]`]|%(?![0-9A-Fa-f]{2})",
    scheme=r"[A-Za-z0-9+.\-]+",
    hostname=rf"(?:{_LABEL}\.)*{_TOPLABEL}",
    ipv4=r"([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)",
    digits=r"[0-9]+",
    newsgroup=r"[A-Za-z][A-Za-z0-9\-.+_]*",
)

#: What the appendix lets surround a URL (and, inside `<...>`, break it).
WHITESPACE = " \t\r\n\f\v"

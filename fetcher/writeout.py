"""`-w/--write-out FORMAT`: one line of facts on stdout after each URL (curl's -w, a few fields).

`%{url}`, `%{size}` (document bytes received; 0 for listings and
advisories), `%{time_total}` (seconds, 6 decimals), `%{exit_code}`;
`\\n`, `\\t`, `\\r`, `\\\\` and `%%` as in curl.  An unknown `%{name}` is a usage
error when the options are read, not a surprise after the download.
"""

from __future__ import annotations

import re

FIELDS = ("url", "size", "time_total", "exit_code")

_TOKEN = re.compile(r"%\{([^}]*)\}|%%|\\[ntr\\]")
_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\\\": "\\", "%%": "%"}


def check(template: str) -> str:
    """The template itself if every `%{name}` is known; else ValueError naming it."""
    for match in _TOKEN.finditer(template):
        name = match.group(1)
        if name is not None and name not in FIELDS:
            raise ValueError(f"unknown -w field %{{{name}}} (known: {', '.join(FIELDS)})")
    return template


def render(template: str, *, url: str, size: int, seconds: float, exit_code: int) -> str:
    """The template with its fields filled in (the URL's password masked, control characters escaped)."""
    from .text import safe_text
    from .url import redact

    values = {"url": safe_text(redact(url)), "size": str(size), "time_total": f"{seconds:.6f}",
              "exit_code": str(exit_code)}  # fmt: skip

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return values[name] if name is not None else _ESCAPES[match.group(0)]

    return _TOKEN.sub(fill, template)

"""`Topic`: a scheme's help page (`fetch --help SCHEME`), as plain data.

The standard library only, so that a help page costs no protocol import:
the built-in schemes' pages are the registry's table (fetcher/registry/pages.py),
a plug-in's is its handler's `topic` hook; fetcher/cli/topics.py renders both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    #: The schemes this page covers; the first names it.
    schemes: tuple[str, ...]
    title: str
    #: URL forms, as RFC 1738 §3 writes them (and the secure variants fetcher adds).
    forms: tuple[str, ...]
    #: What the handler does with such a URL.
    does: str
    #: Options that change what happens with this scheme.
    options: tuple[str, ...]
    examples: tuple[str, ...]

"""A Gopher menu as a Gopher client shows it: the terminal view of the handler's listings.

Each item gets a type tag ((TXT), (DIR), (?)...), its display string, where
a link or a foreign item leads, and with Gopher+ attributes its facts in one
column.  Everything a server wrote is escaped before it is shown; URLs have
their passwords masked.  Read by fetcher.cli through the handler's
`listing_view` hook; JSON and link output stay the core's own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fetcher.text import escape, mask_secrets

if TYPE_CHECKING:
    from fetcher.handler import Entry


def menu_view(entries: list[Entry]) -> Iterator[str] | None:
    """The menu view of a listing whose every entry is a Gopher item (the handler's `listing_view`); else None."""
    if entries and all("gopher_type" in entry.extra for entry in entries):
        return menu_lines(entries)
    return None


def menu_text(entries: list[Entry]) -> str:
    """A Gopher client's menu view: a type tag, the display string, where foreign links lead."""
    return "".join(menu_lines(entries))


def menu_lines(entries: list[Entry]) -> Iterator[str]:
    """`menu_text` line by line, so a printer never holds a long menu whole."""
    tags = {"text": "TXT", "menu": "DIR", "search": "?", "html": "HTML", "telnet": "TEL", "tn3270": "TEL",
            "error": "ERR", "cso": "CSO", "gif": "IMG", "image": "IMG", "png": "IMG", "sound": "SND"}  # fmt: skip
    # With Gopher+ attributes the facts follow the names, in one column.
    name_width = max((len(escape(entry.name)) for entry in entries if entry.extra.get("attributes")), default=0)
    for entry in entries:
        if entry.type == "info":
            yield " " * 8 + escape(entry.name) + "\n"
            continue
        tag = "(" + tags.get(entry.type, "BIN") + ")"
        line = f"{tag:<8}{escape(entry.name)}"
        extra = entry.extra
        if entry.url and (extra.get("link") or extra.get("gopher_type") in ("8", "T")):
            line += f"  -> {escape(mask_secrets(entry.url))}"
        elif extra.get("foreign"):
            line += f"  [{escape(str(extra.get('host')))}:{extra.get('port')}]"
        if extra.get("gopher_plus") == "?":
            line += "  <form>"
        if extra.get("problem") and extra["problem"] != entry.name:
            line += f"  ({escape(str(extra['problem']))})"
        if extra.get("refused"):
            line += f"  (refused: {escape(str(extra['refused']))})"
        facts = _plus_facts(entry)
        if facts:
            line = f"{line:<{name_width + 8}}  {facts}"
        yield line.rstrip() + "\n"


def _plus_facts(entry: Entry) -> str:
    """A Gopher+ item's facts from its attributes ($ or ! requests): size of its first view, date, abstract."""
    attributes = entry.extra.get("attributes")
    if not isinstance(attributes, dict):
        return ""
    views = attributes.get("views") or []
    size = str(views[0].get("size") or "").strip("<> ") if views and isinstance(views[0], dict) else ""
    modified = str(attributes.get("modified") or "")[:10]
    abstract = " ".join(str(attributes.get("abstract") or "").split())
    return "  ".join(escape(fact) for fact in (f"{size or '-':>5}", modified or "-", abstract) if fact).rstrip()

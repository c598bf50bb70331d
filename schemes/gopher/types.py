"""Gopher item types (RFC 1436 §3.8 and the de facto additions) and how each is read.

One table decides three things for a type character: the word a listing
shows, how a reply for it is read (a menu, text with the final-dot rule, raw
bytes, or nothing because the item is not retrievable), and a MIME type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fetcher.handler import guess_type

Reading = Literal["menu", "text", "binary", "none"]


@dataclass(frozen=True)
class ItemType:
    word: str
    reading: Reading
    content_type: str | None = None
    #: The short tag of the menu view ("(TXT)" ...).
    tag: str = "BIN"


TYPES: dict[str, ItemType] = {
    "0": ItemType("text", "text", "text/plain", "TXT"),
    "1": ItemType("menu", "menu", "application/gopher-menu", "DIR"),
    "2": ItemType("cso", "none", None, "CSO"),
    "3": ItemType("error", "none", None, "ERR"),
    "4": ItemType("binhex", "text", "application/mac-binhex40", "HQX"),
    "5": ItemType("archive", "binary", "application/octet-stream", "BIN"),
    "6": ItemType("uuencoded", "text", "text/x-uuencode", "UUE"),
    "7": ItemType("search", "menu", "application/gopher-menu", "?"),
    "8": ItemType("telnet", "none", None, "TEL"),
    "9": ItemType("binary", "binary", "application/octet-stream", "BIN"),
    "+": ItemType("mirror", "binary", None, "+"),
    "T": ItemType("tn3270", "none", None, "TEL"),
    "g": ItemType("gif", "binary", "image/gif", "IMG"),
    "I": ItemType("image", "binary", None, "IMG"),
    "h": ItemType("html", "text", "text/html", "HTML"),
    "i": ItemType("info", "none", None, ""),
    "s": ItemType("sound", "binary", None, "SND"),
    "d": ItemType("document", "binary", None, "DOC"),
    "p": ItemType("png", "binary", "image/png", "IMG"),
    "r": ItemType("rtf", "binary", "application/rtf", "DOC"),
    "P": ItemType("pdf", "binary", "application/pdf", "PDF"),
    "M": ItemType("mime", "text", "message/rfc822", "TXT"),
    "c": ItemType("calendar", "text", "text/calendar", "CAL"),
    ":": ItemType("image", "binary", None, "IMG"),
    ";": ItemType("movie", "binary", None, "MOV"),
    "<": ItemType("sound", "binary", None, "SND"),
}

UNKNOWN = ItemType("unknown", "binary", None, "???")

#: The +VIEWS names of a menu (UMN writes the first, pygopherd the second).
MENU_VIEWS = frozenset({"application/gopher-menu", "application/gopher+-menu"})


def item_type(gtype: str) -> ItemType:
    return TYPES.get(gtype, UNKNOWN)


def content_type_for(gtype: str, selector: str) -> str:
    """The MIME type of an item: the table's, else a guess from the selector's name."""
    known = item_type(gtype).content_type
    if known is not None:
        return known
    guessed = guess_type(selector.rsplit("/", 1)[-1], strict=False)
    return guessed or "application/octet-stream"

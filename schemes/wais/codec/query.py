"""The type-1 (RPN) query of a WAIS retrieval (wais.md §5.5): attribute terms and operators.

freeWAIS-sf reads this query by position, not by meaning, so the writer
keeps the exact 7-term group per document that waissearch, Lynx and
libwww send, and the reader refuses any other shape.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fetcher.schemes.wais.codec.wire import Reader, WaisDecodeError, WaisEncodeError, as_text, element, string, text

T_ATTRIBUTES, T_TERM, T_OPERATOR = 44, 45, 46


@dataclass(frozen=True)
class Term:
    """An attribute term: six 2-letter attribute codes and the term's value."""

    attributes: str
    value: bytes


@dataclass(frozen=True)
class Operator:
    """A postfix operator: "a" AND, "o" OR, "n" AND-NOT."""

    operator: str


QueryItem = Term | Operator


def encode_query(items: Iterable[QueryItem]) -> bytes:
    out = b""
    for item in items:
        if isinstance(item, Term):
            out += string(T_ATTRIBUTES, item.attributes) + element(T_TERM, item.value)
        else:
            out += string(T_OPERATOR, item.operator)
    return out


def decode_query(block: Reader) -> tuple[QueryItem, ...]:
    items: list[QueryItem] = []
    while not block.at_end():
        tag, value = block.element()
        if tag == T_ATTRIBUTES:
            term_tag, term = block.element()
            if term_tag != T_TERM:
                raise WaisDecodeError(f"an attribute list is followed by tag {term_tag}, not a Term")
            items.append(Term(as_text(value), term))
        elif tag == T_OPERATOR:
            items.append(Operator(as_text(value)))
        else:
            raise WaisDecodeError(f"unexpected tag {tag} in a type-1 query")
    return tuple(items)


@dataclass(frozen=True)
class Retrieval:
    """One document range of a retrieval: [start, end) in bytes or lines (wais.md §5.5)."""

    docid: bytes
    type: str
    start: int
    end: int
    unit: str = "bytes"

    def terms(self) -> tuple[QueryItem, ...]:
        code = {"bytes": "wb", "lines": "wl"}.get(self.unit)
        if code is None:
            raise WaisEncodeError(f"retrievals are in bytes or lines, not {self.unit!r}")
        a = Operator("a")
        return (
            Term("un re ig ig ig ig", self.docid),
            Term("wt re ig ig ig ig", text(self.type)),
            a,
            Term(f"{code} ro ig ig ig ig", b"%d" % self.start),
            a,
            Term(f"{code} rl ig ig ig ig", b"%d" % self.end),
            a,
        )


def retrieval_query(retrievals: Iterable[Retrieval]) -> tuple[QueryItem, ...]:
    """The 7-term group per document, an OR after every group but the first."""
    items: list[QueryItem] = []
    for index, retrieval in enumerate(retrievals):
        items.extend(retrieval.terms())
        if index:
            items.append(Operator("o"))
    return tuple(items)


def _range_number(term: QueryItem, code: str, what: str) -> int:
    if not isinstance(term, Term) or term.attributes.split(" ")[:2] != [code, what]:
        raise WaisDecodeError(f"expected a '{code} {what}' range term in the retrieval query")
    if not term.value.isdigit() or len(term.value) > 12:
        raise WaisDecodeError(f"a range bound is not a decimal number: {term.value!r}")
    return int(term.value)


def parse_retrievals(items: tuple[QueryItem, ...]) -> list[Retrieval]:
    """The documents and ranges a type-1 query asks for, read by position as freeWAIS-sf does."""
    found: list[Retrieval] = []
    position = 0
    while position < len(items):
        group = items[position : position + 7]
        if len(group) < 7:
            raise WaisDecodeError("a retrieval query ends inside a 7-term document group")
        docid, wtype = group[0], group[1]
        if not isinstance(docid, Term) or not docid.attributes.startswith("un "):
            raise WaisDecodeError("a retrieval group does not start with the DocID term (un re ...)")
        if not isinstance(wtype, Term) or not wtype.attributes.startswith("wt "):
            raise WaisDecodeError("a retrieval group has no type term (wt re ...)")
        start_term = group[3]
        code = start_term.attributes[:2] if isinstance(start_term, Term) else ""
        if code not in ("wb", "wl"):
            raise WaisDecodeError(f"unsupported chunk kind {code!r} (only byte and line ranges)")
        if any(group[i] != Operator("a") for i in (2, 4, 6)):
            raise WaisDecodeError("a retrieval group's operators are not AND")
        start = _range_number(group[3], code, "ro")
        end = _range_number(group[5], code, "rl")
        unit = "bytes" if code == "wb" else "lines"
        found.append(Retrieval(docid.value, as_text(wtype.value), start, end, unit))
        position += 7
        if found[1:]:
            if position >= len(items) or items[position] != Operator("o"):
                raise WaisDecodeError("documents after the first must each be followed by an OR")
            position += 1
    return found

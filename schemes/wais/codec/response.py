"""SearchResponseAPDU: hit headers, document text and diagnostics (wais.md §3.8, §5.6, §9).

One APDU answers both a word search (headers) and a retrieval (a text
group).  The diagnostic record breaks the tag-length-value pattern (a fixed
2-byte length and a trailing 0x1D byte), so the walker special-cases tag 28.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from fetcher.errors import LimitExceeded
from fetcher.schemes.wais.codec.apdu import (
    SEARCH_RESPONSE,
    T_DIAGNOSTIC,
    T_DOCUMENT_ID,
    T_PRESENT_STATUS,
    T_REFERENCE_ID,
    T_RESULT_SET_STATUS,
    T_TYPE,
    T_USER_INFO,
    frame,
    open_apdu,
)
from fetcher.schemes.wais.codec.wire import (
    DEFAULT_MAX_FIELD,
    DEFAULT_MAX_RECORDS,
    Reader,
    WaisDecodeError,
    WaisEncodeError,
    as_num,
    as_text,
    capped,
    element,
    num,
    string,
    text,
)

T_SEED_WORDS_USED, T_VERSION, T_SCORE, T_BEST_MATCH, T_LENGTH = 115, 117, 118, 119, 120
T_SOURCE, T_DATE, T_HEADLINE, T_ORIGIN_CITY, T_DOCUMENT_TEXT = 121, 122, 123, 124, 127
T_STOCK_CODES, T_COMPANY_CODES, T_INDUSTRY_CODES, T_LINES, T_TYPE_BLOCK = 128, 129, 130, 131, 132
HEADER_GROUP, SHORT_HEADER_GROUP, LONG_HEADER_GROUP = 150, 151, 152
TEXT_GROUP, HEADLINE_GROUP, CODE_GROUP = 153, 154, 155
HEADER_GROUPS = frozenset({HEADER_GROUP, SHORT_HEADER_GROUP, LONG_HEADER_GROUP, HEADLINE_GROUP, CODE_GROUP})
END_OF_RECORD = 0x1D

DiagnosticKind = Literal["missing", "end", "denied", "error"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A DatabaseDiagnosticRecord: a 2-character code and its message."""

    code: str
    addinfo: str
    surrogate: bool = False

    def encode(self) -> bytes:
        code = self.code.encode("ascii", "replace")
        if len(code) != 2:
            raise WaisEncodeError(f"a diagnostic code is 2 characters, not {self.code!r}")
        info = text(self.addinfo)
        length = 3 + len(info)
        if length > 0xFFFF:
            raise WaisEncodeError("a diagnostic message is limited to 65532 bytes")
        return (
            bytes([T_DIAGNOSTIC])
            + length.to_bytes(2, "big")
            + code
            + info
            + (b"\x01" if self.surrogate else b"\x00")
            + bytes([END_OF_RECORD])
        )

    @classmethod
    def decode(cls, reader: Reader, max_field: int = DEFAULT_MAX_FIELD) -> Diagnostic:
        tag = reader.cint()
        if tag != T_DIAGNOSTIC:
            raise WaisDecodeError(f"a diagnostic record starts with tag {tag}")
        length = reader.integer(2, "the diagnostic length")
        if length < 3:
            raise WaisDecodeError(f"a diagnostic record of length {length} cannot hold its code")
        body = capped(reader.fixed(length, "the diagnostic record"), max_field, "a diagnostic message")
        if reader.fixed(1, "the diagnostic end byte")[0] != END_OF_RECORD:
            raise WaisDecodeError("a diagnostic record does not end with 0x1D")
        return cls(body[:2].decode("latin-1"), as_text(body[2:-1]), body[-1:] == b"\x01")

    @property
    def kind(self) -> DiagnosticKind:
        """What a client makes of it: a missing database or document, the normal end of a document,
        an access refusal, or any other error."""
        message = self.addinfo.lower()
        if self.code.upper() == "SF" and "out of range" in message:
            return "end"
        if "not available" in message or "not present" in message:
            return "missing"
        if self.code.upper() in ("T2", "T3", "T4") or "unautorized" in message or "unauthorized" in message:
            return "denied"
        return "error"

    def __str__(self) -> str:
        return f"{self.code} {self.addinfo}".strip()


@dataclass(frozen=True, slots=True)
class DocumentHeader:
    """One hit: a DocumentHeaderGroup (or its short/long/headline/code variants)."""

    docid: bytes
    version: int | None = None
    score: int | None = None
    best_match: int | None = None
    #: DocumentLength, in bytes.
    length: int | None = None
    lines: int | None = None
    types: tuple[str, ...] = ()
    source: str | None = None
    date: str | None = None
    headline: str | None = None
    origin_city: str | None = None
    stock_codes: str | None = None
    company_codes: str | None = None
    industry_codes: str | None = None
    group: int = HEADER_GROUP

    def encode(self) -> bytes:
        if self.group not in HEADER_GROUPS:
            raise WaisEncodeError(f"tag {self.group} is not a header group")
        type_block = b""
        source = self.source
        if self.types:
            type_block = element(T_TYPE_BLOCK, b"".join(string(T_TYPE, kind) for kind in self.types))
            # The C reader takes whatever follows TYPE_BLOCK as the Source: never let it be anything else.
            source = "" if source is None else source
        body = (
            element(T_DOCUMENT_ID, self.docid)
            + num(T_VERSION, self.version)
            + num(T_SCORE, self.score)
            + num(T_BEST_MATCH, self.best_match)
            + num(T_LENGTH, self.length)
            + num(T_LINES, self.lines)
            + type_block
            + string(T_SOURCE, source)
            + string(T_DATE, self.date)
            + string(T_HEADLINE, self.headline)
            + string(T_ORIGIN_CITY, self.origin_city)
            + string(T_STOCK_CODES, self.stock_codes)
            + string(T_COMPANY_CODES, self.company_codes)
            + string(T_INDUSTRY_CODES, self.industry_codes)
        )
        return element(self.group, body)

    @classmethod
    def decode(cls, group: int, block: Reader, max_field: int = DEFAULT_MAX_FIELD) -> DocumentHeader:
        numbers = {T_VERSION: "version", T_SCORE: "score", T_BEST_MATCH: "best_match", T_LENGTH: "length"}
        numbers[T_LINES] = "lines"
        strings = {
            T_SOURCE: "source",
            T_DATE: "date",
            T_HEADLINE: "headline",
            T_ORIGIN_CITY: "origin_city",
            T_STOCK_CODES: "stock_codes",
            T_COMPANY_CODES: "company_codes",
            T_INDUSTRY_CODES: "industry_codes",
        }
        values: dict[str, object] = {"group": group}
        while not block.at_end():
            tag, value = block.element()
            capped(value, max_field, f"field {tag} of a hit")
            if tag == T_DOCUMENT_ID:
                values["docid"] = value
            elif tag in numbers:
                values[numbers[tag]] = as_num(value)
            elif tag in strings:
                values[strings[tag]] = as_text(value)
            elif tag == T_TYPE_BLOCK:
                values["types"] = _decode_types(Reader(value))
        if "docid" not in values:
            raise WaisDecodeError(f"a header group (tag {group}) has no DocumentID")
        return cls(**values)  # type: ignore[arg-type]


def _decode_types(block: Reader) -> tuple[str, ...]:
    types = []
    while not block.at_end():
        tag, value = block.element()
        if tag != T_TYPE:
            raise WaisDecodeError(f"tag {tag} inside a TYPE_BLOCK")
        types.append(as_text(value))
    return tuple(types)


@dataclass(frozen=True)
class DocumentText:
    """A DocumentTextGroup: the bytes of the requested range of one document."""

    docid: bytes
    text: bytes
    version: int | None = 0

    def encode(self) -> bytes:
        body = element(T_DOCUMENT_ID, self.docid) + num(T_VERSION, self.version) + element(T_DOCUMENT_TEXT, self.text)
        return element(TEXT_GROUP, body)

    @classmethod
    def decode(cls, block: Reader, max_field: int = DEFAULT_MAX_FIELD) -> DocumentText:
        values: dict[str, object] = {"version": None}
        while not block.at_end():
            tag, value = block.element()
            if tag == T_DOCUMENT_ID:
                values["docid"] = capped(value, max_field, "the DocumentID of a text")
            elif tag == T_VERSION:
                values["version"] = as_num(value)
            elif tag == T_DOCUMENT_TEXT:
                values["text"] = value
        if "docid" not in values or "text" not in values:
            raise WaisDecodeError("a DocumentTextGroup lacks its DocumentID or its DocumentText")
        return cls(**values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SearchResponse:
    """SearchResponseAPDU.  SearchStatus and ResultCount mean nothing in practice (wais.md §5.6)."""

    headers: tuple[DocumentHeader, ...] = ()
    texts: tuple[DocumentText, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    search_status: int = 0
    result_count: int = 0
    #: None: computed as freeWAIS-sf does (records, plus one if there are diagnostics).  A count
    #: derived from the rest, so it takes no part in equality.
    records_returned: int | None = field(default=None, compare=False)
    next_result_set_position: int = 0
    result_set_status: int | None = None
    present_status: int | None = 0
    reference_id: bytes | None = None
    seed_words_used: str | None = None

    def encode(self) -> bytes:
        records = self.records_returned
        if records is None:
            records = len(self.headers) + len(self.texts) + (1 if self.diagnostics else 0)
        for value in (self.result_count, records, self.next_result_set_position):
            if not 0 <= value < 1 << 24:
                raise WaisEncodeError(f"count {value} does not fit 3 bytes")
        if not 0 <= self.search_status < 256:
            raise WaisEncodeError("SearchStatus is one byte")
        fields = (
            bytes([self.search_status])
            + self.result_count.to_bytes(3, "big")
            + records.to_bytes(3, "big")
            + self.next_result_set_position.to_bytes(3, "big")
            + num(T_RESULT_SET_STATUS, self.result_set_status)
            + num(T_PRESENT_STATUS, self.present_status)
            + (b"" if self.reference_id is None else element(T_REFERENCE_ID, self.reference_id))
        )
        info = (
            string(T_SEED_WORDS_USED, self.seed_words_used)
            + b"".join(header.encode() for header in self.headers)
            + b"".join(item.encode() for item in self.texts)
            + b"".join(diagnostic.encode() for diagnostic in self.diagnostics)
        )
        return frame(SEARCH_RESPONSE, fields, element(T_USER_INFO, info))

    @classmethod
    def decode(
        cls, data: bytes, *, max_records: int = DEFAULT_MAX_RECORDS, max_field: int = DEFAULT_MAX_FIELD
    ) -> SearchResponse:
        """The reply; `LimitExceeded` past `max_records` records (hits, texts, diagnostics) or a
        field (DocID, headline, diagnostic...) of more than `max_field` bytes."""
        kind, head, user = open_apdu(data)
        if kind != SEARCH_RESPONSE:
            raise WaisDecodeError(f"expected a SearchResponseAPDU (PDU type 23), got PDU type {kind}")
        values: dict[str, object] = {
            "search_status": head.integer(1, "SearchStatus"),
            "result_count": head.integer(3, "ResultCount"),
            "records_returned": head.integer(3, "NumberOfRecordsReturned"),
            "next_result_set_position": head.integer(3, "NextResultSetPosition"),
            "present_status": None,
        }
        while not head.at_end():
            tag, value = head.element()
            if tag == T_RESULT_SET_STATUS:
                values["result_set_status"] = as_num(value)
            elif tag == T_PRESENT_STATUS:
                values["present_status"] = as_num(value)
            elif tag == T_REFERENCE_ID:
                values["reference_id"] = value
            else:
                raise WaisDecodeError(f"unexpected tag {tag} in a SearchResponseAPDU")
        headers: list[DocumentHeader] = []
        texts: list[DocumentText] = []
        diagnostics: list[Diagnostic] = []
        if not user.at_end():
            tag, size = user.cint(), user.cint()
            if tag != T_USER_INFO:
                raise WaisDecodeError(f"the user information of a search response starts with tag {tag}, not 99")
            block = user.region(size)
            if not user.at_end():
                raise WaisDecodeError(f"{user.remaining} bytes follow the user information of a search response")
            while not block.at_end():
                if len(headers) + len(texts) + len(diagnostics) >= max_records:
                    raise LimitExceeded("records (hits) in one WAIS search response", max_records, "listing_entries")
                tag = block.peek_tag()
                if tag == T_DIAGNOSTIC:
                    diagnostics.append(Diagnostic.decode(block, max_field))
                    continue
                tag, value = block.element()
                if tag in HEADER_GROUPS:
                    headers.append(DocumentHeader.decode(tag, Reader(value), max_field))
                elif tag == TEXT_GROUP:
                    texts.append(DocumentText.decode(Reader(value), max_field))
                elif tag == T_SEED_WORDS_USED:
                    values["seed_words_used"] = as_text(capped(value, max_field, "the SeedWordsUsed"))
        return cls(tuple(headers), tuple(texts), tuple(diagnostics), **values)  # type: ignore[arg-type]

    def keep_headers(self, count: int) -> SearchResponse:
        """The same response with only the first `count` hits (how a server shrinks a reply to fit)."""
        return replace(self, headers=self.headers[:count], records_returned=None)

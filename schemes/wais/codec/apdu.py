"""APDU framing, Init/InitResponse and the SearchAPDU with both query types (wais.md §3.7, §5.1-§5.5).

An APDU body is a 2-byte header-length-indicator (HLI), the PDU type, a
fixed part and tagged optional fields (all counted by the HLI), then the
WAIS "user information" part that runs to the end of the message.  Each
class here encodes to and decodes from the APDU body (no 25-byte header).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fetcher.schemes.wais.codec.query import QueryItem, Retrieval, decode_query, encode_query, retrieval_query
from fetcher.schemes.wais.codec.wire import (
    DEFAULT_MAX_FIELD,
    Reader,
    WaisDecodeError,
    WaisEncodeError,
    as_num,
    as_text,
    bitmap,
    capped,
    element,
    num,
    string,
    unpack_bits,
)

INIT, INIT_RESPONSE, SEARCH, SEARCH_RESPONSE = 20, 21, 22, 23

# Z39.50-1988 tags (zutil.h) and the WAIS extension tags (wprot.h) this codec writes or reads.
T_REFERENCE_ID, T_PROTOCOL_VERSION, T_OPTIONS = 2, 3, 4
T_PREFERRED_SIZE, T_MAXIMUM_RECORD_SIZE = 5, 6
T_ID_AUTH, T_IMPL_ID, T_IMPL_NAME, T_IMPL_VERSION = 7, 8, 9, 10
T_RESULT_SET_NAME, T_DATABASE_NAMES, T_ELEMENT_SET_NAMES, T_QUERY_TYPE, T_QUERY = 17, 18, 19, 20, 21
T_RESULT_SET_STATUS, T_PRESENT_STATUS, T_DIAGNOSTIC = 26, 27, 28
T_USER_INFO = 99
T_CHUNK_CODE, T_CHUNK_ID_LENGTH, T_CHUNK_MARKER = 100, 101, 102
T_HIGHLIGHT, T_DEHIGHLIGHT, T_NEWLINE = 103, 104, 105
T_SEED_WORDS, T_DOCID_CHUNK, T_CHUNK_START, T_CHUNK_END = 106, 107, 108, 109
T_DATE_FACTOR, T_BEGIN_DATE, T_END_DATE, T_MAX_DOCUMENTS = 111, 112, 113, 114
T_DOCUMENT_ID, T_TYPE = 116, 133

#: The C library's message buffers; what every known client offers in Init.
DEFAULT_MESSAGE_SIZE = 100000
#: ElementSetNames of a retrieval: database part " ", then 0x1F and the element set.
DOCUMENT_TEXT_ELEMENTS = b" \x1fDocument Text"
#: ChunkCode values of relevance-feedback documents.
CHUNK_CODES = {"document": 0, "bytes": 1, "lines": 2, "paragraphs": 3}
CHUNK_NAMES = {code: name for name, code in CHUNK_CODES.items()}


def frame(pdu_type: int, fields: bytes, user_info: bytes = b"") -> bytes:
    """HLI + PDU type + fields (counted by the HLI) + user information (not counted)."""
    counted = bytes([pdu_type]) + fields
    if len(counted) > 0xFFFF:
        raise WaisEncodeError("the standard part of an APDU is limited to 65535 bytes")
    return len(counted).to_bytes(2, "big") + counted + user_info


def open_apdu(data: bytes) -> tuple[int, Reader, Reader]:
    """(PDU type, reader over the HLI-counted fields after it, reader over the user information)."""
    reader = Reader(data)
    hli = reader.integer(2, "the header-length-indicator")
    if hli == 0:
        raise WaisDecodeError("the header-length-indicator is 0: no PDU type")
    head = reader.region(hli)
    return head.integer(1, "the PDU type"), head, Reader(data, 2 + hli)


def pdu_type(data: bytes) -> int:
    return open_apdu(data)[0]


def _expect_type(found: int, wanted: int, name: str) -> None:
    if found != wanted:
        raise WaisDecodeError(f"expected a {name} (PDU type {wanted}), got PDU type {found}")


def _user_block(user: Reader, tag: int, what: str) -> Reader | None:
    """The one tagged block of the user information part, or None when there is none."""
    if user.at_end():
        return None
    found, size = user.cint(), user.cint()
    if found != tag:
        raise WaisDecodeError(f"the user information of {what} starts with tag {found}, not {tag}")
    block = user.region(size)
    if not user.at_end():
        raise WaisDecodeError(f"{user.remaining} bytes follow the user information of {what}")
    return block


# -- Init ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """The Options bitmap (5 bits); WAIS clients only ever offer searching."""

    will_search: bool = True
    will_present: bool = False
    will_delete: bool = False
    access_control: bool = False
    resource_control: bool = False

    def encode(self) -> bytes:
        bits = (self.will_search, self.will_present, self.will_delete, self.access_control, self.resource_control)
        return bitmap(T_OPTIONS, bits)

    @classmethod
    def decode(cls, value: bytes) -> Options:
        bits = (*unpack_bits(value), False, False, False, False, False)
        return cls(*bits[:5])


@dataclass(frozen=True)
class _Association:
    """What Init and InitResponse share: versions, options, sizes, implementation strings."""

    preferred_message_size: int = DEFAULT_MESSAGE_SIZE
    maximum_record_size: int = DEFAULT_MESSAGE_SIZE
    #: The ProtocolVersion bitmap bytes; 0x80 = version 1, the only one.
    protocol_version: bytes = b"\x80"
    options: Options = Options()
    id_authentication: str | None = None
    implementation_id: str | None = None
    implementation_name: str | None = None
    implementation_version: str | None = None
    reference_id: bytes | None = None

    def _fields(self) -> bytes:
        return (
            element(T_PROTOCOL_VERSION, self.protocol_version)
            + self.options.encode()
            + num(T_PREFERRED_SIZE, self.preferred_message_size)
            + num(T_MAXIMUM_RECORD_SIZE, self.maximum_record_size)
            + string(T_ID_AUTH, self.id_authentication)
            + string(T_IMPL_ID, self.implementation_id)
            + string(T_IMPL_NAME, self.implementation_name)
            + string(T_IMPL_VERSION, self.implementation_version)
            + (b"" if self.reference_id is None else element(T_REFERENCE_ID, self.reference_id))
        )


def _decode_association(head: Reader, max_field: int = DEFAULT_MAX_FIELD) -> dict[str, object]:
    """The fixed-order required fields, then the optional ones in any order."""
    values: dict[str, object] = {
        "protocol_version": head.expect(T_PROTOCOL_VERSION, "ProtocolVersion"),
        "options": Options.decode(head.expect(T_OPTIONS, "Options")),
        "preferred_message_size": as_num(head.expect(T_PREFERRED_SIZE, "PreferredMessageSize")),
        "maximum_record_size": as_num(head.expect(T_MAXIMUM_RECORD_SIZE, "MaximumRecordSize")),
    }
    names = {
        T_ID_AUTH: "id_authentication",
        T_IMPL_ID: "implementation_id",
        T_IMPL_NAME: "implementation_name",
        T_IMPL_VERSION: "implementation_version",
    }
    while not head.at_end():
        tag, value = head.element()
        if tag in names:
            values[names[tag]] = as_text(capped(value, max_field, names[tag].replace("_", " ")))
        elif tag == T_REFERENCE_ID:
            values["reference_id"] = value
        else:
            raise WaisDecodeError(f"unexpected tag {tag} in an Init APDU")
    return values


@dataclass(frozen=True)
class Init(_Association):
    """InitAPDU: offers sizes and search-only options; carries no user information."""

    def encode(self) -> bytes:
        return frame(INIT, self._fields())

    @classmethod
    def decode(cls, data: bytes) -> Init:
        kind, head, _user = open_apdu(data)
        _expect_type(kind, INIT, "InitAPDU")
        return cls(**_decode_association(head))  # type: ignore[arg-type]


@dataclass(frozen=True)
class InitResponse(_Association):
    """InitResponseAPDU; its WAIS block must always be sent (the C clients read it blindly)."""

    result: bool = True
    chunk_code: int | None = 0
    chunk_id_length: int | None = 0
    chunk_marker: str | None = None
    highlight_marker: str | None = None
    dehighlight_marker: str | None = None
    newline_characters: str | None = None

    def encode(self) -> bytes:
        info = (
            num(T_CHUNK_CODE, self.chunk_code)
            + num(T_CHUNK_ID_LENGTH, self.chunk_id_length)
            + string(T_CHUNK_MARKER, self.chunk_marker)
            + string(T_HIGHLIGHT, self.highlight_marker)
            + string(T_DEHIGHLIGHT, self.dehighlight_marker)
            + string(T_NEWLINE, self.newline_characters)
        )
        return frame(INIT_RESPONSE, bytes([1 if self.result else 0]) + self._fields(), element(T_USER_INFO, info))

    @classmethod
    def decode(cls, data: bytes, *, max_field: int = DEFAULT_MAX_FIELD) -> InitResponse:
        kind, head, user = open_apdu(data)
        _expect_type(kind, INIT_RESPONSE, "InitResponseAPDU")
        values: dict[str, object] = {"result": head.fixed(1, "the Result byte") == b"\x01"}
        values.update(_decode_association(head, max_field))
        values["chunk_code"] = values["chunk_id_length"] = None
        block = _user_block(user, T_USER_INFO, "an InitResponse")
        numbers = {T_CHUNK_CODE: "chunk_code", T_CHUNK_ID_LENGTH: "chunk_id_length"}
        strings = {
            T_CHUNK_MARKER: "chunk_marker",
            T_HIGHLIGHT: "highlight_marker",
            T_DEHIGHLIGHT: "dehighlight_marker",
            T_NEWLINE: "newline_characters",
        }
        while block is not None and not block.at_end():
            tag, value = block.element()
            if tag in numbers:
                values[numbers[tag]] = as_num(value)
            elif tag in strings:
                values[strings[tag]] = as_text(capped(value, max_field, strings[tag].replace("_", " ")))
        return cls(**values)  # type: ignore[arg-type]


# -- Search: the type-3 WAIS search information ------------------------------------


@dataclass(frozen=True)
class RelevantDocument:
    """A document seeding a relevance-feedback search: whole, or a chunk of it (wais.md §5.4)."""

    docid: bytes
    type: str | None = None
    chunk: str = "document"
    #: Byte or line numbers for "bytes"/"lines"; paragraph ids (bytes) for "paragraphs".
    start: int | bytes | None = None
    end: int | bytes | None = None

    def encode(self) -> bytes:
        if self.chunk not in CHUNK_CODES:
            raise WaisEncodeError(f"unknown chunk kind {self.chunk!r}")
        if self.chunk == "document":
            return element(T_DOCUMENT_ID, self.docid) + string(T_TYPE, self.type)
        out = element(T_DOCID_CHUNK, self.docid) + string(T_TYPE, self.type)
        out += num(T_CHUNK_CODE, CHUNK_CODES[self.chunk])
        for tag, bound in ((T_CHUNK_START, self.start), (T_CHUNK_END, self.end)):
            if isinstance(bound, int):
                out += num(tag, bound)
            elif bound is not None:
                out += element(tag, bound)
        return out


@dataclass(frozen=True)
class SearchInfo:
    """The WAIS part of a type-3 search, in the order waissearch writes it."""

    seed_words: str | None = ""
    documents: tuple[RelevantDocument, ...] = ()
    date_factor: int | None = 1
    begin_date_range: str | None = None
    end_date_range: str | None = None
    max_documents: int | None = 40

    def encode(self) -> bytes:
        return element(
            T_USER_INFO,
            string(T_SEED_WORDS, self.seed_words)
            + b"".join(document.encode() for document in self.documents)
            + num(T_DATE_FACTOR, self.date_factor)
            + string(T_BEGIN_DATE, self.begin_date_range)
            + string(T_END_DATE, self.end_date_range)
            + num(T_MAX_DOCUMENTS, self.max_documents),
        )

    @classmethod
    def decode(cls, block: Reader) -> SearchInfo:
        values: dict[str, object] = {"seed_words": None, "date_factor": None, "max_documents": None}
        documents: list[dict[str, object]] = []
        while not block.at_end():
            tag, value = block.element()
            if tag in (T_DOCUMENT_ID, T_DOCID_CHUNK):
                documents.append({"docid": value, "chunk": "document" if tag == T_DOCUMENT_ID else "bytes"})
            elif tag in (T_TYPE, T_CHUNK_CODE, T_CHUNK_START, T_CHUNK_END):
                if not documents:
                    raise WaisDecodeError(f"tag {tag} before any document in the search information")
                current = documents[-1]
                if tag == T_TYPE:
                    current["type"] = as_text(value)
                elif tag == T_CHUNK_CODE:
                    code = as_num(value)
                    if code not in CHUNK_NAMES:
                        raise WaisDecodeError(f"unknown ChunkCode {code}")
                    current["chunk"] = CHUNK_NAMES[code]
                else:
                    bound = value if current["chunk"] == "paragraphs" else as_num(value)
                    current["start" if tag == T_CHUNK_START else "end"] = bound
            elif tag == T_SEED_WORDS:
                values["seed_words"] = as_text(value)
            elif tag == T_DATE_FACTOR:
                values["date_factor"] = as_num(value)
            elif tag == T_BEGIN_DATE:
                values["begin_date_range"] = as_text(value)
            elif tag == T_END_DATE:
                values["end_date_range"] = as_text(value)
            elif tag == T_MAX_DOCUMENTS:
                values["max_documents"] = as_num(value)
        values["documents"] = tuple(RelevantDocument(**document) for document in documents)  # type: ignore[arg-type]
        return cls(**values)  # type: ignore[arg-type]


# -- the SearchAPDU ----------------------------------------------------------------


@dataclass(frozen=True)
class Search:
    """SearchAPDU: a word search (query type "3") or a retrieval (query type "1")."""

    database: str | None
    query_type: str | None
    small_set_upper_bound: int = 30
    large_set_lower_bound: int = 5000
    medium_set_present_number: int = 30
    replace_indicator: bool = True
    result_set_name: str | None = ""
    element_set_names: bytes | None = None
    reference_id: bytes | None = None
    info: SearchInfo | None = None
    query: tuple[QueryItem, ...] | None = None

    def encode(self) -> bytes:
        for bound in (self.small_set_upper_bound, self.large_set_lower_bound, self.medium_set_present_number):
            if not 0 <= bound < 1 << 24:
                raise WaisEncodeError(f"set bound {bound} does not fit 3 bytes")
        fields = (
            self.small_set_upper_bound.to_bytes(3, "big")
            + self.large_set_lower_bound.to_bytes(3, "big")
            + self.medium_set_present_number.to_bytes(3, "big")
            + (b"\x01" if self.replace_indicator else b"\x00")
            + string(T_RESULT_SET_NAME, self.result_set_name)
            + string(T_DATABASE_NAMES, self.database)
            + string(T_QUERY_TYPE, self.query_type)
            + (b"" if self.element_set_names is None else element(T_ELEMENT_SET_NAMES, self.element_set_names))
            + (b"" if self.reference_id is None else element(T_REFERENCE_ID, self.reference_id))
        )
        if self.info is not None and self.query is not None:
            raise WaisEncodeError("a SearchAPDU carries WAIS search information or a type-1 query, not both")
        user = b""
        if self.info is not None:
            user = self.info.encode()
        elif self.query is not None:
            user = element(T_QUERY, encode_query(self.query))
        return frame(SEARCH, fields, user)

    @classmethod
    def decode(cls, data: bytes) -> Search:
        kind, head, user = open_apdu(data)
        _expect_type(kind, SEARCH, "SearchAPDU")
        values: dict[str, object] = {
            "small_set_upper_bound": head.integer(3, "SmallSetUpperBound"),
            "large_set_lower_bound": head.integer(3, "LargeSetLowerBound"),
            "medium_set_present_number": head.integer(3, "MediumSetPresentNumber"),
            "replace_indicator": head.fixed(1, "ReplaceIndicator") == b"\x01",
            "result_set_name": None,
            "database": None,
            "query_type": None,
        }
        strings = {T_RESULT_SET_NAME: "result_set_name", T_DATABASE_NAMES: "database", T_QUERY_TYPE: "query_type"}
        while not head.at_end():
            tag, value = head.element()
            if tag in strings:
                values[strings[tag]] = as_text(value)
            elif tag == T_ELEMENT_SET_NAMES:
                values["element_set_names"] = value
            elif tag == T_REFERENCE_ID:
                values["reference_id"] = value
            else:
                raise WaisDecodeError(f"unexpected tag {tag} in a SearchAPDU")
        if not user.at_end():
            tag = user.peek_tag()
            if tag == T_USER_INFO:
                block = _user_block(user, T_USER_INFO, "a search")
                assert block is not None
                values["info"] = SearchInfo.decode(block)
            else:
                block = _user_block(user, T_QUERY, "a search")
                assert block is not None
                values["query"] = decode_query(block)
        return cls(**values)  # type: ignore[arg-type]


def word_search(
    database: str | None,
    words: str,
    *,
    relevant: Iterable[RelevantDocument] = (),
    max_documents: int = 40,
) -> Search:
    """The type-3 search waissearch sends (wais.md §5.4)."""
    info = SearchInfo(seed_words=words, documents=tuple(relevant), max_documents=max_documents)
    return Search(database=database, query_type="3", info=info)


def retrieval_search(database: str | None, retrievals: Iterable[Retrieval]) -> Search:
    """The type-1 retrieval waissearch sends (wais.md §5.5): fixed 10/16/15, "FOO", Document Text, "3"."""
    return Search(
        database=database,
        query_type="1",
        small_set_upper_bound=10,
        large_set_lower_bound=16,
        medium_set_present_number=15,
        result_set_name="FOO",
        element_set_names=DOCUMENT_TEXT_ELEMENTS,
        reference_id=b"3",
        query=retrieval_query(retrievals),
    )

"""The pure WAIS codec (Z39.50-1988 with the WAIS extensions), shared by the client and the test server.

`wire` holds the header and the encoding primitives, `apdu` the requests
(Init, Search with type-3 search information or a type-1 retrieval query)
and InitResponse, `query` the type-1 retrieval query, `response` the SearchResponse with its headers, texts and
diagnostics, `docid` the DocID and its URL form.  No I/O anywhere.
"""

from __future__ import annotations

from fetcher.errors import LimitExceeded
from fetcher.schemes.wais.codec.apdu import (
    DEFAULT_MESSAGE_SIZE,
    INIT,
    INIT_RESPONSE,
    SEARCH,
    SEARCH_RESPONSE,
    Init,
    InitResponse,
    Options,
    RelevantDocument,
    Search,
    SearchInfo,
    pdu_type,
    retrieval_search,
    word_search,
)
from fetcher.schemes.wais.codec.docid import (
    DocID,
    docid_from_string,
    docid_to_string,
    freewais_docid,
    media_type,
    split_wpath,
)
from fetcher.schemes.wais.codec.query import Operator, QueryItem, Retrieval, Term, parse_retrievals, retrieval_query
from fetcher.schemes.wais.codec.response import Diagnostic, DocumentHeader, DocumentText, SearchResponse
from fetcher.schemes.wais.codec.wire import (
    DEFAULT_MAX_APDU,
    DEFAULT_MAX_FIELD,
    DEFAULT_MAX_RECORDS,
    HEADER_SIZE,
    Header,
    WaisDecodeError,
    WaisEncodeError,
    decode_cint,
    decode_header,
    encode_cint,
    message,
)

APDU = Init | InitResponse | Search | SearchResponse


def decode_apdu(
    data: bytes,
    *,
    max_apdu: int = DEFAULT_MAX_APDU,
    max_records: int = DEFAULT_MAX_RECORDS,
    max_field: int = DEFAULT_MAX_FIELD,
) -> APDU:
    """Any APDU body, by its PDU type; other types are a decode error.

    Past a cap (the whole APDU, the records of a search response, one field
    of a reply) it raises `fetcher.errors.LimitExceeded`.
    """
    if len(data) > max_apdu:
        raise LimitExceeded("bytes in one WAIS message (APDU)", max_apdu, "wais_apdu_bytes")
    kind = pdu_type(data)
    if kind == INIT:
        return Init.decode(data)
    if kind == INIT_RESPONSE:
        return InitResponse.decode(data, max_field=max_field)
    if kind == SEARCH:
        return Search.decode(data)
    if kind == SEARCH_RESPONSE:
        return SearchResponse.decode(data, max_records=max_records, max_field=max_field)
    raise WaisDecodeError(f"PDU type {kind} is not one WAIS uses")


__all__ = [
    "APDU",
    "DEFAULT_MAX_APDU",
    "DEFAULT_MAX_FIELD",
    "DEFAULT_MAX_RECORDS",
    "DEFAULT_MESSAGE_SIZE",
    "HEADER_SIZE",
    "Diagnostic",
    "DocID",
    "DocumentHeader",
    "DocumentText",
    "Header",
    "Init",
    "InitResponse",
    "Operator",
    "Options",
    "QueryItem",
    "RelevantDocument",
    "Retrieval",
    "Search",
    "SearchInfo",
    "SearchResponse",
    "Term",
    "WaisDecodeError",
    "WaisEncodeError",
    "decode_apdu",
    "decode_cint",
    "decode_header",
    "docid_from_string",
    "docid_to_string",
    "encode_cint",
    "freewais_docid",
    "media_type",
    "message",
    "parse_retrievals",
    "pdu_type",
    "retrieval_query",
    "retrieval_search",
    "split_wpath",
    "word_search",
]

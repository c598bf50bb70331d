"""The pure WAIS codec: the byte-exact vectors of wais.md §3, §5, §6, §8 and §10, round trips, fuzzing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.schemes.wais.codec import (
    Diagnostic,
    DocID,
    DocumentHeader,
    DocumentText,
    Header,
    Init,
    InitResponse,
    Operator,
    RelevantDocument,
    Retrieval,
    Search,
    SearchInfo,
    SearchResponse,
    Term,
    WaisDecodeError,
    WaisEncodeError,
    decode_apdu,
    decode_cint,
    decode_header,
    docid_from_string,
    docid_to_string,
    encode_cint,
    freewais_docid,
    media_type,
    message,
    parse_retrievals,
    retrieval_search,
    split_wpath,
    word_search,
)
from fetcher.schemes.wais.codec.apdu import Options
from fetcher.schemes.wais.codec.wire import Reader, bitmap, num

H = bytes.fromhex
WAISSEARCH_ID = "waissearch freeWAIS-sf 2.2.8 string, from host: vm.unknown, user: root"
LS6 = {
    "implementation_id": "LS6",
    "implementation_name": "University of Dortmund Informatik VI",
    "implementation_version": "2.2.8 string",
}
# wais.md §6: the 133-byte DocID of the apples.txt hit.
APPLES_DOCID = (
    b"\x01\x06vm:210\x02\x14/tmp/wais/idx/testdb\x03\x210 187 /tmp/wais/corpus/apples.txt"
    b"\x04\x06vm:210\x05\x14/tmp/wais/idx/testdb\x06\x210 187 /tmp/wais/corpus/apples.txt\x07\x01\x00"
)
APPLES_STRING = (
    "1=vm%3A210;2=/tmp/wais/idx/testdb;3=0%20187%20/tmp/wais/corpus/apples.txt;4=vm%3A210;"
    "5=/tmp/wais/idx/testdb;6=0%20187%20/tmp/wais/corpus/apples.txt;7=%00;"
)


# -- §3: primitives ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "wire"),
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8100"), (150, "8116"), (235, "816b"), (444, "833c"),
     (10148, "cf24"), (16383, "ff7f"), (16384, "818000"), (100000, "868d20")],
)  # fmt: skip
def test_compressed_integers_of_section_3_1(value: int, wire: str) -> None:
    assert encode_cint(value) == H(wire)
    assert decode_cint(H(wire)) == (value, len(H(wire)))


def test_compressed_integer_padding_is_accepted_and_limits_hold() -> None:
    assert decode_cint(H("808081 16")) == (150, 4)
    with pytest.raises(WaisDecodeError, match="past the end"):
        decode_cint(H("8181"))
    with pytest.raises(WaisEncodeError):
        encode_cint(1 << 28)


def test_numbers_and_bitmaps_of_sections_3_3_and_3_6() -> None:
    assert num(118, 257) == H("76020101")
    assert num(114, 40) == H("720128")
    assert num(5, 100000) == H("0503 0186a0")
    assert num(5, None) == b""
    assert bitmap(3, (True,)) == H("030180")
    assert Options().encode() == H("040180")
    assert Options.decode(H("f8")) == Options(True, True, True, True, True)


def test_type_block_of_section_5_6() -> None:
    header = DocumentHeader(b"d", types=("TEXT",), source="s")
    assert H("8104 07 8105 04 54455854") + H("7901") + b"s" in header.encode()


# -- §10.1-3: Init ---------------------------------------------------------------------


def test_vector_1_minimal_init() -> None:
    wire = H("303030303030303031397a327761697320202020202020203000111403018004018005030186a006030186a0")
    assert message(Init().encode()) == wire
    assert len(wire) == 44
    assert decode_header(wire[:25]) == Header(19)
    assert Init.decode(wire[25:]) == Init()


def test_vector_2_waissearch_init() -> None:
    init = Init(id_authentication=WAISSEARCH_ID, **LS6)
    apdu = (
        H("0092 14 030180 040180 05030186a0 06030186a0 0746")
        + WAISSEARCH_ID.encode()
        + H("0803")
        + b"LS6"
        + H("0924")
        + b"University of Dortmund Informatik VI"
        + H("0a0c")
        + b"2.2.8 string"
    )
    wire = message(init.encode())
    assert wire == b"0000000148z2wais        0" + apdu
    assert len(wire) == 173
    assert Init.decode(apdu) == init


def test_vector_3_init_response() -> None:
    apdu = (
        H("004b 15 01 030180 040180 05030186a0 06030186a0 0803")
        + b"LS6"
        + H("0924")
        + b"University of Dortmund Informatik VI"
        + H("0a0c")
        + b"2.2.8 string"
        + H("6306 640100 650100")
    )
    response = InitResponse(**LS6)
    wire = message(response.encode())
    assert wire == b"0000000085z2wais        0" + apdu
    assert len(wire) == 110
    decoded = InitResponse.decode(apdu)
    assert decoded == response
    assert decoded.result and decoded.maximum_record_size == 100000 and decoded.chunk_code == 0


def test_init_response_rejection_and_missing_wais_block() -> None:
    refused = InitResponse(result=False, options=Options(will_present=True))
    assert InitResponse.decode(refused.encode()) == refused
    bare = H("0012 15 00 030180 040180 05030186a0 06030186a0")
    decoded = InitResponse.decode(bare)
    assert not decoded.result and decoded.chunk_code is None


# -- §10.4-7: search and retrieval ---------------------------------------------------


def test_vector_4_word_search() -> None:
    header = H("303030303030303034317a3277616973202020202020202030")
    apdu = H("00181600001e00138800001e0111001206746573746462140133630d6a056170706c656f0101720128")
    assert message(word_search("testdb", "apple").encode()) == header + apdu
    assert word_search("testdb", "apple", max_documents=10).encode() == apdu[:-1] + b"\x0a"
    decoded = Search.decode(apdu)
    assert decoded == word_search("testdb", "apple")
    assert decoded.info == SearchInfo(seed_words="apple", date_factor=1, max_documents=40)


def _apples_header() -> DocumentHeader:
    return DocumentHeader(
        APPLES_DOCID,
        score=257,
        best_match=0,
        length=187,
        lines=4,
        types=("TEXT",),
        source="/tmp/wais/idx/testdb",
        date="0",
        headline="apples.txt   /tmp/wais/corpus/",
    )


def test_vector_5_search_response() -> None:
    """The 488-byte reply: the first hit is given byte for byte in §5.6; of the second (bananas.txt,
    score 196, a 219-byte group) wais.md gives the sizes, so its length and line count are stand-ins."""
    bananas_docid = freewais_docid("vm:210", "/tmp/wais/idx/testdb", "0 150 /tmp/wais/corpus/bananas.txt")
    bananas = DocumentHeader(
        bananas_docid,
        score=196,
        best_match=0,
        length=150,
        lines=3,
        types=("TEXT",),
        source="/tmp/wais/idx/testdb",
        date="0",
        headline="bananas.txt   /tmp/wais/corpus/",
    )
    response = SearchResponse(headers=(_apples_header(), bananas), search_status=1, records_returned=2)
    wire = message(response.encode())
    first_hit = (
        H("8116 8159 748105")
        + APPLES_DOCID
        + H("76020101 770100 7801bb 81030104 8104078105 0454455854 7914")
        + b"/tmp/wais/idx/testdb"
        + H("7a0130 7b1e")
        + b"apples.txt   /tmp/wais/corpus/"
    )
    fixed = H("000e 17 01 000000 000002 000000 1b0100 63833c")
    assert wire.startswith(b"0000000463z2wais        0" + fixed + first_hit)
    assert wire[25 + 19 + len(first_hit) :].startswith(H("8116 815b"))
    assert len(wire) == 488
    decoded = SearchResponse.decode(wire[25:])
    assert decoded == response
    assert [h.score for h in decoded.headers] == [257, 196]


def test_vector_6_retrieval_request() -> None:
    query = (
        H("2c11") + b"un re ig ig ig ig" + H("2d8105") + APPLES_DOCID
        + H("2c11") + b"wt re ig ig ig ig" + H("2d04") + b"TEXT" + H("2e0161")
        + H("2c11") + b"wb ro ig ig ig ig" + H("2d01") + b"0" + H("2e0161")
        + H("2c11") + b"wb rl ig ig ig ig" + H("2d03") + b"187" + H("2e0161")
    )  # fmt: skip
    apdu = (
        H("002f 16 00000a 000010 00000f 01 1103")
        + b"FOO"
        + H("1206")
        + b"testdb"
        + H("140131 130f 201f")
        + b"Document Text"
        + H("020133 15816b")
        + query
    )
    search = retrieval_search("testdb", [Retrieval(APPLES_DOCID, "TEXT", 0, 187)])
    wire = message(search.encode())
    assert wire == b"0000000287z2wais        0" + apdu
    assert len(wire) == 312
    decoded = Search.decode(apdu)
    assert decoded == search
    assert decoded.query is not None
    assert parse_retrievals(decoded.query) == [Retrieval(APPLES_DOCID, "TEXT", 0, 187)]


def test_vector_7_retrieval_response() -> None:
    """The 380-byte reply; wais.md does not reproduce apples.txt, so its 187 bytes are a stand-in."""
    document = bytes(range(187))
    response = SearchResponse(texts=(DocumentText(APPLES_DOCID, document),), reference_id=b"3")
    wire = message(response.encode())
    expected = (
        b"0000000355z2wais        0"
        + H("0011 17 00 000000 000001 000000 1b0100 020133 63824d 81198249 748105")
        + APPLES_DOCID
        + H("750100 7f813b")
        + document
    )
    assert wire == expected
    assert len(wire) == 380
    assert SearchResponse.decode(wire[25:]) == response


def test_vector_8_unknown_database() -> None:
    wire = H(
        "303030303030303038387a3277616973202020202020202030000e17000000000000010000001b010063461c004253315468"
        "6520666f6c6c6f77696e67206461746162617365206973206e6f7420617661696c61626c653a202f746d702f776169732f69"
        "64782f6e6f737563686462001d"
    )
    diagnostic = Diagnostic("S1", "The following database is not available: /tmp/wais/idx/nosuchdb")
    assert message(SearchResponse(diagnostics=(diagnostic,)).encode()) == wire
    assert len(wire) == 113
    decoded = SearchResponse.decode(wire[25:])
    assert decoded.diagnostics == (diagnostic,) and decoded.headers == ()
    assert diagnostic.kind == "missing"


def test_vector_9_range_beyond_end() -> None:
    wire = H(
        "303030303030303034387a3277616973202020202020202030001117000000000000010000001b0100020133631b1c001753"
        "4652657175657374206f7574206f662072616e6765011d"
    )
    diagnostic = Diagnostic("SF", "Request out of range", surrogate=True)
    assert message(SearchResponse(diagnostics=(diagnostic,), reference_id=b"3").encode()) == wire
    assert len(wire) == 73
    assert SearchResponse.decode(wire[25:]).diagnostics == (diagnostic,)
    assert diagnostic.kind == "end"


def test_vector_10_zero_length_reply() -> None:
    wire = H("303030303030303030307a3277616973202020202020202030")
    assert wire == b"0000000000z2wais        0"
    assert Header(0).encode() == wire
    assert decode_header(wire).length == 0


def test_server_reply_header_copies_the_request_flags() -> None:
    request = decode_header(b"0000000019Z2ServerNameUI7")
    assert request == Header(19, "z", "2", b"ServerName", "u", "i", "7")
    assert message(b"xy", request) == b"0000000002z2ServerNameui0xy"


# -- §6 and §8: DocIDs and their URL form ----------------------------------------------


def test_docid_of_section_6_and_lynx_string_of_section_8_2() -> None:
    assert len(APPLES_DOCID) == 133
    assert freewais_docid("vm:210", "/tmp/wais/idx/testdb", "0 187 /tmp/wais/corpus/apples.txt") == APPLES_DOCID
    parsed = DocID.decode(APPLES_DOCID)
    assert parsed.server == "vm:210" and parsed.local_id == "0 187 /tmp/wais/corpus/apples.txt"
    assert docid_to_string(APPLES_DOCID) == APPLES_STRING
    assert docid_from_string(APPLES_STRING) == APPLES_DOCID
    assert split_wpath("187/" + APPLES_STRING) == (187, APPLES_DOCID)
    assert split_wpath(APPLES_STRING) == (None, APPLES_DOCID)


def test_opaque_docids_use_the_verbatim_record() -> None:
    for opaque in (b"\xff\x00;=%", b"\x80\x01\x01x", b"\x00\x01a"):
        text = docid_to_string(opaque)
        assert text.startswith("0=")
        assert docid_from_string(text) == opaque
    with pytest.raises(WaisDecodeError):
        docid_from_string("0=a;1=b;")


@pytest.mark.parametrize("bad", ["", ";", "x=1;", "1=%4;", "1=%zz;", "=1;", "1=a%"])
def test_malformed_docid_strings_are_refused(bad: str) -> None:
    with pytest.raises(WaisDecodeError):
        docid_from_string(bad)


def test_media_types_of_section_8_3() -> None:
    assert media_type("WSRC") == "application/x-wais-source"
    assert media_type("TEXT") == "text/plain"
    assert media_type("HTML") == "text/html"
    assert media_type("GIF") == "image/gif"
    assert media_type("PS") == "application/octet-stream"


# -- retrieval queries and relevance feedback ----------------------------------------


def test_several_documents_in_one_retrieval_need_or_operators() -> None:
    wanted = [Retrieval(b"a", "TEXT", 0, 10), Retrieval(b"b", "TEXT", 5, 9, "lines"), Retrieval(b"c", "GIF", 1, 2)]
    search = Search.decode(retrieval_search("db", wanted).encode())
    assert search.query is not None
    assert search.query.count(Operator("o")) == 2
    assert parse_retrievals(search.query) == wanted


@pytest.mark.parametrize(
    "query",
    [
        (Term("un re ig ig ig ig", b"d"),),
        (Term("un re ig ig ig ig", b"d"), Term("wb ro ig ig ig ig", b"0"), Operator("a"),
         Term("wb ro ig ig ig ig", b"0"), Operator("a"), Term("wb rl ig ig ig ig", b"9"), Operator("a")),
        (*Retrieval(b"d", "TEXT", 0, 1).terms()[:5], Term("wb rl ig ig ig ig", b"x"), Operator("a")),
        (*Retrieval(b"d", "TEXT", 0, 1).terms()[:3], Term("wp ro ig ig ig ig", b"p1"), *(Operator("a"),) * 3),
    ],
)  # fmt: skip
def test_retrieval_queries_freewais_cannot_parse_are_refused(query: tuple[Term | Operator, ...]) -> None:
    with pytest.raises(WaisDecodeError):
        parse_retrievals(query)


def test_relevance_feedback_documents_round_trip() -> None:
    relevant = (
        RelevantDocument(APPLES_DOCID, "TEXT"),
        RelevantDocument(b"x", None, "bytes", 10, 200),
        RelevantDocument(b"y", "TEXT", "paragraphs", b"p1", b"p9"),
    )
    search = word_search("testdb", "fruit", relevant=relevant, max_documents=7)
    encoded = search.encode()
    assert H("7481 05") + APPLES_DOCID + H("8105 04") + b"TEXT" in encoded
    assert H("6b01") + b"x" + H("640101 6c010a 6d01c8") in encoded
    assert Search.decode(encoded) == search


# -- round trips and fuzzing ------------------------------------------------------------

texts = st.text(max_size=30)
blobs = st.binary(max_size=60)
maybe_text = st.none() | texts
maybe_num = st.none() | st.integers(0, 2**32 - 1)


@st.composite
def headers(draw: st.DrawFn) -> DocumentHeader:
    types = tuple(draw(st.lists(st.sampled_from(["TEXT", "WSRC", "GIF", "HTML"]), max_size=3)))
    source = draw(texts) if types else draw(maybe_text)
    return DocumentHeader(
        draw(blobs),
        draw(maybe_num),
        draw(maybe_num),
        draw(maybe_num),
        draw(maybe_num),
        draw(maybe_num),
        types,
        source,
        *(draw(maybe_text) for _ in range(6)),
        group=draw(st.sampled_from([150, 151, 152, 154, 155])),
    )


diagnostics = st.builds(Diagnostic, st.text("ST0123456789ABCDEFGH", min_size=2, max_size=2), texts, st.booleans())
responses = st.builds(
    SearchResponse,
    st.lists(headers(), max_size=3).map(tuple),
    st.lists(st.builds(DocumentText, blobs, blobs, maybe_num), max_size=2).map(tuple),
    st.lists(diagnostics, max_size=2).map(tuple),
    st.integers(0, 255),
    st.integers(0, 2**24 - 1),
    st.integers(0, 2**24 - 1),
    st.integers(0, 2**24 - 1),
    maybe_num,
    maybe_num,
    st.none() | blobs,
    maybe_text,
)


@given(responses)
def test_search_responses_round_trip(response: SearchResponse) -> None:
    assert SearchResponse.decode(response.encode()) == response


@given(
    st.none() | texts,
    texts,
    st.lists(st.builds(RelevantDocument, blobs, maybe_text), max_size=3),
    st.integers(0, 10**6),
)
def test_word_searches_round_trip(database: str | None, words: str, relevant: list[RelevantDocument],
                                  hits: int) -> None:  # fmt: skip
    search = word_search(database, words, relevant=relevant, max_documents=hits)
    assert Search.decode(search.encode()) == search


@given(st.lists(st.builds(Retrieval, blobs, texts, st.integers(0, 10**9), st.integers(0, 10**9)), min_size=1))
def test_retrievals_round_trip(wanted: list[Retrieval]) -> None:
    decoded = Search.decode(retrieval_search("db", wanted).encode())
    assert decoded.query is not None and parse_retrievals(decoded.query) == wanted


@given(st.builds(Init, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), blobs, st.builds(Options),
                 maybe_text, maybe_text, maybe_text, maybe_text, st.none() | blobs))  # fmt: skip
def test_inits_round_trip(init: Init) -> None:
    assert Init.decode(init.encode()) == init
    response = InitResponse(**{name: getattr(init, name) for name in init.__dataclass_fields__})
    assert InitResponse.decode(response.encode()) == response


@given(st.lists(st.tuples(st.integers(1, 300), st.binary(max_size=200)), min_size=1, max_size=8))
def test_docid_strings_round_trip(records: list[tuple[int, bytes]]) -> None:
    docid = DocID(tuple(records)).encode()
    text = docid_to_string(docid)
    assert docid_from_string(text) == docid
    assert all(ch.isalnum() or ch in "./-_$%=;" for ch in text)


@given(st.binary(max_size=300))
def test_any_docid_bytes_round_trip_through_a_url(docid: bytes) -> None:
    assert docid_from_string(docid_to_string(docid)) == docid


def _defined(decoder: Callable[[bytes], object], data: bytes) -> None:
    try:
        decoder(data)
    except WaisDecodeError:
        pass


DECODERS: list[Callable[[bytes], object]] = [
    decode_apdu,
    Init.decode,
    InitResponse.decode,
    Search.decode,
    SearchResponse.decode,
    DocID.decode,
    lambda data: decode_header(data[:25]),
    lambda data: decode_cint(data),
    lambda data: Diagnostic.decode(Reader(data)),
    lambda data: docid_from_string(data.decode("latin-1")),
    lambda data: split_wpath(data.decode("latin-1")),
]
VALID = [
    Init(id_authentication="x").encode(),
    InitResponse(**LS6).encode(),
    word_search("testdb", "apple", relevant=[RelevantDocument(b"d", "TEXT", "lines", 1, 2)]).encode(),
    retrieval_search("db", [Retrieval(APPLES_DOCID, "TEXT", 0, 10000)]).encode(),
    SearchResponse(headers=(_apples_header(),), diagnostics=(Diagnostic("S1", "x"),)).encode(),
    SearchResponse(texts=(DocumentText(b"d", b"text"),), reference_id=b"3").encode(),
]


@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400))
def test_every_decoder_gives_a_value_or_a_decode_error(decoder: Callable[[bytes], object], data: bytes) -> None:
    _defined(decoder, data)


@settings(max_examples=500)
@given(st.sampled_from(VALID), st.data())
def test_damaged_messages_give_a_value_or_a_decode_error(valid: bytes, data: st.DataObject) -> None:
    damaged = bytearray(valid)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(damaged) - 1))
        damaged[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(damaged)))
    _defined(decode_apdu, bytes(damaged))
    _defined(decode_apdu, bytes(damaged[:cut]))
    decoded = _retrievals_of(bytes(damaged))
    assert decoded is None or isinstance(decoded, list)


def _retrievals_of(data: bytes) -> list[Retrieval] | None:
    try:
        search = Search.decode(data)
        return parse_retrievals(search.query) if search.query is not None else None
    except WaisDecodeError:
        return None


def test_encoders_refuse_what_cannot_be_written() -> None:
    with pytest.raises(WaisEncodeError):
        Diagnostic("S", "x").encode()
    with pytest.raises(WaisEncodeError):
        Search("db", "3", small_set_upper_bound=1 << 24).encode()
    with pytest.raises(WaisEncodeError):
        Retrieval(b"d", "TEXT", 0, 1, "paragraphs").terms()
    with pytest.raises(WaisEncodeError):
        Header(10**10).encode()

"""Fuzzing the WAIS decoder at its caps (tests/test_wais_codec.py fuzzes it at the defaults).

Any bytes in: a value within every cap, or `WaisDecodeError` / `LimitExceeded`
out, nothing else; and a length the server announces is never allocated
before the bytes are there.
"""

from __future__ import annotations

import tracemalloc

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.errors import LimitExceeded
from fetcher.schemes.wais.codec import (
    Diagnostic,
    DocumentHeader,
    InitResponse,
    SearchResponse,
    WaisDecodeError,
    decode_apdu,
    encode_cint,
)
from fetcher.schemes.wais.codec.apdu import SEARCH_RESPONSE, T_USER_INFO, frame

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
texts = st.text(max_size=40)


def within_caps(value: object, records: int, field: int) -> None:
    if isinstance(value, SearchResponse):
        assert len(value.headers) + len(value.texts) + len(value.diagnostics) <= records
        for header in value.headers:
            assert len(header.docid) <= field
            for text in (header.headline, header.source, header.date, header.origin_city):
                assert text is None or len(text.encode("utf-8", "surrogateescape")) <= field
        for diagnostic in value.diagnostics:
            assert len(diagnostic.addinfo.encode("utf-8", "surrogateescape")) <= field
    if isinstance(value, InitResponse):
        for text in (value.implementation_id, value.implementation_name, value.chunk_marker):
            assert text is None or len(text.encode("utf-8", "surrogateescape")) <= field


@FUZZ
@given(st.binary(max_size=600), st.integers(1, 700), st.integers(0, 5), st.integers(0, 40))
def test_any_bytes_give_a_value_within_the_caps_or_a_defined_error(
    data: bytes, apdu: int, records: int, field: int
) -> None:
    try:
        value = decode_apdu(data, max_apdu=apdu, max_records=records, max_field=field)
    except (WaisDecodeError, LimitExceeded):
        return
    assert len(data) <= apdu
    within_caps(value, records, field)


headers = st.builds(DocumentHeader, st.binary(min_size=1, max_size=30), headline=st.none() | texts,
                    source=st.none() | texts, score=st.none() | st.integers(0, 1000))  # fmt: skip
diagnostics = st.builds(Diagnostic, st.sampled_from(["S1", "S5", "D2"]), texts)


@FUZZ
@given(st.lists(headers, max_size=12), st.lists(diagnostics, max_size=3), st.integers(0, 15), st.integers(0, 60))
def test_hit_lists_and_fields_stop_exactly_at_their_caps(
    hits: list[DocumentHeader], notes: list[Diagnostic], records: int, field: int
) -> None:
    response = SearchResponse(headers=tuple(hits), diagnostics=tuple(notes))
    encoded = response.encode()
    try:
        decoded = SearchResponse.decode(encoded, max_records=records, max_field=field)
    except LimitExceeded as error:
        assert error.limit_name in ("listing_entries", "wais_field_bytes")
        whole = SearchResponse.decode(encoded)  # the same bytes pass with room enough
        assert whole == response
        return
    assert decoded == response
    within_caps(decoded, records, field)


@FUZZ
@given(st.integers(1 << 20, (1 << 28) - 1), st.binary(max_size=64), st.sampled_from(["user", "element", "hli"]))
def test_announced_lengths_are_never_allocated(announced: int, tail: bytes, where: str) -> None:
    fields = bytes(10)
    if where == "user":
        data = frame(SEARCH_RESPONSE, fields) + encode_cint(T_USER_INFO) + encode_cint(announced) + tail
    elif where == "element":
        data = frame(SEARCH_RESPONSE, fields + encode_cint(26) + encode_cint(announced) + tail)
    else:
        data = b"\xff\xff" + bytes([SEARCH_RESPONSE]) + tail
    tracemalloc.start()
    try:
        decode_apdu(data)
    except (WaisDecodeError, LimitExceeded):
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 64 * 1024  # a few hundred bytes in, a few hundred bytes of work: never the 1 MiB+ announced

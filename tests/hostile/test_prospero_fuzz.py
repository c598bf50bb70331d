"""Fuzzing ARDP and the Prospero reply reader at their caps (tests/test_prospero_codec.py covers the defaults).

Any bytes in, in any chunking: a value within every cap, or fetcher's own
error out (`LimitExceeded`, `ProtocolError` and its `PacketError`), nothing else.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.errors import FetchError, LimitExceeded
from fetcher.schemes.prospero import ardp, protocol

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Bytes that look like replies: keywords, quotes, blanks and line ends, among anything at all.
PIECES = [b"LINK ", b"L ", b"FILE ", b"ATTRIBUTE ", b"OBJECT ", b"FIELD ", b"SEQUENCE ", b"'", b"''", b" ", b"\t",
          b"\n", b"\r", b"ACCESS-METHOD ", b"FAILURE ", b"FORWARDED ", b"x", b"\x1b", b"\xff", b"\x00"]  # fmt: skip
replies = st.one_of(st.binary(max_size=400), st.lists(st.sampled_from(PIECES), max_size=120).map(b"".join))


def chunks(data: bytes, sizes: list[int]) -> list[bytes]:
    out, at = [], 0
    for size in sizes:
        out.append(data[at : at + size])
        at += size
    out.append(data[at:])
    return out


@FUZZ
@given(st.binary(max_size=120))
def test_any_datagram_decodes_to_a_packet_or_a_packet_error(datagram: bytes) -> None:
    try:
        packet = ardp.decode(datagram)
    except ardp.PacketError:
        return
    assert len(packet.payload) + len(packet.option_data) <= len(datagram)
    try:
        target = ardp.redirect_target(packet)
    except ardp.PacketError:
        return
    assert target is None or 0 <= target[1] <= 65535


@FUZZ
@given(replies, st.lists(st.integers(0, 50), max_size=8), st.integers(1, 8), st.integers(1, 300), st.integers(1, 60))
def test_reply_reader_stays_within_its_caps_in_any_chunking(
    data: bytes, sizes: list[int], entries: int, size: int, line: int
) -> None:
    reader = protocol.ReplyReader(max_entries=entries, max_bytes=size, max_line=line)
    try:
        for chunk in chunks(data, sizes):
            reader.feed(chunk)
        reply = reader.finish()
    except LimitExceeded as error:
        assert error.limit_name in ("listing_entries", "listing_bytes", "line_bytes")
        return
    assert len(data) <= size
    kept = len(reply.links) + sum(len(link.attributes) for link in reply.links) + len(reply.attributes)
    assert kept + len(reply.ignored) <= entries
    whole = protocol.parse_reply(data, max_entries=entries, max_bytes=size, max_line=line)
    assert whole == reply  # the chunking never changes what was read


@FUZZ
@given(replies, st.lists(st.integers(0, 50), max_size=8), st.integers(1, 6), st.integers(1, 300), st.integers(1, 60))
def test_contents_decoder_keeps_within_its_caps(
    data: bytes, sizes: list[int], lines: int, kept: int, line: int
) -> None:
    decoder = protocol.ContentsDecoder(max_kept=kept, max_lines=lines, max_line=line)
    try:
        for chunk in chunks(data, sizes):
            decoder.feed(chunk)
        decoder.finish()
    except LimitExceeded as error:
        assert error.limit_name in ("listing_entries", "listing_bytes", "line_bytes")
        return
    assert decoder._kept <= kept and len(decoder._lines) <= lines


packets = st.builds(
    lambda seq, total, flags, option, payload, cid: ardp.encode(
        cid=cid, seq=seq, total=total, flags=flags, option=option, payload=payload, min_length=7
    ),
    st.integers(0, 70),
    st.integers(0, 70),
    st.sampled_from([0, ardp.FLAG_ACK, ardp.FLAG_SEQUENCED_CONTROL]),
    st.sampled_from([0, 0, 0, ardp.OPTION_RESET_RTHRU, ardp.OPTION_REFUSED]),
    st.binary(max_size=30),
    st.sampled_from([9, 0x0900, 0]),
)


@FUZZ
@given(st.lists(packets | st.binary(max_size=40), max_size=80), st.integers(1, 20))
def test_receiver_never_delivers_past_the_packet_cap(datagrams: list[bytes], cap: int) -> None:
    receiver = ardp.Receiver(9, b"LIST\n", max_packets=cap)
    receiver.start(0.0)
    delivered = b""
    try:
        for datagram in datagrams:
            try:
                packet = ardp.decode(datagram)
            except ardp.PacketError:
                continue
            if receiver.matches(packet):
                receiver.receive(packet, 1.0)
            delivered += receiver.take()
            receiver.acks()
    except FetchError:
        pass
    assert receiver.rthru <= cap and all(seq <= cap for seq in receiver._buffer)
    assert receiver.datagrams <= 4 * cap + 64
    # The cap counts packets of up to PACKET_DATA octets (a bigger datagram counts as the
    # packets it would fill), so that is what it bounds in bytes; drawn raw datagrams may
    # carry more data than the 30-byte payloads the packet strategy builds.
    assert len(delivered) <= cap * ardp.PACKET_DATA

"""Prospero codec tests: the hex vectors of the notes §8 byte for byte, the ARDP state machine, fuzzing.

The vectors are captures of the real Prospero 5.3 server on loopback.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fetcher.errors import ConnectError, NotFound, ProtocolError, Timeout, URLError
from fetcher.schemes.prospero import access, ardp, protocol
from fetcher.schemes.prospero.handler import Location, raise_for

TV1_REQUEST = bytes.fromhex(
    "09e0a700010001000056455253494f4e0a56455253494f4e2035207074657374285035332e31374d6179393462290a41"
    "555448454e54494341544520272720554e41555448454e5449434154454420726f6f740a4449524543544f5259204153"
    "4349492041465450272f7075622f646f6373270a4c49535420272720434f4d504f4e454e54530a"
)
TV1_REPLY = bytes.fromhex(
    "03e0a756455253494f4e2035205035332e31374d61793934620a4c494e4b20204c2046494c45206e6f74657327207769"
    "74682073706163652e7478742720494e5445524e45542d44204c4f43414c484f53542832313532352920415343494920"
    "41465450272f7075622f646f63732f6e6f74657320776974682073706163652e7478742720300a"
)
TV1B_REQUEST = bytes.fromhex(
    "09123400010001000056455253494f4e20352050524f42450a4449524543544f5259204153434949202f746d702f7066"
    "7372756e2f726f6f742f6674702f7075620a4c49535420272720434f4d504f4e454e54530a"
)
TV1B_REPLY = bytes.fromhex(
    "0312344c494e4b20204c2046494c45206269672e74787420494e5445524e45542d44204c4f43414c484f535428323135"
    "3235292041534349492041465450272f7075622f6269672e7478742720300a4c494e4b20204c2046494c452052454144"
    "4d4520494e5445524e45542d44204c4f43414c484f5354283231353235292041534349492041465450272f7075622f52"
    "4541444d452720300a4c494e4b20204c204449524543544f525920646f637320494e5445524e45542d44204c4f43414c"
    "484f5354283231353235292041534349492041465450272f7075622f646f63732720300a"
)
TV2_REQUEST = bytes.fromhex(
    "09ff2a00010001000056455253494f4e0a56455253494f4e2035207074657374285035332e31374d6179393462290a41"
    "555448454e54494341544520272720554e41555448454e5449434154454420726f6f740a4745542d4f424a4543542d49"
    "4e464f204143434553532d4d4554484f442041534349492041465450272f7075622f524541444d452720300a"
)
TV2_REPLY = bytes.fromhex(
    "03ff2a56455253494f4e2035205035332e31374d61793934620a415454524942555445204f424a45435420494e545249"
    "4e534943204143434553532d4d4554484f442053455155454e43452050524f535045524f2d434f4e54454e5453202727"
    "2027272027272027270a415454524942555445204f424a45435420494e5452494e534943204143434553532d4d455448"
    "4f442053455155454e4345204c4f43414c2027272027272027272027270a415454524942555445204f424a4543542049"
    "4e5452494e534943204143434553532d4d4554484f442053455155454e4345204146545020494e5445524e45542d4420"
    "4c4f43414c484f535420415343494920272f7075622f524541444d45272042494e4152590a"
)
TV3_REQUEST = bytes.fromhex(
    "09833200010001000056455253494f4e0a56455253494f4e2035207074657374285035332e31374d6179393462290a41"
    "555448454e54494341544520272720554e41555448454e5449434154454420726f6f740a4745542d4f424a4543542d49"
    "4e464f204143434553532d4d4554484f442041534349492041465450272f7075622f6269672e7478742720300a"
)
TV4_REQUEST = bytes.fromhex(
    "09a01900010001000056455253494f4e0a56455253494f4e2035207074657374285035332e31374d6179393462290a41"
    "555448454e54494341544520272720554e41555448454e5449434154454420726f6f740a4449524543544f5259204153"
    "4349492041465450272f707562270a4c49535420272720434f4d504f4e454e54530a"
)
TV4_REPLY = bytes.fromhex(
    "03a01956455253494f4e2035205035332e31374d61793934620a4c494e4b20204c2045585445524e414c206578746669"
    "6c6520494e5445524e45542d44206674702e6578616d706c652e6f726720415343494920272f7075622f6469722f6669"
    "6c652e7478742720300a41545452494255544520434143484544204649454c44204143434553532d4d4554484f442041"
    "4654502027272027272027272027272042494e4152590a4c494e4b20204c2045585445524e414c20676f70686572646f"
    "6320494e5445524e45542d4420676f706865722e6578616d706c652e6f7267283730292041534349492030272f61626f"
    "75742075732e7478742720300a41545452494255544520434143484544204649454c44204143434553532d4d4554484f"
    "4420474f504845522027272027272027272027270a4c494e4b20204c2045585445524e414c2074656c6e657473766320"
    "494e5445524e45542d44207777772e6578616d706c652e6f726720415343494920272f696e6465782e68746d6c272030"
    "0a41545452494255544520434143484544204649454c44204143434553532d4d4554484f442054454c4e455420272720"
    "2727202727202727206c6f67696e27206173206775657374270a4c494e4b20204c2046494c45206269672e7478742049"
    "4e5445524e45542d44204c4f43414c484f5354283231353235292041534349492041465450272f7075622f6269672e74"
    "78742720300a4c494e4b20204c2046494c4520626967322e74787420494e5445524e45542d44204c4f43414c484f5354"
    "283231353235292041534349492041465450272f7075622f626967322e7478742720300a4c494e4b20204c2046494c45"
    "20524541444d4520494e5445524e45542d44204c4f43414c484f5354283231353235292041534349492041465450272f"
    "7075622f524541444d452720300a4c494e4b20204c204449524543544f525920646f637320494e5445524e45542d4420"
    "4c4f43414c484f5354283231353235292041534349492041465450272f7075622f646f63732720300a"
)
TV3_REPLY = bytes.fromhex("03833256455253494f4e2035205035332e31374d61793934620a4641494c555245204e4f542d464f554e440a")
TV4_DIR_REPLY = bytes.fromhex(
    "03198056455253494f4e2035205035332e31374d61793934620a4641494c555245204e4f542d412d4449524543544f52590a"
)

REFERENCE_PREAMBLE = b"VERSION\nVERSION 5 ptest(P53.17May94b)\nAUTHENTICATE '' UNAUTHENTICATED root\n"


def payload(datagram: bytes) -> bytes:
    return ardp.decode(datagram).payload


# -- §8 vectors, byte for byte ------------------------------------------------------


def test_tv1_list_request_and_reply() -> None:
    text = REFERENCE_PREAMBLE + protocol.line("DIRECTORY", "ASCII", protocol.quote("AFTP/pub/docs"))
    text += protocol.line("LIST", "''", "COMPONENTS")
    assert ardp.request_packets(0xE0A7, text) == [TV1_REQUEST]
    # The server side of the same exchange: a 3-octet single-packet header.
    reply_text = payload(TV1_REPLY)
    assert ardp.encode(cid=0xE0A7, payload=reply_text) == TV1_REPLY
    packet = ardp.decode(TV1_REPLY)
    assert (packet.cid, packet.seq, packet.total, packet.header_length) == (0xE0A7, 1, 1, 3)
    reply = protocol.parse_reply(reply_text)
    assert reply.version == "5 P53.17May94b"
    (link,) = reply.links
    assert (link.flavour, link.target, link.name) == ("L", "FILE", "notes with space.txt")
    assert link.hsoname == "AFTP/pub/docs/notes with space.txt"
    url = access.prospero_url(link.host, link.hsoname)
    assert str(url) == "prospero://localhost:21525/AFTP/pub/docs/notes%20with%20space.txt"


def test_tv1b_minimal_request_and_reply() -> None:
    text = protocol.line("VERSION", "5", "PROBE") + protocol.line("DIRECTORY", "ASCII", "/tmp/pfsrun/root/ftp/pub")
    text += protocol.line("LIST", "''", "COMPONENTS")
    assert ardp.request_packets(0x1234, text) == [TV1B_REQUEST]
    assert ardp.encode(cid=0x1234, payload=payload(TV1B_REPLY)) == TV1B_REPLY
    reply = protocol.parse_reply(payload(TV1B_REPLY))
    assert [(link.target, link.name, link.hsoname) for link in reply.links] == [
        ("FILE", "big.txt", "AFTP/pub/big.txt"),
        ("FILE", "README", "AFTP/pub/README"),
        ("DIRECTORY", "docs", "AFTP/pub/docs"),
    ]


def test_tv2_access_method_request_and_choice() -> None:
    ours = protocol.object_info_request("root", "AFTP/pub/README", ["ACCESS-METHOD"])
    text = REFERENCE_PREAMBLE + ours[len(protocol.preamble("root")) :]
    assert ardp.request_packets(0xFF2A, text) == [TV2_REQUEST]
    assert ardp.encode(cid=0xFF2A, payload=payload(TV2_REPLY)) == TV2_REPLY
    reply = protocol.parse_reply(payload(TV2_REPLY))
    offered = reply.values("ACCESS-METHOD")
    assert [values[0] for values in offered] == ["PROSPERO-CONTENTS", "LOCAL", "AFTP"]
    assert offered[2] == ["AFTP", "INTERNET-D", "LOCALHOST", "ASCII", "/pub/README", "BINARY"]
    method, skipped = access.choose(offered, "LOCALHOST(21525)", "AFTP/pub/README")
    assert method is not None and method.name == "AFTP"
    assert str(method.url) == "ftp://localhost/pub/README;type=i"
    assert skipped == ["LOCAL: LOCAL is not a method fetcher can follow"]


def test_tv3_access_method_quirk_is_not_found() -> None:
    ours = protocol.object_info_request("root", "AFTP/pub/big.txt", ["ACCESS-METHOD"])
    text = REFERENCE_PREAMBLE + ours[len(protocol.preamble("root")) :]
    assert ardp.request_packets(0x8332, text) == [TV3_REQUEST]
    reply = protocol.parse_reply(payload(TV3_REPLY))
    assert reply.failure == ("NOT-FOUND", "")
    with pytest.raises(NotFound, match="not found"):
        raise_for(reply, Location("localhost", 21525, "AFTP/pub/big.txt"), "object information")


def test_tv4_external_links() -> None:
    text = REFERENCE_PREAMBLE + protocol.line("DIRECTORY", "ASCII", protocol.quote("AFTP/pub"))
    text += protocol.line("LIST", "''", "COMPONENTS")
    assert ardp.request_packets(0xA019, text) == [TV4_REQUEST]
    assert ardp.encode(cid=0xA019, payload=payload(TV4_REPLY)) == TV4_REPLY
    reply = protocol.parse_reply(payload(TV4_REPLY))
    from fetcher.schemes.prospero.handler import Handler

    entries = {entry.name: entry for entry in (Handler()._entry(link) for link in reply.links)}
    assert list(entries) == ["extfile", "gopherdoc", "telnetsvc", "big.txt", "big2.txt", "README", "docs"]
    assert entries["extfile"].url == "ftp://ftp.example.org/pub/dir/file.txt;type=i"
    assert entries["gopherdoc"].url == "gopher://gopher.example.org/00/about%20us.txt"
    assert entries["telnetsvc"].url == "telnet://www.example.org/"
    assert entries["telnetsvc"].description == "login as guest"
    assert entries["README"].url == "prospero://localhost:21525/AFTP/pub/README"
    assert (entries["docs"].url, entries["docs"].type) == ("prospero://localhost:21525/AFTP/pub/docs", "directory")
    assert entries["extfile"].extra["method"] == "AFTP"
    # The companion: the same request for a file says NOT-A-DIRECTORY.
    assert ardp.encode(cid=0x1980, payload=payload(TV4_DIR_REPLY)) == TV4_DIR_REPLY
    assert protocol.parse_reply(payload(TV4_DIR_REPLY)).failure == ("NOT-A-DIRECTORY", "")


@pytest.mark.parametrize(
    ("hexed", "fields"),
    [
        ("07669a00010000", {"cid": 0x669A, "seq": 1, "total": 0}),
        ("07669a00040004", {"cid": 0x669A, "seq": 4, "total": 4}),
        ("0c7112001000000001000080", {"cid": 0x7112, "seq": 16, "total": 0, "rthru": 1, "flags": 0x80}),
        ("097112000000000010", {"cid": 0x7112, "seq": 0, "total": 0, "rthru": 16, "min_length": 9}),
        ("097112001100180001", {"cid": 0x7112, "seq": 17, "total": 24, "rthru": 1}),
        ("09efc3000100020000", {"cid": 0xEFC3, "seq": 1, "total": 2, "min_length": 9}),
        ("09efc3000200020000", {"cid": 0xEFC3, "seq": 2, "total": 2, "min_length": 9}),
        ("0f0202000100010000000008000004", {"cid": 0x0202, "window": 4, "min_length": 9}),
        ("0f0606000100010000000002000005", {"cid": 0x0606, "priority": 5, "min_length": 9}),
        ("0d050500000000000000000001", {"cid": 0x0505, "seq": 0, "total": 0, "option": 1}),
        ("090303000100010001", {"cid": 0x0303, "rthru": 1}),
        ("030000", {"cid": 0, "min_length": 3}),
    ],
)
def test_tv5_control_packets(hexed: str, fields: dict[str, int]) -> None:
    datagram = bytes.fromhex(hexed)
    assert ardp.encode(**fields) == datagram  # type: ignore[arg-type]
    packet = ardp.decode(datagram)
    for name, value in fields.items():
        if name != "min_length":
            assert getattr(packet, name) == value
    assert packet.header_length == len(datagram)


def test_client_packet_builders_match_tv5() -> None:
    assert ardp.ack_packet(0x7112, 16) == bytes.fromhex("097112000000000010")
    assert ardp.cancel_packet(0x0505) == bytes.fromhex("0d050500000000000000000001")
    first, second = ardp.request_packets(0xEFC3, b"x" * 1251)
    assert first[:9] == bytes.fromhex("09efc3000100020000") and len(first) == 9 + 1250
    assert second == bytes.fromhex("09efc3000200020000") + b"x"
    assert ardp.request_packets(0x0202, b"", window=4)[0] == bytes.fromhex("0f0202000100010000000008000004")


def test_header_defaults_and_refusals() -> None:
    assert ardp.decode(b"\x01hello") == ardp.Packet(payload=b"hello", header_length=1)
    five = ardp.decode(bytes.fromhex("0500010002") + b"x")
    assert (five.seq, five.total, five.payload) == (2, 0, b"x")
    legacy = ardp.decode(b"VERSION 5 X\n\x00")
    assert (legacy.seq, legacy.total, legacy.payload) == (1, 1, b"VERSION 5 X\n")
    wait = ardp.decode(bytes.fromhex("0b12340000000000000384"))
    assert (wait.seq, wait.wait, wait.has_wait, wait.is_control) == (0, 900, True, True)
    redirect = ardp.decode(bytes.fromhex("131234" + "00" * 9 + "04" + "7f000001" + "0bb8"))
    assert ardp.redirect_target(redirect) == ("127.0.0.1", 3000)
    queue = ardp.decode(bytes.fromhex("141234000000000000038400fe03000500000078"))
    assert (queue.wait, queue.option, queue.option_data) == (900, 254, bytes.fromhex("03000500000078"))
    bad_packets = [
        (b"", "empty"),
        (b"\x81abc", "version 1"),
        (b"\x00x", "length 0"),
        (b"\x09ab", "says 9"),
        (b"\x04abcd", "cuts a field"),
        (bytes.fromhex("0e12340001000100000000080000"), "truncated"),
    ]
    for bad, why in bad_packets:
        with pytest.raises(ardp.PacketError, match=why):
            ardp.decode(bad)


# -- text protocol --------------------------------------------------------------------


def test_quoting_follows_the_reference_writer() -> None:
    assert protocol.quote("README") == b"README"
    assert protocol.quote("AFTP/pub/README") == b"AFTP'/pub/README'"
    assert protocol.quote("it's") == b"it'''s'"
    assert protocol.quote("") == b"''"
    assert protocol.quote("a b,c") == b"a' b,c'"
    with pytest.raises(ProtocolError, match="NUL"):
        protocol.quote("a\x00b")


def test_tokenizer_quirks() -> None:
    message = b"LINK  L FILE a'b c''d' X\r\n\n0'/about us.txt' ''\nATTRIBUTE 'multi\nline' x\nlast"
    assert protocol.tokenize(message) == [
        [b"LINK", b"L", b"FILE", b"ab c'd", b"X"],
        [b"0/about us.txt", b""],
        [b"ATTRIBUTE", b"multi\nline", b"x"],
        [b"last"],
    ]


def test_reply_lines() -> None:
    text = (
        b"VERSION-NOT-SUPPORTED TRY 1-5\nWARNING OUT-OF-DATE old\nSUCCESS\nUNRESOLVED b c\n"
        b"FORWARDED INTERNET-D NEW.HOST(2000) ASCII '/x' 0\nERROR Unknown message: FOO\nGIBBERISH 1\nLINK short\n"
    )
    reply = protocol.parse_reply(text)
    assert reply.version_refused == "TRY 1-5"
    assert reply.unresolved == ["b", "c"]
    assert reply.forwarded == protocol.Forwarded("INTERNET-D", "NEW.HOST(2000)", "ASCII", "/x", "0")
    assert reply.error == "Unknown message: FOO"
    assert reply.ignored == ["GIBBERISH 1"]
    assert reply.warnings[0] == "OUT-OF-DATE old"
    assert "LINK line has 1 fields" in reply.warnings[1]
    with pytest.raises(ProtocolError, match="does not speak version 5"):
        raise_for(reply, Location("h", 1525, "x"), "listing")


def test_attribute_value_types() -> None:
    reply = protocol.parse_reply(
        b"ATTRIBUTE OBJECT INTRINSIC SIZE SEQUENCE '35 bytes'\n"
        b"ATTRIBUTE OBJECT FIELD ACCESS-METHOD SEQUENCE AFTP '' '' '' '' TEXT\n"
        b"ATTRIBUTE OBJECT FIELD ACCESS-METHOD SEQUENCE\n"
        b"ATTRIBUTE> OBJECT INTRINSIC X LINK L FILE n INTERNET-D h ASCII p 0\n"
    )
    size, method, odd, nested = reply.attributes
    assert size.values == ["35 bytes"]
    assert method.values == ["AFTP", "", "", "", "", "TEXT"]
    assert odd.values == ["SEQUENCE"]  # a lone token is the value, not the type
    assert nested.nesting == 1 and nested.link is not None and nested.link.name == "n"


def test_url_fields_map_onto_the_request() -> None:
    target = protocol.target_from_fields({"OBJECT-VERSION": "7", "ID": "42", "colour": "red"})
    assert target.version == "7" and target.unknown == ("colour",)
    message = protocol.list_request("anonymous", "/pros/x", target)
    assert message == (
        b"VERSION 5 fetcher\nAUTHENTICATE '' UNAUTHENTICATED anonymous\n"
        b"DIRECTORY ASCII '/pros/x' 7\nSELECT OBJECT FIELD ID REMOTE 42\nSELECT OBJECT FIELD colour red\n"
        b"LIST ATTRIBUTES COMPONENTS\n"
    )
    with pytest.raises(URLError, match="OBJECT-VERSION"):
        protocol.target_from_fields({"object-version": "x1"})


@pytest.mark.parametrize(
    ("values", "url"),
    [
        (["AFTP", "INTERNET-D", "h(2121)", "ASCII", "/a/b c", "TEXT"], "ftp://h:2121/a/b%20c;type=a"),
        (["AFTP", "", "", "", "", "DIRECTORY"], "ftp://link.host/d/x;type=d"),
        (["FTP", "INTERNET-D", "h", "ASCII", "/etc/motd", "BINARY"], "ftp://h/%2Fetc/motd;type=i"),
        (["GOPHER", "INTERNET-D", "g(7070)", "ASCII", "/sel", "I"], "gopher://g:7070/I/sel"),
        (["GOPHER", "INTERNET-D", "g(70)", "ASCII", "1/menu"], "gopher://g/11/menu"),
        (["TELNET", "INTERNET-D", "t(2323)", "ASCII", "", "say", "hi"], "telnet://t:2323/"),
        (["WAIS", "INTERNET-D", "w", "ASCII", "db/TEXT/doc1"], "wais://w/db/TEXT/doc1"),
    ],
)
def test_access_methods_to_urls(values: list[str], url: str) -> None:
    method = access.build(values, "LINK.HOST", "/d/x")
    assert str(method.url) == url


@pytest.mark.parametrize(
    ("values", "why"),
    [
        (["AFTP", "INTERNET-D", "h", "ASCII"], "fewer than 5"),
        (["AFTP", "INTERNET-D", "h", "ASCII", "/x"], "takes 6"),
        (["WAIS", "INTERNET-D", "w", "ASCII", "WAIS/OBJECT/17"], "no database"),
        (["NFS", "INTERNET-D", "h", "ASCII", "/x", "fs"], "not a method"),
        (["AFTP", "INTERNET-D", "bad host!", "ASCII", "/x", "BINARY"], "unusable URL"),
        (["GOPHER", "INTERNET-D", "g(99999)", "ASCII", "0x"], "malformed port"),
    ],
)
def test_unusable_access_methods(values: list[str], why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        access.build(values, "h", "/x")


def test_choice_prefers_url_methods_then_ftp_then_contents() -> None:
    offered = [
        ["PROSPERO-CONTENTS", "", "", "", ""],
        ["FTP", "INTERNET-D", "h", "ASCII", "/x", "BINARY"],
        ["GOPHER", "INTERNET-D", "g(70)", "ASCII", "0x"],
    ]
    assert access.choose(offered, "p", "/x")[0].name == "GOPHER"  # type: ignore[union-attr]
    assert access.choose(offered[:2], "p", "/x")[0].name == "FTP"  # type: ignore[union-attr]
    assert access.choose(offered[:1], "p", "/x")[0].name == "PROSPERO-CONTENTS"  # type: ignore[union-attr]
    assert access.choose([["LOCAL", "", "", "", ""]], "p", "/x")[0] is None


def test_contents_decoder_streams_the_data_token() -> None:
    message = b"ATTRIBUTE OBJECT INTRINSIC CONTENTS SEQUENCE DATA 'line one\nit''s two\n'\nWARNING MESSAGE hi\n"
    decoder = protocol.ContentsDecoder()
    out = b"".join(decoder.feed(message[i : i + 3]) for i in range(0, len(message), 3))
    assert out == b"line one\nit's two\n"
    rest = decoder.finish()
    assert decoder.found and rest.warnings == ["MESSAGE hi"]
    failure = protocol.ContentsDecoder()
    assert failure.feed(b"FAILURE NOT-FOUND\n") == b""
    assert not failure.started and failure.finish().failure == ("NOT-FOUND", "")


# -- the ARDP receiver (pure: time is a number) -------------------------------------


def reply_packets(cid: int, message: bytes, window: int = 16) -> list[bytes]:
    """What a 5.3 server sends on first transmission: 7-octet headers, please-ack at the window edge."""
    chunks = ardp.split_message(message)
    out = []
    for seq, chunk in enumerate(chunks, 1):
        total = len(chunks) if seq == len(chunks) else 0
        if len(chunks) == 1:
            out.append(ardp.encode(cid=cid, payload=chunk))
        elif seq % window == 0 and seq < len(chunks):
            out.append(ardp.encode(cid=cid, seq=seq, total=total, rthru=1, flags=ardp.FLAG_ACK, payload=chunk))
        else:
            out.append(ardp.encode(cid=cid, seq=seq, total=total, min_length=7, payload=chunk))
    return out


def feed(receiver: ardp.Receiver, datagrams: list[bytes], now: float = 0.0) -> bytes:
    for datagram in datagrams:
        receiver.receive(ardp.decode(datagram), now)
    return receiver.take()


def test_receiver_reassembles_out_of_order_and_duplicates() -> None:
    message = bytes(range(256)) * 40  # 10240 octets, 9 packets
    receiver = ardp.Receiver(0x4242, b"LIST\n")
    receiver.start(0.0)
    packets = reply_packets(0x4242, message)
    shuffled = [packets[3], packets[0], packets[0], packets[8], *packets[1:3], *packets[4:8], packets[5]]
    assert feed(receiver, shuffled) == message
    assert receiver.complete and receiver.duplicates == 2
    assert receiver.acks() == []


def test_receiver_accepts_the_byte_swapped_cid_and_acks_at_the_window() -> None:
    message = b"y" * (1250 * 20)
    receiver = ardp.Receiver(0x1234, b"LIST\n")
    receiver.start(0.0)
    packets = reply_packets(0x1234, message)
    assert feed(receiver, packets[:16]) == message[: 16 * 1250]
    assert receiver.acks() == [ardp.ack_packet(0x1234, 16)]
    # The rest comes from the server's done-queue with the id byte-swapped (the 1994 bug).
    rest = [ardp.encode(cid=0x3412, seq=s, total=20, rthru=1, payload=b"y" * 1250) for s in range(17, 21)]
    assert feed(receiver, rest) == b"y" * (4 * 1250)
    assert receiver.complete
    assert not receiver.matches(ardp.decode(ardp.encode(cid=0x9999, payload=b"x")))


def test_receiver_timers_double_then_give_up() -> None:
    receiver = ardp.Receiver(7, b"x" * 3000, ardp.Timers(timeout=4.0, retries=3, ceiling=100.0))
    assert len(receiver.start(0.0)) == 3
    deadlines = [receiver.deadline]
    sent = []
    for _ in range(3):
        sent.append(receiver.expire(deadlines[-1]))
        deadlines.append(receiver.deadline)
    assert deadlines == [4.0, 12.0, 28.0, 60.0]  # transmissions at 0, 4, 12, 28; give up at 60
    assert [len(s) for s in sent] == [3, 3, 3]
    with pytest.raises(Timeout, match="after 3 retransmissions"):
        receiver.expire(60.0)


def test_receiver_retransmits_only_what_the_server_lacks() -> None:
    receiver = ardp.Receiver(7, b"x" * 3000)
    receiver.start(0.0)
    receiver.receive(ardp.decode(ardp.ack_packet(7, 2)), 0.1)  # the server has request packets 1..2
    (again,) = receiver.expire(receiver.deadline)
    assert ardp.decode(again).seq == 3
    receiver.receive(ardp.decode(ardp.ack_packet(7, 3)), 5.0)
    assert receiver.expire(receiver.deadline) == [ardp.ack_packet(7, 0)]  # ack-only from now on


def test_receiver_please_wait_extends_the_deadline_up_to_the_ceiling() -> None:
    receiver = ardp.Receiver(7, b"x", ardp.Timers(timeout=0.5, retries=1, ceiling=30.0))
    receiver.start(0.0)
    receiver.receive(ardp.decode(ardp.encode(cid=7, seq=0, total=0, wait=10)), 0.2)
    assert receiver.deadline == pytest.approx(10.2)
    receiver.receive(ardp.decode(ardp.encode(cid=7, seq=0, total=0, wait=900)), 1.0)
    assert receiver.deadline == pytest.approx(31.0)
    # The answer rescinds the wait (12-octet header, wait 0) and asks for an ack.
    final = ardp.encode(cid=7, seq=1, total=1, rthru=1, flags=ardp.FLAG_ACK, min_length=12, payload=b"ok")
    assert feed(receiver, [final], 5.0) == b"ok"
    assert receiver.complete and receiver.acks() == [ardp.ack_packet(7, 1)]


def test_receiver_refused_and_inconsistent_replies() -> None:
    receiver = ardp.Receiver(7, b"x")
    receiver.start(0.0)
    with pytest.raises(ConnectError, match="refused"):
        receiver.receive(ardp.decode(ardp.encode(cid=7, seq=0, total=0, option=1)), 0.0)
    receiver = ardp.Receiver(7, b"x")
    receiver.receive(ardp.decode(ardp.encode(cid=7, seq=1, total=2, payload=b"a")), 0.0)
    with pytest.raises(ProtocolError, match="packet 5 of only 2"):
        receiver.receive(ardp.decode(ardp.encode(cid=7, seq=5, total=0, payload=b"a")), 0.0)
    with pytest.raises(ProtocolError, match="changed its packet count"):
        receiver.receive(ardp.decode(ardp.encode(cid=7, seq=2, total=3, payload=b"a")), 0.0)


# -- fuzzing: any bytes in, a value or a defined error out --------------------------------


@given(st.binary(max_size=80))
@settings(max_examples=400)
def test_fuzz_packet_decoder(data: bytes) -> None:
    try:
        packet = ardp.decode(data)
    except ardp.PacketError:
        return
    assert 0 <= packet.header_length <= 63 and packet.header_length <= len(data)
    receiver = ardp.Receiver(packet.cid or 1, b"q")
    receiver.start(0.0)
    try:
        receiver.receive(packet, 1.0)
    except (ProtocolError, ConnectError):
        return
    receiver.take()
    receiver.acks()


@given(
    cid=st.integers(0, 0xFFFF), seq=st.integers(0, 0xFFFF), total=st.integers(0, 0xFFFF),
    rthru=st.integers(0, 0xFFFF), wait=st.integers(0, 0xFFFF), flags=st.sampled_from([0, 0x40, 0x80, 0xC0]),
    option=st.integers(0, 255), window=st.none() | st.integers(0, 0xFFFF), body=st.binary(max_size=40),
)  # fmt: skip
def test_fuzz_header_round_trip(
    cid: int, seq: int, total: int, rthru: int, wait: int, flags: int, option: int, window: int | None, body: bytes
) -> None:
    datagram = ardp.encode(cid=cid, seq=seq, total=total, rthru=rthru, wait=wait, flags=flags, option=option,
                           window=window, payload=body + b"!")  # fmt: skip
    packet = ardp.decode(datagram)
    assert (packet.cid, packet.seq, packet.total, packet.rthru, packet.wait) == (cid, seq, total, rthru, wait)
    assert packet.flags & 0xC0 == flags and packet.option == option and packet.payload == body + b"!"
    assert packet.window == (window or 0)


@given(st.binary(max_size=300))
@settings(max_examples=400)
def test_fuzz_reply_parser(data: bytes) -> None:
    try:
        reply = protocol.parse_reply(data)
    except ProtocolError:
        return
    for link in reply.links:
        access.choose(link.access_methods(), link.host, link.hsoname)
    decoder = protocol.ContentsDecoder()
    streamed = b"".join(decoder.feed(data[i : i + 7]) for i in range(0, len(data), 7))
    whole = protocol.ContentsDecoder()
    assert whole.feed(data) == streamed
    decoder.finish()


@given(st.lists(st.binary(min_size=1, max_size=20).filter(lambda b: b"\x00" not in b), min_size=1, max_size=6))
def test_fuzz_quote_round_trip(tokens: list[bytes]) -> None:
    assert protocol.tokenize(b" ".join(protocol.quote(t) for t in tokens)) == [tokens]


@given(st.lists(st.tuples(st.integers(1, 12), st.integers(0, 12), st.booleans()), max_size=40))
def test_fuzz_receiver_any_packet_order(events: list[tuple[int, int, bool]]) -> None:
    receiver = ardp.Receiver(9, b"q")
    receiver.start(0.0)
    got = b""
    for seq, total, ack in events:
        packet = ardp.encode(cid=9, seq=seq, total=total, flags=ardp.FLAG_ACK if ack else 0, payload=bytes([seq]))
        try:
            receiver.receive(ardp.decode(packet), 1.0)
        except ProtocolError:
            return
        got += receiver.take()
        receiver.acks()
    assert got == bytes(range(1, receiver.rthru + 1))

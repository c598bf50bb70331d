"""The pure TELNET machine: exact negotiation bytes, the NVT data rules, and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fetcher.schemes.telnet.protocol import (
    BINARY,
    DO,
    DONT,
    ECHO,
    IAC,
    LINEMODE,
    MAX_SUBNEGOTIATION,
    NAWS,
    SB,
    SE,
    SGA,
    STATUS,
    TTYPE,
    WILL,
    WONT,
    Q,
    TelnetProtocol,
    clean_terminal_type,
    describe,
)

# What inetutils-telnetd sends first, then after the client's refusals
# (tests/interop/test_telnetd.py checks the same against the real server).
TELNETD_FIRST = bytes.fromhex("fffb25 fffb26 fffd18 fffd20 fffd23 fffd27 fffd24")
TELNETD_SECOND = bytes.fromhex("fffb03 fffd01 fffd22 fffd1f fffb05 fffd21 fffb01 fffd06 fffd00")


def parse_reply(data: bytes) -> list[tuple[int, ...] | tuple[int, int, bytes]]:
    """Split what the client sends back into commands; fails on anything malformed."""
    items: list[tuple[int, ...] | tuple[int, int, bytes]] = []
    i = 0
    while i < len(data):
        assert data[i] == IAC, f"reply byte {i} is not IAC: {data!r}"
        command = data[i + 1]
        if command in (WILL, WONT, DO, DONT):
            items.append((command, data[i + 2]))
            i += 3
        elif command == SB:
            option, j, body = data[i + 2], i + 3, bytearray()
            while True:
                if data[j] == IAC:
                    if data[j + 1] == IAC:
                        body.append(IAC)
                        j += 2
                        continue
                    assert data[j + 1] == SE, f"lone IAC inside a subnegotiation: {data!r}"
                    j += 2
                    break
                body.append(data[j])
                j += 1
            items.append((SB, option, bytes(body)))
            i = j
        else:
            raise AssertionError(f"unexpected command {command} in a reply: {data!r}")
    return items


def test_telnetd_sequence_refused_without_terminal() -> None:
    client = TelnetProtocol()
    shown, reply = client.receive(TELNETD_FIRST)
    assert shown == b""
    # DONT AUTHENTICATION, DONT ENCRYPT, WONT TTYPE, WONT TSPEED, WONT XDISPLOC,
    # WONT NEW-ENVIRON, WONT OLD-ENVIRON
    assert reply == bytes.fromhex("fffe25 fffe26 fffc18 fffc20 fffc23 fffc27 fffc24")
    shown, reply = client.receive(TELNETD_SECOND + b"\r\nLinux\r\n")
    assert shown == b"\r\nLinux\r\n"
    # DO SGA, WONT ECHO, WONT LINEMODE, WONT NAWS, DONT STATUS, WONT LFLOW,
    # DO ECHO, WONT TM, WILL BINARY
    assert reply == bytes.fromhex("fffd03 fffc01 fffc22 fffc1f fffe05 fffc21 fffd01 fffc06 fffb00")
    assert client.remote_echo and client.remote_enabled(SGA) and client.local_enabled(BINARY)
    assert not client.local_enabled(ECHO) and not client.remote_enabled(STATUS)
    assert describe(reply).startswith("DO SGA WONT ECHO WONT LINEMODE")


def test_telnetd_sequence_with_terminal_type_and_window_size() -> None:
    client = TelnetProtocol(terminal_type="xterm-256color", window_size=(132, 43))
    _, reply = client.receive(TELNETD_FIRST)
    assert reply == bytes.fromhex("fffe25 fffe26 fffb18 fffc20 fffc23 fffc27 fffc24")
    _, reply = client.receive(bytes((IAC, SB, TTYPE, 1, IAC, SE)))
    assert reply == b"\xff\xfa\x18\x00XTERM-256COLOR\xff\xf0"
    _, reply = client.receive(TELNETD_SECOND)
    assert reply == bytes.fromhex(
        "fffd03 fffc01 fffc22 fffb1f fffa1f 0084 002b fff0 fffe05 fffc21 fffd01 fffc06 fffb00"
    )
    assert client.local_enabled(NAWS) and client.local_enabled(TTYPE)
    # A new size is reported at once, with an IAC in the numbers doubled.
    assert client.resize(255, 24) == bytes.fromhex("fffa1f 00ffff 0018 fff0")


def test_requests_for_what_is_already_agreed_get_no_answer() -> None:
    client = TelnetProtocol()
    assert client.receive(bytes((IAC, WILL, ECHO)))[1] == bytes((IAC, DO, ECHO))
    assert client.receive(bytes((IAC, WILL, ECHO)))[1] == b""
    assert client.receive(bytes((IAC, WONT, ECHO)))[1] == bytes((IAC, DONT, ECHO))
    assert not client.remote_echo
    assert client.receive(bytes((IAC, WONT, ECHO)))[1] == b""
    assert client.receive(bytes((IAC, DONT, LINEMODE)))[1] == b""
    # A refused option is refused again each time it is asked for, never accepted.
    assert client.receive(bytes((IAC, DO, LINEMODE)) * 2)[1] == bytes((IAC, WONT, LINEMODE)) * 2


def test_q_method_queue() -> None:
    client = TelnetProtocol()
    assert client.request_remote(ECHO) == bytes((IAC, DO, ECHO))
    assert client.remote_state(ECHO).state is Q.WANTYES
    # Changing our mind while the answer is on its way queues the opposite ...
    assert client.request_remote(ECHO, False) == b""
    assert client.remote_state(ECHO).opposite
    # ... which is sent once the answer arrives, and only then.
    assert client.receive(bytes((IAC, WILL, ECHO)))[1] == bytes((IAC, DONT, ECHO))
    assert client.remote_state(ECHO).state is Q.WANTNO
    assert client.receive(bytes((IAC, WONT, ECHO)))[1] == b""
    assert client.remote_state(ECHO).state is Q.NO
    # WANTNO with the opposite queued: a WONT leads to asking again.
    client.receive(bytes((IAC, WILL, SGA)))
    assert client.request_remote(SGA, False) == bytes((IAC, DONT, SGA))
    assert client.request_remote(SGA) == b""
    assert client.receive(bytes((IAC, WONT, SGA)))[1] == bytes((IAC, DO, SGA))
    assert client.remote_state(SGA).state is Q.WANTYES
    assert client.receive(bytes((IAC, WILL, SGA)))[1] == b""
    assert client.remote_enabled(SGA)
    # A refusal of our own request ends it without a reply.
    assert client.request_local(BINARY) == bytes((IAC, WILL, BINARY))
    assert client.receive(bytes((IAC, DONT, BINARY)))[1] == b""
    assert client.local_state(BINARY).state is Q.NO
    with pytest.raises(ValueError, match="LINEMODE"):
        client.request_local(LINEMODE)


def test_data_rules_nvt() -> None:
    client = TelnetProtocol()
    # IAC IAC is one 0xFF; CR NUL is a bare CR; CR LF stays a newline.
    assert client.receive(b"a\xff\xffb\r\x00c\r\nd") == (b"a\xffb\rc\r\nd", b"")
    assert client.receive(b"\r\xff\xff") == (b"\r\xff", b"")


def test_cr_nul_across_reads_and_commands_that_do_nothing() -> None:
    client = TelnetProtocol()
    assert client.receive(b"x\r") == (b"x\r", b"")
    assert client.receive(b"\x00y\r") == (b"y\r", b"")
    assert client.receive(b"\xff\xf1\x00z") == (b"\x00z", b"")  # NUL after IAC NOP is data again
    for command in (0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8, 0xF9, SE, 0x41):
        assert client.receive(bytes((IAC, command)) + b"k") == (b"k", b"")


def test_binary_from_server_keeps_cr_nul() -> None:
    client = TelnetProtocol()
    client.receive(bytes((IAC, WILL, BINARY)))
    assert client.receive(b"\r\x00\xff\xff\r\n") == (b"\r\x00\xff\r\n", b"")


def test_subnegotiation_garbage_truncation_and_overflow() -> None:
    client = TelnetProtocol(terminal_type="vt100")
    client.receive(bytes((IAC, DO, TTYPE)))
    # SEND with the SE lost: the IAC WILL that follows is read as a command.
    shown, reply = client.receive(bytes((IAC, SB, TTYPE, 1, IAC, WILL, ECHO)) + b"after")
    assert (shown, reply) == (b"after", bytes((IAC, DO, ECHO)))
    assert client.protocol_errors == 1
    # A subnegotiation split over reads, with IAC IAC inside, is put together.
    assert client.receive(bytes((IAC, SB, TTYPE))) == (b"", b"")
    assert client.receive(bytes((1,))) == (b"", b"")
    assert client.receive(bytes((IAC,))) == (b"", b"")
    assert client.receive(bytes((SE,)))[1] == b"\xff\xfa\x18\x00VT100\xff\xf0"
    # Too long: read to its end and dropped; the data after it is intact.
    flood = bytes((IAC, SB, TTYPE, 1)) + b"\xff\xff" * MAX_SUBNEGOTIATION + bytes((IAC, SE)) + b"ok"
    assert client.receive(flood) == (b"ok", b"")
    assert client.protocol_errors == 2
    # A subnegotiation for an option that is not on is ignored.
    assert client.receive(bytes((IAC, SB, NAWS, 1, IAC, SE))) == (b"", b"")
    # TTYPE refused: SEND gets no answer.
    refusing = TelnetProtocol()
    refusing.receive(bytes((IAC, DO, TTYPE)))
    assert refusing.receive(bytes((IAC, SB, TTYPE, 1, IAC, SE))) == (b"", b"")


def test_send_nvt_newlines_and_iac() -> None:
    client = TelnetProtocol()
    assert client.send(b"guest\n") == b"guest\r\n"
    assert client.send(b"pw\r") == b"pw\r\x00"
    assert client.send(b"\n") == b""  # the LF of a CR LF split over two reads
    assert client.send(b"a\r\nb\n\n") == b"a\r\x00b\r\n\r\n"
    assert client.send(b"\xff") == b"\xff\xff"
    assert client.send(b"") == b""
    client.receive(bytes((IAC, DO, BINARY)))
    assert client.send(b"x\r\n\xff") == b"x\r\n\xff\xff"


def test_terminal_type_is_cleaned() -> None:
    assert clean_terminal_type("xterm-256color") == "XTERM-256COLOR"
    assert clean_terminal_type("screen.linux") == "SCREEN.LINUX"
    assert clean_terminal_type("\x1b[31mred") is None
    assert clean_terminal_type("x" * 41) is None
    assert clean_terminal_type("") is None and clean_terminal_type(None) is None
    assert NAWS not in TelnetProtocol().local_options and TTYPE not in TelnetProtocol().local_options


def test_notes_trace_the_negotiation() -> None:
    client = TelnetProtocol()
    client.receive(bytes((IAC, DO, TTYPE, IAC, SB, TTYPE, 1, IAC, SE)))
    assert client.take_notes() == ["< DO TTYPE", "> WONT TTYPE", "< SB TTYPE b'\\x01'"]
    assert client.take_notes() == []


# -- fuzzing ----------------------------------------------------------------------

# Bytes rich in protocol structure: commands, options the client knows, SB/SE.
structured = st.lists(
    st.one_of(
        st.binary(max_size=8),
        st.sampled_from([bytes((IAC,)), bytes((IAC, SB)), bytes((IAC, SE)), b"\r", b"\x00", b"\r\x00", b"\r\n"]),
        st.builds(
            lambda c, o: bytes((IAC, c, o)),
            st.sampled_from([WILL, WONT, DO, DONT]),
            st.sampled_from([BINARY, ECHO, SGA, STATUS, TTYPE, NAWS, LINEMODE, 6, 255]),
        ),
        st.builds(
            lambda o, b: bytes((IAC, SB, o)) + b + bytes((IAC, SE)),
            st.sampled_from([TTYPE, NAWS]),
            st.binary(max_size=6),
        ),
    ),
    max_size=40,
).map(b"".join)


def _feed(client: TelnetProtocol, data: bytes, cuts: list[int]) -> tuple[bytes, bytes]:
    shown, reply = bytearray(), bytearray()
    start = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        s, r = client.receive(data[start:cut])
        shown += s
        reply += r
        start = max(start, cut)
    return bytes(shown), bytes(reply)


@settings(max_examples=400, deadline=None)
@given(data=st.one_of(structured, st.binary(max_size=300)), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_fuzz_any_bytes_well_formed_replies(data: bytes, cuts: list[int]) -> None:
    client = TelnetProtocol(terminal_type="vt100", window_size=(80, 24))
    whole_shown, whole_reply = TelnetProtocol(terminal_type="vt100", window_size=(80, 24)).receive(data)
    shown, reply = _feed(client, data, cuts)
    # The way the bytes were split between reads changes nothing.
    assert (shown, reply) == (whole_shown, whole_reply)
    assert len(shown) <= len(data)
    items = parse_reply(reply)
    negotiations = [item for item in items if item[0] != SB]
    # At most one answer per request: no amplification, no loop.
    assert len(negotiations) <= data.count(b"\xff")
    for item in negotiations:
        command, option = item[0], item[1]
        if command == WILL:
            assert option in client.local_options
        if command == DO:
            assert option in client.remote_options


@settings(max_examples=200, deadline=None)
@given(
    requests=st.lists(
        st.tuples(
            st.sampled_from(["client", "server"]),
            st.sampled_from(["local", "remote"]),
            st.sampled_from([BINARY, ECHO, SGA, TTYPE, NAWS]),
            st.booleans(),
            st.booleans(),
        ),
        max_size=20,
    )
)
def test_two_machines_converge(requests: list[tuple[str, str, int, bool, bool]]) -> None:
    """Random requests on both ends, with messages in flight: the Q method settles and both ends agree."""
    client = TelnetProtocol(terminal_type="vt100", window_size=(80, 24))
    server = TelnetProtocol(local_options={BINARY, ECHO, SGA}, remote_options={BINARY, SGA, TTYPE, NAWS})
    ends = {"client": client, "server": server}
    wire = {"client": bytearray(), "server": bytearray()}  # bytes each end has sent, not yet delivered

    def deliver(sender: str) -> None:
        receiver = "server" if sender == "client" else "client"
        data, wire[sender][:] = bytes(wire[sender]), b""
        wire[receiver] += ends[receiver].receive(data)[1]

    for who, side, option, enable, flush in requests:
        end = ends[who]
        allowed = end.local_options if side == "local" else end.remote_options
        if enable and option not in allowed:
            continue
        wire[who] += end.request_local(option, enable) if side == "local" else end.request_remote(option, enable)
        if flush:
            deliver(who)
    for _ in range(50):
        if not wire["client"] and not wire["server"]:
            break
        deliver("client")
        deliver("server")
    else:
        raise AssertionError("negotiation did not settle")
    for option in (BINARY, ECHO, SGA, TTYPE, NAWS):
        for a, b in ((client, server), (server, client)):
            assert a.local_state(option).state in (Q.YES, Q.NO)
            assert a.local_state(option).state is b.remote_state(option).state

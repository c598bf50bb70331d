"""TELNET as a pure state machine: bytes from the server in, (terminal bytes, reply bytes) out.

RFC 854 (the NVT and IAC commands), RFC 855 (option negotiation and
subnegotiation) and the Q method of RFC 1143, which keeps two ends from
ever negotiating in a loop: every option has a state per side (NO, YES,
WANTNO, WANTYES) plus a one-deep queue, and a request is answered only when
it asks for a change.  The client agrees to the options it implements and
refuses everything else:

- the server's side ("him"): ECHO (the server echoes, so the terminal must
  not), SGA (no go-aheads: character at a time), BINARY;
- our side ("us"): SGA, BINARY, NAWS (RFC 1073) when a window size is known,
  TTYPE (RFC 1091) when a terminal type is known.

Nothing here does I/O, so it is tested and fuzzed byte for byte.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass

IAC, DONT, DO, WONT, WILL, SB = 255, 254, 253, 252, 251, 250
GA, EL, EC, AYT, AO, IP, BRK, DM, NOP, SE = 249, 248, 247, 246, 245, 244, 243, 242, 241, 240
CR, LF, NUL = 13, 10, 0

BINARY, ECHO, SGA, STATUS, TM = 0, 1, 3, 5, 6
TTYPE, TSPEED, LFLOW, LINEMODE, XDISPLOC, OLD_ENVIRON, NAWS = 24, 32, 33, 34, 35, 36, 31
AUTHENTICATION, ENCRYPT, NEW_ENVIRON = 37, 38, 39
TTYPE_IS, TTYPE_SEND = 0, 1

COMMAND_NAMES = {
    DONT: "DONT", DO: "DO", WONT: "WONT", WILL: "WILL", SB: "SB", GA: "GA", EL: "EL", EC: "EC",
    AYT: "AYT", AO: "AO", IP: "IP", BRK: "BRK", DM: "DM", NOP: "NOP", SE: "SE", IAC: "IAC",
}  # fmt: skip
OPTION_NAMES = {
    BINARY: "BINARY", ECHO: "ECHO", SGA: "SGA", STATUS: "STATUS", TM: "TM", TTYPE: "TTYPE",
    NAWS: "NAWS", TSPEED: "TSPEED", LFLOW: "LFLOW", LINEMODE: "LINEMODE", XDISPLOC: "XDISPLOC",
    OLD_ENVIRON: "OLD-ENVIRON", AUTHENTICATION: "AUTHENTICATION", ENCRYPT: "ENCRYPT",
    NEW_ENVIRON: "NEW-ENVIRON",
}  # fmt: skip

#: Longest subnegotiation kept; longer ones are read to their end and dropped.
MAX_SUBNEGOTIATION = 1024
_TERMINAL_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9./+_-]{0,39}")


def option_name(option: int) -> str:
    return OPTION_NAMES.get(option, str(option))


class Q(enum.Enum):
    """One side of one option (RFC 1143 §7)."""

    NO = "no"
    YES = "yes"
    WANTNO = "wantno"
    WANTYES = "wantyes"


@dataclass
class Side:
    state: Q = Q.NO
    #: The queue bit: True means OPPOSITE (change again once the answer comes).
    opposite: bool = False


class _In(enum.Enum):
    DATA = 0
    CR = 1  # a CR was passed on; a NUL right after it is dropped
    IAC = 2
    NEGOTIATE = 3  # IAC WILL/WONT/DO/DONT seen, the option byte is next
    SB_OPTION = 4
    SB_DATA = 5
    SB_IAC = 6


def clean_terminal_type(value: str | None) -> str | None:
    """$TERM as TTYPE may send it (RFC 1091: at most 40 printable characters), else None."""
    if not value:
        return None
    return value.upper() if _TERMINAL_TYPE.fullmatch(value) else None


def _escape_iac(data: bytes) -> bytes:
    return data.replace(b"\xff", b"\xff\xff")


def negotiation(command: int, option: int) -> bytes:
    return bytes((IAC, command, option))


def subnegotiation(option: int, payload: bytes) -> bytes:
    return bytes((IAC, SB, option)) + _escape_iac(payload) + bytes((IAC, SE))


class TelnetProtocol:
    """The client end of one TELNET connection, without I/O.

    `receive(data)` takes bytes from the server and returns the bytes for
    the terminal and the bytes to send back; `send(keys)` turns what the
    user typed into wire bytes.  `notes` collects a readable trace of the
    negotiation ("< DO TTYPE", "> WONT TTYPE"), drained by `take_notes()`.
    """

    def __init__(
        self,
        *,
        terminal_type: str | None = None,
        window_size: tuple[int, int] | None = None,
        local_options: Iterable[int] | None = None,
        remote_options: Iterable[int] | None = None,
    ) -> None:
        self.terminal_type = clean_terminal_type(terminal_type)
        self.window_size = window_size
        if local_options is None:
            local = {SGA, BINARY}
            if self.terminal_type is not None:
                local.add(TTYPE)
            if window_size is not None:
                local.add(NAWS)
            local_options = local
        self.local_options = frozenset(local_options)
        self.remote_options = frozenset({ECHO, SGA, BINARY} if remote_options is None else remote_options)
        self._us: dict[int, Side] = {}
        self._him: dict[int, Side] = {}
        self._state = _In.DATA
        self._command = 0
        self._sb_option = 0
        self._sb = bytearray()
        self._sb_overflow = False
        self._sent_cr = False
        self.notes: list[str] = []
        self.protocol_errors = 0

    # -- state queries --------------------------------------------------------

    def local_enabled(self, option: int) -> bool:
        return self._side(self._us, option).state is Q.YES

    def remote_enabled(self, option: int) -> bool:
        return self._side(self._him, option).state is Q.YES

    def local_state(self, option: int) -> Side:
        side = self._side(self._us, option)
        return Side(side.state, side.opposite)

    def remote_state(self, option: int) -> Side:
        side = self._side(self._him, option)
        return Side(side.state, side.opposite)

    @property
    def remote_echo(self) -> bool:
        """The server echoes what we send: the terminal must not echo locally."""
        return self.remote_enabled(ECHO)

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    @staticmethod
    def _side(table: dict[int, Side], option: int) -> Side:
        side = table.get(option)
        if side is None:
            side = table[option] = Side()
        return side

    # -- receiving ------------------------------------------------------------

    def receive(self, data: bytes) -> tuple[bytes, bytes]:
        """Bytes from the server -> (bytes for the terminal, bytes to send back)."""
        out = bytearray()
        reply = bytearray()
        binary_in = self.remote_enabled(BINARY)
        state = self._state
        i = 0
        size = len(data)
        while i < size:
            if state is _In.DATA or state is _In.CR:
                # Copy the run up to the next IAC (or CR, when the NVT rules apply) at once.
                if state is _In.CR:
                    state = _In.DATA
                    if data[i] == NUL:
                        i += 1
                        continue
                stop = data.find(b"\xff", i)
                if stop < 0:
                    stop = size
                if not binary_in:
                    cr = data.find(b"\r", i, stop)
                    if cr >= 0:
                        out += data[i : cr + 1]
                        i = cr + 1
                        state = _In.CR
                        continue
                out += data[i:stop]
                i = stop
                if i < size:
                    state = _In.IAC
                    i += 1
                continue
            byte = data[i]
            i += 1
            if state is _In.IAC:
                if byte == IAC:
                    out.append(IAC)
                    state = _In.DATA
                elif byte in (WILL, WONT, DO, DONT):
                    self._command = byte
                    state = _In.NEGOTIATE
                elif byte == SB:
                    state = _In.SB_OPTION
                else:
                    # NOP, DM, GA, AYT, EC, EL, IP, AO, BRK, a stray SE, or an undefined
                    # code: nothing for a client terminal to do.
                    if byte != NOP:
                        self.notes.append(f"< IAC {COMMAND_NAMES.get(byte, str(byte))}")
                    state = _In.DATA
            elif state is _In.NEGOTIATE:
                state = _In.DATA
                reply += self._negotiate(self._command, byte)
                binary_in = self.remote_enabled(BINARY)
            elif state is _In.SB_OPTION:
                self._sb_option = byte
                self._sb.clear()
                self._sb_overflow = False
                state = _In.SB_DATA
            elif state is _In.SB_DATA:
                stop = data.find(b"\xff", i - 1)
                if stop < 0:
                    stop = size
                self._collect(data[i - 1 : stop])
                i = stop
                if i < size:
                    i += 1
                    state = _In.SB_IAC
            else:  # SB_IAC
                if byte == IAC:
                    self._collect(b"\xff")
                    state = _In.SB_DATA
                elif byte == SE:
                    reply += self._subnegotiation_done()
                    state = _In.DATA
                else:
                    # RFC 855 allows only IAC IAC and IAC SE here: the SE was lost.
                    # Drop the subnegotiation and read this byte as the command it is.
                    self.protocol_errors += 1
                    self.notes.append(f"< SB {option_name(self._sb_option)} cut short by IAC {byte}")
                    self._sb.clear()
                    state = _In.IAC
                    i -= 1
        self._state = state
        return bytes(out), bytes(reply)

    def _collect(self, chunk: bytes) -> None:
        room = MAX_SUBNEGOTIATION - len(self._sb)
        if len(chunk) > room:
            self._sb_overflow = True
            chunk = chunk[: max(room, 0)]
        self._sb += chunk

    def _subnegotiation_done(self) -> bytes:
        option, payload = self._sb_option, bytes(self._sb)
        self._sb.clear()
        name = option_name(option)
        if self._sb_overflow:
            self.protocol_errors += 1
            self.notes.append(f"< SB {name} longer than {MAX_SUBNEGOTIATION} bytes: ignored")
            return b""
        self.notes.append(f"< SB {name} {payload!r}")
        if option == TTYPE and payload == bytes((TTYPE_SEND,)) and self.local_enabled(TTYPE):
            assert self.terminal_type is not None
            self.notes.append(f"> SB TTYPE IS {self.terminal_type}")
            return subnegotiation(TTYPE, bytes((TTYPE_IS,)) + self.terminal_type.encode("ascii"))
        # Anything else (a subnegotiation for an option that is not on, or one
        # this client has nothing to say to) is ignored, as RFC 855 allows.
        return b""

    # -- negotiation: the Q method ---------------------------------------------

    def _send(self, command: int, option: int) -> bytes:
        self.notes.append(f"> {COMMAND_NAMES[command]} {option_name(option)}")
        return negotiation(command, option)

    def _negotiate(self, command: int, option: int) -> bytes:
        self.notes.append(f"< {COMMAND_NAMES[command]} {option_name(option)}")
        if command in (WILL, WONT):
            side, agree, yes, no = self._him.get(option), option in self.remote_options, DO, DONT
            side = self._side(self._him, option) if side is None else side
        else:
            side, agree, yes, no = self._us.get(option), option in self.local_options, WILL, WONT
            side = self._side(self._us, option) if side is None else side
        enable = command in (WILL, DO)
        reply = b""
        if enable:
            if side.state is Q.NO:
                if agree:
                    side.state = Q.YES
                    reply = self._send(yes, option) + self._enabled(command, option)
                else:
                    reply = self._send(no, option)
            elif side.state is Q.WANTNO:
                # Our refusal was answered by an agreement (RFC 1143 calls it an error).
                self.protocol_errors += 1
                if side.opposite:
                    side.state, side.opposite = Q.YES, False
                    reply = self._enabled(command, option)
                else:
                    side.state = Q.NO
            elif side.state is Q.WANTYES:
                reply = self._answered(side, option, command, Q.YES, Q.WANTNO, no)
        else:
            if side.state is Q.YES:
                side.state = Q.NO
                reply = self._send(no, option)
            elif side.state is Q.WANTNO:
                reply = self._answered(side, option, command, Q.NO, Q.WANTYES, yes)
            elif side.state is Q.WANTYES:
                side.state, side.opposite = Q.NO, False
        return reply

    def _answered(self, side: Side, option: int, command: int, settled: Q, reverse: Q, reversing: int) -> bytes:
        """The answer we asked for came: settle there, or start the reversal queued meanwhile (RFC 1143 §7).

        The same step for an awaited agreement (settled YES) and an awaited
        refusal (settled NO); `_enabled` adds nothing for a refusal.
        """
        if side.opposite:
            side.state, side.opposite = reverse, False
            return self._send(reversing, option)
        side.state = settled
        return self._enabled(command, option)

    def _enabled(self, command: int, option: int) -> bytes:
        """What to send once an option of ours is on (NAWS reports the size at once)."""
        if command == DO and option == NAWS and self.window_size is not None:
            return self._naws(*self.window_size)
        return b""

    def _request(self, table: dict[int, Side], option: int, enable: bool, yes: int, no: int) -> bytes:
        """RFC 1143 §7: ask for a change, or queue it behind the answer awaited (or cancel a queued one).

        Disabling is enabling mirrored: the same steps with YES for NO,
        WANTNO for WANTYES and the refusing command for the agreeing one.
        """
        side = self._side(table, option)
        settled, toward, away, asking = (Q.NO, Q.WANTYES, Q.WANTNO, yes) if enable else (Q.YES, Q.WANTNO, Q.WANTYES, no)
        if side.state is settled:
            side.state = toward
            return self._send(asking, option)
        if side.state is away:
            side.opposite = True  # change back once the pending answer comes
        elif side.state is toward:
            side.opposite = False  # already on the way: forget a queued reversal
        return b""

    def request_local(self, option: int, enable: bool = True) -> bytes:
        """Offer (WILL) or withdraw (WONT) an option on our side; bytes to send."""
        if enable and option not in self.local_options:
            raise ValueError(f"option {option_name(option)} is not implemented on this side")
        return self._request(self._us, option, enable, WILL, WONT)

    def request_remote(self, option: int, enable: bool = True) -> bytes:
        """Ask the server to enable (DO) or disable (DONT) an option; bytes to send."""
        if enable and option not in self.remote_options:
            raise ValueError(f"option {option_name(option)} is not implemented on this side")
        return self._request(self._him, option, enable, DO, DONT)

    # -- window size ------------------------------------------------------------

    def _naws(self, columns: int, rows: int) -> bytes:
        columns = max(0, min(columns, 0xFFFF))
        rows = max(0, min(rows, 0xFFFF))
        self.notes.append(f"> SB NAWS {columns}x{rows}")
        return subnegotiation(NAWS, columns.to_bytes(2, "big") + rows.to_bytes(2, "big"))

    def resize(self, columns: int, rows: int) -> bytes:
        """The terminal changed size: the NAWS report to send (b"" unless NAWS is on)."""
        self.window_size = (columns, rows)
        return self._naws(columns, rows) if self.local_enabled(NAWS) else b""

    # -- sending -------------------------------------------------------------------

    def send(self, keys: bytes) -> bytes:
        """What the user typed -> wire bytes.

        IAC is doubled.  Unless our side is BINARY, the NVT end-of-line rules
        apply: a CR (Enter on a raw terminal) goes out as CR NUL, an LF (a
        line from a pipe) as CR LF, and the LF of a CR LF pair is not sent
        twice, even when the pair is split between two reads.
        """
        if not keys:
            return b""
        if self.local_enabled(BINARY):
            self._sent_cr = False
            return _escape_iac(keys)
        out = bytearray()
        for part in re.split(rb"(\r|\n)", keys):
            if part == b"\r":
                out += b"\r\x00"
                self._sent_cr = True
            elif part == b"\n":
                if not self._sent_cr:
                    out += b"\r\n"
                self._sent_cr = False
            elif part:
                out += _escape_iac(part)
                self._sent_cr = False
        return bytes(out)


def describe(data: bytes) -> str:
    """A readable rendering of wire bytes with their telnet commands, for traces and tests."""
    words: list[str] = []
    text = bytearray()
    i = 0

    def flush() -> None:
        if text:
            words.append(repr(bytes(text)))
            text.clear()

    while i < len(data):
        byte = data[i]
        if byte != IAC or i + 1 >= len(data):
            text.append(byte)
            i += 1
            continue
        command = data[i + 1]
        if command == IAC:
            text.append(IAC)
            i += 2
            continue
        flush()
        if command in (WILL, WONT, DO, DONT) and i + 2 < len(data):
            words.append(f"{COMMAND_NAMES[command]} {option_name(data[i + 2])}")
            i += 3
        else:
            words.append(COMMAND_NAMES.get(command, str(command)))
            i += 2
            if command == SB and i < len(data):
                words.append(option_name(data[i]))
                i += 1
    flush()
    return " ".join(words)

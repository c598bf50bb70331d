"""The bottom layer of the WAIS wire format (wais.md §2, §3): pure functions over bytes.

WAIS does not use BER.  It writes Z39.50-1988 with the "data tag" encoding
of the Thinking Machines library: tags and lengths are compressed integers
(big-endian base 128, continuation bit on every byte but the last), numbers
are minimal big-endian byte strings behind a tag and a size, and every
message starts with a 25-byte ASCII header.  Everything here is shared by the
client and the test server, so both speak exactly the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from fetcher.errors import LimitExceeded

HEADER_SIZE = 25
#: Values a compressed integer may hold (the writers use at most 4 bytes).
CINT_LIMIT = 1 << 28
#: Numbers wider than this are not numbers any WAIS implementation writes.
MAX_NUM_SIZE = 8
#: The caps decoders apply when given none (the defaults of `fetcher.settings.Limits`:
#: wais_field_bytes, wais_apdu_bytes, listing_entries).
DEFAULT_MAX_FIELD = 1024 * 1024
DEFAULT_MAX_APDU = 16 * 1024 * 1024
DEFAULT_MAX_RECORDS = 200_000


class WaisDecodeError(ValueError):
    """Bytes that are not a valid WAIS message; the text says where and why."""


class WaisEncodeError(ValueError):
    """A value that cannot be written in the WAIS encoding."""


# -- the 25-byte message header ----------------------------------------------------


@dataclass(frozen=True)
class Header:
    """The ASCII header before every APDU (wais.md §2).

    Bytes 10..23 are kept as received: a server copies them into its reply.
    """

    length: int
    message_type: str = "z"
    version: str = "2"
    server_name: bytes = b"wais      "
    compression: str = " "
    encoding: str = " "
    checksum: str = "0"

    def encode(self) -> bytes:
        if not 0 <= self.length < 10**10:
            raise WaisEncodeError(f"a message of {self.length} bytes does not fit the 10-digit length field")
        name = self.server_name[:10].ljust(10, b" ")
        fields = (self.message_type, self.version, self.compression, self.encoding, self.checksum)
        if any(len(field) != 1 or not field.isascii() for field in fields):
            raise WaisEncodeError("header flags are single ASCII characters")
        return (
            b"%010d" % self.length
            + (self.message_type + self.version).encode("ascii")
            + name
            + (self.compression + self.encoding + self.checksum).encode("ascii")
        )

    def reply(self, length: int) -> Header:
        """The header a server answers with: our flags, its length, checksum "0"."""
        return Header(length, self.message_type, self.version, self.server_name, self.compression, self.encoding)


def decode_header(data: bytes) -> Header:
    """The header of one message; the reader lower-cases the flag bytes as freeWAIS-sf does."""
    if len(data) != HEADER_SIZE:
        raise WaisDecodeError(f"a WAIS header is {HEADER_SIZE} bytes, not {len(data)}")
    digits = data[:10]
    if not digits.isdigit():
        raise WaisDecodeError(f"the header does not start with a 10-digit length: {digits!r}")
    flags = data[10:12].lower() + data[22:25].lower()
    if not flags.isascii():
        raise WaisDecodeError(f"the header flags are not ASCII: {flags!r}")
    text = flags.decode("ascii")
    return Header(int(digits), text[0], text[1], bytes(data[12:22]), text[2], text[3], text[4])


def message(apdu: bytes, reply_to: Header | None = None) -> bytes:
    """Header plus APDU: one whole message; a reply copies the request's flags."""
    header = reply_to.reply(len(apdu)) if reply_to is not None else Header(len(apdu))
    return header.encode() + apdu


# -- compressed integers, tagged elements, numbers -------------------------------


def encode_cint(value: int) -> bytes:
    """Minimal compressed integer: 7 bits per byte, high bit set on all but the last."""
    if not 0 <= value < CINT_LIMIT:
        raise WaisEncodeError(f"{value} does not fit a compressed integer (0 to 2**28 - 1)")
    out = [value & 0x7F]
    value >>= 7
    while value:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(out))


def decode_cint(data: bytes, position: int = 0, end: int | None = None) -> tuple[int, int]:
    """(value, position after it); accepts the 0x80 padding bytes the C reader accepts."""
    end = len(data) if end is None else end
    value = 0
    while True:
        if position >= end:
            raise WaisDecodeError(f"a compressed integer runs past the end at offset {position}")
        byte = data[position]
        position += 1
        value = (value << 7) | (byte & 0x7F)
        if value >= CINT_LIMIT:
            raise WaisDecodeError(f"a compressed integer at offset {position - 1} is larger than 2**28")
        if not byte & 0x80:
            return value, position


def element(tag: int, value: bytes) -> bytes:
    """A tagged element: tag, length, bytes (strings carry no NUL)."""
    return encode_cint(tag) + encode_cint(len(value)) + value


def text(value: str) -> bytes:
    """A string as the wire bytes it stands for (non-UTF-8 octets kept as surrogates)."""
    return value.encode("utf-8", "surrogateescape")


def string(tag: int, value: str | None) -> bytes:
    """A tagged string, or nothing when absent."""
    return b"" if value is None else element(tag, text(value))


def num_bytes(value: int) -> bytes:
    """The minimal big-endian form the library writes; negatives always take 4 bytes."""
    if value < 0:
        if value < -(1 << 31):
            raise WaisEncodeError(f"{value} does not fit 4 bytes")
        return (value & 0xFFFFFFFF).to_bytes(4, "big")
    if value >= 1 << 32:
        raise WaisEncodeError(f"{value} does not fit 4 bytes")
    size = 1 if value < 1 << 8 else 2 if value < 1 << 16 else 3 if value < 1 << 24 else 4
    return value.to_bytes(size, "big")


def num(tag: int, value: int | None) -> bytes:
    """A tagged number, or nothing when unused (the library's -1)."""
    return b"" if value is None else element(tag, num_bytes(value))


def bitmap(tag: int, bits: tuple[bool, ...]) -> bytes:
    """Bits packed most significant first (bit 0 is 0x80 of the first byte)."""
    packed = bytearray((len(bits) + 7) // 8)
    for index, bit in enumerate(bits):
        if bit:
            packed[index // 8] |= 0x80 >> (index % 8)
    return element(tag, bytes(packed))


def unpack_bits(data: bytes) -> tuple[bool, ...]:
    return tuple(bool(byte & (0x80 >> bit)) for byte in data for bit in range(8))


def capped(value: bytes, limit: int, what: str) -> bytes:
    """`value` if it fits a field cap, else `LimitExceeded` (wais_field_bytes) naming the field."""
    if len(value) > limit:
        raise LimitExceeded(f"bytes in {what} (a WAIS field)", limit, "wais_field_bytes")
    return value


def as_text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def as_num(value: bytes) -> int:
    """Readers take a number's bytes as unsigned, whatever its size."""
    if len(value) > MAX_NUM_SIZE:
        raise WaisDecodeError(f"a number of {len(value)} bytes is wider than any WAIS writer makes")
    return int.from_bytes(value, "big")


class Reader:
    """A cursor over one region of a message; every read is bounds-checked."""

    def __init__(self, data: bytes, position: int = 0, end: int | None = None) -> None:
        self.data = data
        self.position = position
        self.end = len(data) if end is None else end
        if not 0 <= self.position <= self.end <= len(data):
            raise WaisDecodeError("a region of the message lies outside it")

    @property
    def remaining(self) -> int:
        return self.end - self.position

    def at_end(self) -> bool:
        return self.position >= self.end

    def fixed(self, size: int, what: str) -> bytes:
        if self.position + size > self.end:
            raise WaisDecodeError(f"{what} needs {size} bytes at offset {self.position}, {self.remaining} left")
        value = self.data[self.position : self.position + size]
        self.position += size
        return value

    def integer(self, size: int, what: str) -> int:
        """An untagged big-endian integer of the fixed part (PDU type, counts, HLI)."""
        return int.from_bytes(self.fixed(size, what), "big")

    def cint(self) -> int:
        value, self.position = decode_cint(self.data, self.position, self.end)
        return value

    def peek_tag(self) -> int:
        value, _ = decode_cint(self.data, self.position, self.end)
        return value

    def element(self) -> tuple[int, bytes]:
        """The next tagged element as (tag, value bytes)."""
        start = self.position
        tag = self.cint()
        size = self.cint()
        if self.position + size > self.end:
            raise WaisDecodeError(
                f"element with tag {tag} at offset {start} announces {size} bytes, only {self.remaining} left"
            )
        return tag, self.fixed(size, f"element {tag}")

    def expect(self, tag: int, what: str) -> bytes:
        found, value = self.element()
        if found != tag:
            raise WaisDecodeError(f"expected {what} (tag {tag}), found tag {found}")
        return value

    def region(self, size: int) -> Reader:
        """A reader over the next `size` bytes, which this reader then skips."""
        if self.position + size > self.end:
            raise WaisDecodeError(f"a block of {size} bytes at offset {self.position} runs past its end")
        inner = Reader(self.data, self.position, self.position + size)
        self.position += size
        return inner

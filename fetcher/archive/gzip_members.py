"""Gzip member arithmetic for WARC records: deflated and stored members, CRC-32 combination, stored blocks.

Every WARC record is one gzip member (RFC 1952), so a reader can seek to
any record.  A member is deflated (`Member`), or made of stored deflate
blocks (`StoredMember`, `stored_blocks`: RFC 1951 3.2.4) for a payload that
does not compress (`incompressible`), and a record written while its bytes
stream (`fetcher.archive.in_place`) takes its CRC-32 as the CRC of its head
combined with that of its payload (`crc32_combine`).  Pure byte arithmetic:
no archive format, no I/O beyond the file object given.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import IO

#: A payload whose first SAMPLE bytes deflate to more than STORED_RATIO of
#: their size (random, or already compressed: zip, jpeg, gzip) is stored in
#: its gzip member without compression: deflating it runs at ~40 MB/s for a
#: gain under a few percent, while storing runs at memory speed.
SAMPLE = 256 * 1024
STORED_RATIO = 0.9


class Member:
    """A gzip member around one record (warcio's writer with gzip=False writes into it)."""

    def __init__(self, out: IO[bytes], level: int) -> None:
        self.out = out
        self.compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS + 16)

    def write(self, data: bytes) -> None:
        self.out.write(self.compressor.compress(data))

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        self.out.write(self.compressor.flush())


class StoredMember:
    """A gzip member of stored deflate blocks (RFC 1951 §3.2.4): for payloads that do not compress.

    zlib at level 0 still copies every byte through its window (~0.5 GB/s);
    framing the bytes as stored blocks ourselves costs a CRC-32 and a write.
    """

    HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # no name, no mtime, OS unknown
    BLOCK = 0xFFFF

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.crc = 0
        self.size = 0
        out.write(self.HEADER)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        self.crc = zlib.crc32(view, self.crc)
        self.size += len(view)
        for start in range(0, len(view), self.BLOCK):
            piece = view[start : start + self.BLOCK]
            length = len(piece)
            self.out.write(b"\x00" + struct.pack("<HH", length, length ^ 0xFFFF))
            self.out.write(piece)

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        self.out.write(b"\x01\x00\x00\xff\xff" + struct.pack("<II", self.crc, self.size & 0xFFFFFFFF))


_CRC_POLY = 0xEDB88320


def _multiply_mod_p(a: int, b: int) -> int:
    """a * b modulo the CRC-32 polynomial (bit-reflected, as zlib's multmodp)."""
    m = 1 << 31
    product = 0
    while m:
        if a & m:
            product ^= b
        b = (b >> 1) ^ _CRC_POLY if b & 1 else b >> 1
        m >>= 1
    return product


def _x_to_the_8n(n: int) -> int:
    """x**(8n) modulo the CRC-32 polynomial."""
    power = 1 << 31  # x**0
    square = 1 << 30  # x**1, squared as the bits of 8n are walked
    n *= 8
    while n:
        if n & 1:
            power = _multiply_mod_p(square, power)
        square = _multiply_mod_p(square, square)
        n >>= 1
    return power


def crc32_combine(crc1: int, crc2: int, length2: int) -> int:
    """The CRC-32 of A+B from the CRC of A, the CRC of B and B's length (zlib's crc32_combine)."""
    return _multiply_mod_p(_x_to_the_8n(length2), crc1) ^ crc2


_FULL_STORED_BLOCK = b"\x00" + struct.pack("<HH", 0xFFFF, 0)


def stored_blocks(pieces: Sequence[bytes]) -> list[bytes | memoryview]:
    """The pieces framed as non-final stored deflate blocks (RFC 1951 3.2.4), as buffers for writev.

    Blocks are full (65535 bytes) across the pieces' boundaries, so nothing is copied.
    """
    buffers: list[bytes | memoryview] = []
    remaining = sum(len(piece) for piece in pieces)
    room = 0  # bytes the current block still takes
    for piece in pieces:
        view = memoryview(piece)
        start = 0
        while start < len(view):
            if not room:
                room = min(0xFFFF, remaining)
                header = b"\x00" + struct.pack("<HH", room, room ^ 0xFFFF) if room < 0xFFFF else _FULL_STORED_BLOCK
                buffers.append(header)
            take = min(room, len(view) - start)
            buffers.append(view[start : start + take] if take < len(view) else view)
            start += take
            room -= take
            remaining -= take
    return buffers


def incompressible(sample: bytes) -> bool:
    """True when a sample deflates to more than STORED_RATIO of its size (random, or compressed already)."""
    return len(sample) >= 4096 and len(zlib.compress(sample, 1)) > STORED_RATIO * len(sample)

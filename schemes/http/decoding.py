"""Content-Encoding decoders that stream with bounded output.

Each `feed` yields decoded pieces of at most `PIECE` bytes and never holds
more than one piece: a gzip bomb (a few KiB that inflate to gigabytes) is
decoded lazily, so the caller's size limit stops it after the limit, not
after the memory is gone.  Two caps of `fetcher.settings.Limits` arrive as
arguments of `decoder_for`: how many codings may stack (`encodings`) and how
many decoded bytes one received byte may become (`decoded_ratio`).  Pure:
bytes in, bytes out, no I/O.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Protocol

from fetcher.errors import LimitExceeded, ProtocolError
from fetcher.text import escape

PIECE = 256 * 1024
GZIP_MAGIC = b"\x1f\x8b"


class Decoder(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]: ...
    def flush(self) -> Iterator[bytes]: ...


def _inflate(inflater: zlib._Decompress, data: bytes, coding: str) -> Iterator[bytes]:
    """Run `data` through `inflater`, PIECE bytes of output at a time."""
    try:
        while data:
            out = inflater.decompress(data, PIECE)
            if not out and len(inflater.unconsumed_tail) >= len(data):
                break
            data = inflater.unconsumed_tail
            if out:
                yield out
            if inflater.eof:
                break
    except zlib.error as error:
        raise ProtocolError(
            f"the {coding} body is corrupt: {error}",
            hint="retry with --raw to save the bytes exactly as sent",
        ) from None


class GzipDecoder:
    """gzip (RFC 1952), including several concatenated members."""

    coding = "gzip"

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._started = False
        self._trailing = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            if self._inflater.eof:
                data = self._trailing + data
                self._trailing = b""
                if len(data) < 2:
                    self._trailing = data
                    return
                if data[:2] != GZIP_MAGIC:
                    if data.strip(b"\x00"):
                        raise ProtocolError("data after the end of the gzip stream", hint="retry with --raw")
                    return
                self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self._started = True
            yield from _inflate(self._inflater, data, self.coding)
            data = self._inflater.unused_data if self._inflater.eof else b""
            if self._inflater.eof and not data:
                return

    def flush(self) -> Iterator[bytes]:
        if self._trailing.strip(b"\x00"):
            raise ProtocolError("data after the end of the gzip stream", hint="retry with --raw")
        if self._started and not self._inflater.eof:
            raise ProtocolError("the gzip body ended before the end of its stream", hint="try again")
        return iter(())


class DeflateDecoder:
    """HTTP "deflate": zlib-wrapped (RFC 1950) as specified, or raw (RFC 1951) as some servers send."""

    coding = "deflate"

    def __init__(self) -> None:
        self._inflater: zlib._Decompress | None = None
        self._head = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._inflater is None:
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head = self._head, b""
            first, second = data[0], data[1]
            wrapped = first & 0x0F == 8 and (first << 8 | second) % 31 == 0
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        if self._inflater.eof:
            return
        yield from _inflate(self._inflater, data, self.coding)

    def flush(self) -> Iterator[bytes]:
        if self._inflater is None and self._head:
            raise ProtocolError("the deflate body is too short to be valid", hint="retry with --raw")
        if self._inflater is not None and not self._inflater.eof:
            raise ProtocolError("the deflate body ended before the end of its stream", hint="try again")
        return iter(())


class Chain:
    """Several codings, undone in turn (`Content-Encoding: deflate, gzip` means gzip was applied last).

    The stages are run by an explicit stack rather than by nested generators,
    so the depth of the chain never becomes the depth of the Python stack
    (3000 stacked codings once ended in a RecursionError).  Each stage holds
    at most one pending piece: memory is the number of stages times PIECE.
    """

    def __init__(self, decoders: list[Decoder]) -> None:
        self._decoders = decoders

    def feed(self, data: bytes) -> Iterator[bytes]:
        return self._run(0, self._decoders[0].feed(data))

    def flush(self) -> Iterator[bytes]:
        for index, decoder in enumerate(self._decoders):
            yield from self._run(index, decoder.flush())

    def _run(self, index: int, pieces: Iterator[bytes]) -> Iterator[bytes]:
        """Pass what decoder `index` produced through the decoders after it."""
        last = len(self._decoders) - 1
        stack = [(index, pieces)]
        while stack:
            stage, source = stack[-1]
            piece = next(source, None)
            if piece is None:
                stack.pop()
            elif stage == last:
                yield piece
            elif piece:
                stack.append((stage + 1, self._decoders[stage + 1].feed(piece)))


#: The decoded/encoded ratio is judged only past this many decoded bytes:
#: small bodies of zeros or of one repeated line compress far beyond any
#: sane ratio, and are harmless.
RATIO_FLOOR = 1 << 20


class Bounded:
    """A decoder that stops a compression bomb: decoded bytes per received byte are capped."""

    def __init__(self, inner: Decoder, max_ratio: int, floor: int = RATIO_FLOOR) -> None:
        self._inner = inner
        self._max_ratio = max_ratio
        self._floor = floor
        self.encoded = 0
        self.decoded = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        self.encoded += len(data)
        return self._count(self._inner.feed(data))

    def flush(self) -> Iterator[bytes]:
        return self._count(self._inner.flush())

    def _count(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            self.decoded += len(piece)
            if self.decoded > self._floor and self.decoded > self._max_ratio * max(self.encoded, 1):
                raise LimitExceeded("decoded bytes per encoded byte (a compression bomb?)", self._max_ratio,
                                    "decoded_ratio")  # fmt: skip
            yield piece


DECODERS: dict[str, Callable[[], Decoder]] = {"gzip": GzipDecoder, "x-gzip": GzipDecoder, "deflate": DeflateDecoder}


def decoder_for(
    codings: list[str], *, max_encodings: int, max_ratio: int, ratio_floor: int = RATIO_FLOOR
) -> Decoder | None:
    """A decoder for a Content-Encoding list (the order the server applied them), or None.

    More than `max_encodings` codings (identity included) raise
    `LimitExceeded` before any decoder is built; the decoder returned
    raises it once the body inflates past `max_ratio` times its size (judged
    past `ratio_floor` decoded bytes).
    """
    if len(codings) > max_encodings:
        raise LimitExceeded("stacked content encodings", max_encodings, "encodings")
    codings = [coding for coding in codings if coding != "identity"]
    if not codings:
        return None
    unknown = [coding for coding in codings if coding not in DECODERS]
    if unknown:
        raise ProtocolError(
            f"the server used a content encoding fetcher cannot decode: {escape(', '.join(unknown))}",
            hint="--raw saves the encoded bytes as they came",
        )
    decoders: list[Decoder] = [DECODERS[coding]() for coding in reversed(codings)]
    return Bounded(decoders[0] if len(decoders) == 1 else Chain(decoders), max_ratio, ratio_floor)

"""Hostile WAIS servers (TCP on loopback, trio): replies built to make a client grow or lie.

Each `HostileWais` answers Init honestly (it must, or no client would ask
anything) and then answers every search the way its `kind` says:

- "hits": a SearchResponse with `count` tiny hits (6 bytes each on the wire);
- "field": one hit whose headline is `size` bytes;
- "declared": a message header announcing `length` bytes (2**31 by
  default), then a few bytes, then silence: a client that allocates by the
  announced length, or waits for it, loses;
- "escapes": hits and a diagnostic full of terminal escape sequences;
- "diagnostic": no hits, only a diagnostic with escape sequences in it.

Replies are assembled from the codec's pieces by repetition, so a 16 MiB
hit list costs the server a fraction of a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from fetcher.schemes.wais.codec import (
    HEADER_SIZE,
    Diagnostic,
    DocumentHeader,
    Header,
    Init,
    InitResponse,
    SearchResponse,
    decode_header,
    message,
    pdu_type,
)
from fetcher.schemes.wais.codec.apdu import SEARCH_RESPONSE, T_PRESENT_STATUS, T_USER_INFO, frame
from fetcher.schemes.wais.codec.wire import element, num
from tests.servers.common import serving as serving  # the tests import it from here

#: What an attacker writes where a terminal will show it: clear screen, set the title, bell, OSC 52.
ESCAPES = "\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07\x9b31m"


def hit_list(count: int) -> bytes:
    """A SearchResponse APDU with `count` copies of the smallest valid hit."""
    hit = DocumentHeader(docid=b"d").encode()
    fields = bytes([0]) + min(count, 2**24 - 1).to_bytes(3, "big") * 2 + bytes(3) + num(T_PRESENT_STATUS, 0)
    return frame(SEARCH_RESPONSE, fields, element(T_USER_INFO, hit * count))


@dataclass
class HostileWais:
    kind: str
    count: int = 300_000
    size: int = 2 * 1024 * 1024
    length: int = 2**31
    port: int = 0
    #: Searches received, and whether the client hung up on the "declared" reply.
    searches: int = 0
    closed_by_client: list[bool] = field(default_factory=list)

    def reply(self) -> bytes:
        if self.kind == "hits":
            return hit_list(self.count)
        if self.kind == "field":
            return SearchResponse(headers=(DocumentHeader(docid=b"d", headline="x" * self.size),)).encode()
        if self.kind == "escapes":
            return SearchResponse(
                headers=(DocumentHeader(docid=b"d", headline=f"{ESCAPES}headline", source=ESCAPES, types=("TEXT",)),),
                diagnostics=(Diagnostic("S5", f"{ESCAPES}note"),),
                seed_words_used=ESCAPES,
            ).encode()
        if self.kind == "diagnostic":
            return SearchResponse(diagnostics=(Diagnostic("S5", f"{ESCAPES}failure"),)).encode()
        raise ValueError(f"unknown kind {self.kind!r}")

    async def handle(self, stream: trio.SocketStream) -> None:
        buffer = bytearray()

        async def exact(count: int) -> bytes | None:
            while len(buffer) < count:
                data = await stream.receive_some(65536)
                if not data:
                    return None
                buffer.extend(data)
            chunk = bytes(buffer[:count])
            del buffer[:count]
            return chunk

        try:
            while True:
                head = await exact(HEADER_SIZE)
                if head is None:
                    return
                header = decode_header(head)
                body = await exact(header.length)
                if body is None:
                    return
                if pdu_type(body) == 20:
                    request = Init.decode(body)
                    answer = InitResponse(
                        preferred_message_size=request.preferred_message_size,
                        maximum_record_size=request.maximum_record_size,
                        implementation_name=f"{ESCAPES}server" if self.kind == "escapes" else "hostile",
                    ).encode()
                    await stream.send_all(message(answer, reply_to=header))
                    continue
                self.searches += 1
                if self.kind == "declared":
                    await stream.send_all(Header(self.length).encode() + b"\x00\x05\x17")
                    self.closed_by_client.append(await exact(1) is None)
                    return
                await stream.send_all(message(self.reply(), reply_to=header))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            with trio.move_on_after(1, shield=True):
                await stream.aclose()

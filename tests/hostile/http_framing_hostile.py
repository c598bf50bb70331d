"""A hostile HTTP/1.1 server for pipelining and connection reuse: framing a client must not guess at.

It answers pipelined GETs in order, one connection at a time as it reads
them, and records what it received and what it answered, so a test can
assert that every URL was answered exactly once where that is possible.
The classes it stands for (issue 29, items 11 and 12):

* **Ambiguous framing** (`AMBIGUOUS`): a head with two different
  `Content-Length` values, `Content-Length` together with `chunked`, a `206`
  that answers a request without `Range`.  The reply cannot be read without
  guessing where it ends; a client must fail that URL (not the others) and
  must not read the rest of the stream as the next replies.
* **A connection closed after N replies** (`close_after`), with requests
  still pipelined behind the Nth, the way nginx's `keepalive_requests` (1,000
  by default) and Apache's `MaxKeepAliveRequests` end every busy connection:
  - `"header"`: the Nth reply says `Connection: close`, then the server reads
    and drops what else arrives (nginx's lingering close);
  - `"silent"`: the same without the header (the client meets the end of
    the stream where the next reply would start);
  - `"reset"`: the Nth reply, then an abortive close (RST) with the
    unanswered requests unread;
  - `"mid-body"`: the Nth reply is cut off halfway through its body.
* **A reply nobody asked for** (`unsolicited`): after the reply to one of
  these paths, once the client has read it and the connection is idle
  (the test says when: `gate`), a second complete reply arrives on its
  own.  A client that reuses the connection would read it as the answer
  to its next request.

With `tls` it speaks HTTPS (only `close_how="header"` then: TLS has no
half-close to linger with).

Documents are `/NAME` with the bytes `body(NAME)`; `/ambiguous/KIND/NAME`
answers NAME's body with KIND's framing.
"""

from __future__ import annotations

import hashlib
import socket
import ssl
import struct
from collections import Counter
from dataclasses import dataclass, field

import trio

from tests.servers.http_server import loopback_listeners

#: The kinds of ambiguous framing, by the path segment that asks for them.
AMBIGUOUS = ("two-lengths", "length-and-chunked", "unasked-206")
#: The body of the reply nobody asked for: a test looks for it in every file.
UNSOLICITED_BODY = b"NOBODY ASKED FOR THIS REPLY\n"
#: How long the server drains a connection it is closing (lingering close), at most.
LINGER = 10.0


def body(name: str) -> bytes:
    """The bytes of document `name`: distinct per name, a few hundred bytes to a few KB."""
    digest = hashlib.sha256(name.encode()).digest()
    return digest * (1 + digest[0] % 40) + name.encode() + b"\n"


def _head(status: int, reason: str, fields: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in fields)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _ambiguous(kind: str, data: bytes) -> bytes:
    """`data` as a reply framed the way `kind` says (see the module docstring)."""
    if kind == "two-lengths":
        return _head(200, "OK", [("Content-Length", str(len(data))), ("Content-Length", str(len(data) + 7))]) + data
    if kind == "length-and-chunked":
        chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)
        return _head(200, "OK", [("Content-Length", "5"), ("Transfer-Encoding", "chunked")]) + chunked
    if kind == "unasked-206":
        half = data[: len(data) // 2]
        span = f"bytes 0-{len(half) - 1}/{len(data)}"
        return _head(206, "Partial Content", [("Content-Length", str(len(half))), ("Content-Range", span)]) + half
    raise ValueError(kind)


@dataclass
class FramingServer:
    """`await nursery.start(server.serve)`; then `server.url("/name")`."""

    #: Replies per connection before the server ends it (None: never), and how (module docstring).
    close_after: int | None = None
    close_how: str = "header"
    #: Paths whose reply is followed, once the connection is idle, by a reply nobody asked for.
    unsolicited: frozenset[str] = frozenset()
    #: Set by the test once the client has read the reply before (the connection is idle then).
    gate: trio.Event = field(default_factory=trio.Event)
    tls: ssl.SSLContext | None = None
    port: int = 0
    connections: int = 0
    #: (connection number, path) of every request, in the order they arrived.
    requests: list[tuple[int, str]] = field(default_factory=list)
    #: Replies sent whole, per path.
    answered: Counter[str] = field(default_factory=Counter)
    #: Requests that had arrived before the reply ahead of them was sent (pipelined).
    pipelined: int = 0
    #: Paths whose reply was cut off halfway (`close_how="mid-body"`).
    cut: list[str] = field(default_factory=list)
    #: Replies nobody asked for that were sent.
    unsolicited_sent: int = 0
    #: Set each time a reply nobody asked for has been handed to the socket.
    sent_unsolicited: trio.Event = field(default_factory=trio.Event)

    def url(self, path: str) -> str:
        return f"{'https' if self.tls is not None else 'http'}://127.0.0.1:{self.port}{path}"

    async def serve(self, *, task_status: trio.TaskStatus[FramingServer] = trio.TASK_STATUS_IGNORED) -> None:
        self.port, served = await loopback_listeners(self.tls)
        task_status.started(self)
        await trio.serve_listeners(self._handle, served)

    async def _handle(self, stream: trio.abc.Stream) -> None:
        number = self.connections
        self.connections += 1
        buffer = bytearray()
        replies = 0
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = await stream.receive_some(65536)
                    if not data:
                        return
                    buffer += data
                end = buffer.index(b"\r\n\r\n") + 4
                head, buffer = bytes(buffer[:end]), buffer[end:]
                if b"\r\n\r\n" in buffer:
                    self.pipelined += 1
                path = head.split(b" ", 2)[1].decode("latin-1")
                self.requests.append((number, path))
                replies += 1
                last = self.close_after is not None and replies >= self.close_after
                reply = self._reply(path, close_header=last and self.close_how == "header")
                if last and self.close_how == "mid-body":
                    await stream.send_all(reply[: len(reply) - len(body(path.rsplit("/", 1)[1])) // 2])
                    self.cut.append(path)
                    await stream.aclose()
                    return
                await stream.send_all(reply)
                self.answered[path] += 1
                if last:
                    await self._end(stream, buffer)
                    return
                if path in self.unsolicited and b"\r\n\r\n" not in buffer:
                    await self._unsolicited(stream, buffer)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError):
            pass
        finally:
            with trio.move_on_after(1):
                await stream.aclose()

    def _reply(self, path: str, *, close_header: bool) -> bytes:
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "ambiguous" and parts[1] in AMBIGUOUS:
            return _ambiguous(parts[1], body(parts[2]))
        if len(parts) != 1 or not parts[0]:
            message = b"no such document\n"
            fields = [("Content-Length", str(len(message)))]
            return _head(404, "Not Found", fields + ([("Connection", "close")] if close_header else [])) + message
        data = body(parts[0])
        fields = [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(data)))]
        if close_header:
            fields.append(("Connection", "close"))
        return _head(200, "OK", fields) + data

    async def _end(self, stream: trio.abc.Stream, unread: bytearray) -> None:
        """End the connection after its last reply, as `close_how` says."""
        if self.close_how == "reset":
            assert isinstance(stream, trio.SocketStream)
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await stream.aclose()
            return
        # Lingering close: no more replies, but what the client pipelined is read and dropped,
        # so the close is a FIN after every reply sent, never a reset that could overtake them.
        if isinstance(stream, trio.SocketStream):
            await stream.send_eof()
        with trio.move_on_after(LINGER):
            while await stream.receive_some(65536):
                pass

    async def _unsolicited(self, stream: trio.abc.Stream, buffer: bytearray) -> None:
        """A complete reply nobody asked for, on a connection with no request waiting."""
        await self.gate.wait()
        extra = _head(200, "OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(UNSOLICITED_BODY)))])
        await stream.send_all(extra + UNSOLICITED_BODY)
        self.unsolicited_sent += 1
        self.sent_unsolicited.set()
        self.sent_unsolicited = trio.Event()

"""HTTP servers that make a resume (-C) splice two versions of a file, if the client lets them.

One route, `ChangingFile`, serves a document the test replaces between the
first (interrupted) request and the resumed one, and misbehaves the ways
real servers do around byte ranges:

  honour     RFC 9110: Range with a matching If-Range gets a 206, a stale one the whole new file (200)
  ignore     If-Range is not looked at: a Range always gets the tail of whatever the file is now
  no-ranges  Range is ignored: every request gets the whole file (200)
  shifted    a 206 whose Content-Range starts `shift` bytes before (or after) the byte asked for
  lying      a 206 whose Content-Length is 100 bytes short of its Content-Range

`ChangingFtpServer` is the FTP fake whose file (and MDTM) becomes another
the moment a cut RETR has hung up: a change between two attempts of one run.

Validators can be ETag and Last-Modified, one of them, or none.  The first
`cut` replies stop after that many body bytes and hang up (FIN), so the
client keeps exactly that much in `.part`.  Every request is recorded (by
the test server) for the tests to check what the client sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.servers.ftp_fake import FakeFtpServer, _Session
from tests.servers.http_server import Exchange, Headers, Received


@dataclass
class Version:
    """One version of the document: its bytes and the validators a server would give them."""

    body: bytes
    etag: str | None = None
    modified: str | None = None

    def validators(self) -> Headers:
        found = []
        if self.etag is not None:
            found.append(("ETag", self.etag))
        if self.modified is not None:
            found.append(("Last-Modified", self.modified))
        return found


@dataclass
class ChangingFile:
    """The route: `server.routes[path] = changing.route`; `changing.now = Version(...)` changes the file."""

    now: Version
    mode: str = "honour"
    #: Body bytes each of the next replies sends before the server hangs up.
    cut: list[int] = field(default_factory=list)
    #: How far a "shifted" 206 moves the start of its range (negative: bytes the client already has).
    shift: int = -1000
    #: The version the file becomes the moment a cut reply has hung up (a change between two attempts).
    after_cut: Version | None = None

    async def route(self, request: Received, exchange: Exchange) -> None:
        version = self.now
        body = version.body
        headers = [("Content-Type", "application/octet-stream"), *version.validators()]
        start = self._range_start(request, version)
        if start is not None and start >= len(body):
            await exchange.respond(416, b"", [*headers, ("Content-Range", f"bytes */{len(body)}")])
            return
        if start is None:
            await self._send(exchange, 200, body, headers)
            return
        first = start
        if self.mode == "shifted":
            first = max(0, start + self.shift)
        part = body[first:]
        span = ("Content-Range", f"bytes {first}-{len(body) - 1}/{len(body)}")
        if self.mode == "lying":  # Content-Length 100 bytes short of the range it claims
            part = part[:-100]
        await self._send(exchange, 206, part, [*headers, span])

    def _range_start(self, request: Received, version: Version) -> int | None:
        """Where the reply starts, as this kind of server decides; None: the whole document."""
        wanted = request.header("range")
        if wanted is None or self.mode == "no-ranges":
            return None
        if not (wanted.startswith("bytes=") and wanted.endswith("-") and wanted[6:-1].isdigit()):
            return None
        condition = request.header("if-range")
        if condition is not None and self.mode == "honour" and condition not in (version.etag, version.modified):
            return None  # RFC 9110 §13.1.5: the representation changed, send all of it
        return int(wanted[6:-1])

    async def _send(self, exchange: Exchange, status: int, body: bytes, headers: Headers) -> None:
        if not self.cut:
            await exchange.respond(status, body, headers)
            return
        keep = self.cut.pop(0)
        reason = "OK" if status == 200 else "Partial Content"
        head = [f"HTTP/1.1 {status} {reason}", *(f"{name}: {value}" for name, value in headers),
                f"Content-Length: {len(body)}", "Connection: close"]  # fmt: skip
        await exchange.send(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body[:keep])
        await exchange.close()
        if self.after_cut is not None:
            self.now, self.after_cut = self.after_cut, None


class _ChangingSession(_Session):
    async def do_RETR(self, argument: str) -> None:
        cuts = self.faults.reset_times
        await super().do_RETR(argument)
        server = self.server
        if cuts != self.faults.reset_times and isinstance(server, ChangingFtpServer) and server.after_cut:
            server.files[self.resolve(argument)], server.mdtm = server.after_cut
            server.after_cut = None


class ChangingFtpServer(FakeFtpServer):
    """`after_cut = (bytes, mdtm)`: what the file is once a RETR cut by `Faults.reset_after` hung up."""

    session_class = _ChangingSession
    after_cut: tuple[bytes, bytes] | None = None

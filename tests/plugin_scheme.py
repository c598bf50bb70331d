"""A tiny line protocol used to test the client and CLI plumbing (exit codes,
.part files, timeouts, bulk runs) independently of the real protocol handlers.

`x-test://127.0.0.1:PORT/NAME`: the handler sends `GET NAME`; the server
answers `OK <size>` and the body, `ERR <exit-code> <text>`, or stalls.  It is
registered at test time with `fetcher.registry.register`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Callable

from fetcher.errors import AuthError, NotFound, ProtocolError, TransientError
from fetcher.handler import Connection, Resource, Session
from fetcher.url import URL, GenericURL

ERRORS = {5: AuthError, 6: NotFound, 7: ProtocolError}


class Handler:
    scheme = "x-test"
    default_port = None

    async def open(self, url: URL, session: Session) -> Resource:
        assert isinstance(url, GenericURL) and url.host and url.port
        connection = await session.connect(url.host, url.port)
        await connection.send_line(f"GET {(url.path or '/')[1:]}")
        status = (await connection.read_line()).decode().strip()
        if status.startswith("ERR "):
            await connection.aclose()
            _, code, text = status.split(" ", 2)
            if code == "busy":
                raise TransientError(text)
            raise ERRORS[int(code)](text)
        if not status.startswith("OK "):
            await connection.aclose()
            raise ProtocolError(f"bad status {status!r}")
        size = int(status.split()[1])
        return Resource(url, "document", size=size, body=_body(connection, size), offset=0)


async def _body(connection: Connection, size: int) -> AsyncIterator[bytes]:
    received = 0
    try:
        while received < size:
            chunk = await connection.receive_some(65536)
            if not chunk:
                raise ProtocolError(f"connection closed after {received} of {size} bytes")
            received += len(chunk)
            yield chunk
    finally:
        await connection.aclose()


Reply = Callable[[str], bytes | None]


class LineServer:
    """A threaded socket server: `reply(name)` returns the raw answer, or None to stall."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self.requests: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while not data.endswith(b"\r\n"):
                chunk = conn.recv(1024)
                if not chunk:
                    return
                data += chunk
            name = data.decode().strip()[4:]
            self.requests.append(name)
            # Count a request as active from its arrival until just before its
            # answer leaves: a sub-interval of the client's, so the maximum
            # never overstates the client's concurrency (no race with close).
            with self._lock:
                self.active += 1
                self.max_active = max(self.max_active, self.active)
            try:
                answer = self.reply(name)
            finally:
                with self._lock:
                    self.active -= 1
            if answer is None:
                self._stop.wait(10)
                return
            try:
                conn.sendall(answer)
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self.listener.close()
        self._thread.join(timeout=2)

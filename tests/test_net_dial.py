"""fetcher.net on trio: IP addresses dialled without anyio's resolver, reads and sends on the plain socket.

The direct paths (issue 17) must keep every rule of the stream path:
refused connections, --timeout of silence on reads and on sends, a
cancelled read that takes nothing, a close that the peer sees.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import anyio
import pytest
import trio

import fetcher.net.connect
import fetcher.net.stream
from fetcher.errors import ConnectError, Timeout
from fetcher.net.connect import open_connection


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server
    server.close()


def _port(server: socket.socket) -> int:
    return int(server.getsockname()[1])


async def test_an_address_is_dialled_without_anyio_connect_tcp(
    listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("anyio.connect_tcp was used for an IP address")

    monkeypatch.setattr(anyio, "connect_tcp", refuse)
    connection = await open_connection("127.0.0.1", _port(listener), scheme="http")
    peer, _ = listener.accept()
    try:
        await connection.send_all(b"hello\r\n")
        assert peer.recv(100) == b"hello\r\n"
        peer.sendall(b"line one\r\nrest")
        assert await connection.read_line() == b"line one\r\n"
        assert connection.peer_address() == "127.0.0.1"
        await connection.aclose()
        peer.settimeout(5)
        assert peer.recv(100) == b""  # the close reached the server
    finally:
        peer.close()


async def test_a_name_is_still_resolved_by_anyio(listener: socket.socket, monkeypatch: pytest.MonkeyPatch) -> None:
    dialled: list[str] = []
    real = anyio.connect_tcp

    async def recording(host: str, port: int, **kwargs: object) -> anyio.abc.SocketStream:
        dialled.append(host)
        return await real(host, port)

    monkeypatch.setattr(anyio, "connect_tcp", recording)
    connection = await open_connection("localhost", _port(listener), scheme="http")
    await connection.aclose()
    assert dialled == ["localhost"]


async def test_a_refused_address_is_a_connect_error(listener: socket.socket) -> None:
    port = _port(listener)
    listener.close()
    with pytest.raises(ConnectError, match=f"cannot connect to 127.0.0.1:{port}"):
        await open_connection("127.0.0.1", port, scheme="http")


async def test_a_silent_server_times_out_and_a_cancelled_read_takes_nothing(listener: socket.socket) -> None:
    connection = await open_connection("127.0.0.1", _port(listener), scheme="http", timeout=0.3)
    peer, _ = listener.accept()
    try:
        with pytest.raises(Timeout, match=r"sent nothing for 0\.3 s"):
            await connection.receive_some()
        with trio.move_on_after(0.05) as scope:
            await connection.receive_some()
        assert scope.cancelled_caught
        peer.sendall(b"after")
        assert await connection.receive_some() == b"after"
        peer.close()
        assert await connection.receive_some() == b""
    finally:
        peer.close()
        await connection.aclose()


async def test_a_server_that_stops_reading_times_the_send_out(listener: socket.socket) -> None:
    connection = await open_connection("127.0.0.1", _port(listener), scheme="http", timeout=0.3)
    peer, _ = listener.accept()
    try:
        with pytest.raises(Timeout, match=r"sent nothing for 0\.3 s while sending"):
            for _ in range(10_000):  # far more than both socket buffers hold
                await connection.send_all(b"x" * 65536)
    finally:
        peer.close()
        await connection.aclose()


async def test_dial_gives_the_plain_socket_of_an_address(listener: socket.socket) -> None:
    stream, sock = await fetcher.net.connect.dial("127.0.0.1", _port(listener))
    assert sock is not None
    try:
        assert stream is None  # no anyio stream until one is asked for (Connection.byte_stream)
        assert sock.gettimeout() == 0.0
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        sock.close()


async def test_a_handshake_that_does_not_complete_times_out() -> None:
    # A listener whose accept queue is full drops new SYNs: the connect must wait for
    # writability, and only that wait is bounded (the handshake usually ends in the call).
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = _port(server)
    queued = []
    try:
        for _ in range(4):  # fill the accept queue (nobody accepts)
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            queued.append(filler)
        with pytest.raises(Timeout, match=rf"connecting to 127\.0\.0\.1:{port} took longer than 0\.3 s"):
            await open_connection("127.0.0.1", port, scheme="http", connect_timeout=0.3)
    finally:
        for filler in queued:
            filler.close()
        server.close()


async def test_a_reply_that_comes_while_other_tasks_run_is_read_without_a_wait(
    listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read that finds nothing lets the other tasks run once and asks again before it
    # waits: in a bulk run the reply has usually come by then (no scope, no epoll wait).
    connection = await open_connection("127.0.0.1", _port(listener), scheme="gopher")
    peer, _ = listener.accept()
    waits: list[int] = []
    real = fetcher.net.stream.Stream._receive_raw

    async def counted(self: fetcher.net.stream.Stream, *args: object) -> bytes | None:
        waits.append(1)
        return await real(self, *args)  # type: ignore[arg-type]

    async def others_run_and_the_server_answers() -> None:
        peer.sendall(b"the reply")

    monkeypatch.setattr(fetcher.net.stream.Stream, "_receive_raw", counted)
    stream = fetcher.net.stream
    monkeypatch.setattr(stream, "_direct_left", stream.DIRECT_RUN)  # a direct read is due
    try:
        with monkeypatch.context() as patched:
            patched.setattr(stream, "_scheduling_point", others_run_and_the_server_answers)
            assert await connection.receive_some() == b"the reply"
        assert waits == []
        # Nothing there even then: the read waits, under its timeouts, as before.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_send_later, peer, b"later")
            assert await connection.receive_some() == b"later"
        assert waits == [1]
    finally:
        peer.close()
        await connection.aclose()


async def _send_later(peer: socket.socket, data: bytes) -> None:
    await trio.sleep(0.05)
    peer.sendall(data)

"""A new scheme in one module and one registry entry: `x-echo://HOST:PORT/NAME`.

The protocol is made up for the example: the client sends `GET NAME` on one
line, the server answers with the document and closes.  The handler stands
on the handler contract alone (`fetcher.handler`, `fetcher.url`,
`fetcher.errors`): it dials through `session.connect`, so the port guard,
the timeouts and `fetch -v`'s trace apply to it as to every built-in
scheme, and `send_line` refuses CR, LF and NUL in what it sends.

A separate distribution registers it with one entry point in its
pyproject.toml:

    [project.entry-points."fetcher.schemes"]
    x-echo = "my_package.echo:Handler"

Within one program, `fetcher.registry.register` does the same, as below.
Run it as it is: it starts an echo server on 127.0.0.1 and fetches from it.

    python examples/new_scheme.py
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator

import trio

import fetcher
from fetcher.errors import NotFound
from fetcher.handler import BaseHandler, Connection, Resource, Session
from fetcher.registry import register
from fetcher.url import URL, GenericURL


class Handler(BaseHandler):
    scheme = "x-echo"
    default_port = 7777

    async def open(self, url: URL, session: Session) -> Resource:
        assert isinstance(url, GenericURL)  # a scheme fetcher's parser does not know parses as GenericURL
        if not url.host:
            raise NotFound("x-echo URLs need a host", url=str(url))
        connection = await session.connect(url.host, url.port or self.default_port)
        await connection.send_line(f"GET {(url.path or '/')[1:]}")
        return Resource(url, "document", content_type="text/plain", body=_body(connection), closer=connection.aclose)


async def _body(connection: Connection) -> AsyncIterator[bytes]:
    async for chunk in connection.iter_to_close():
        yield chunk


async def _serve_one(stream: trio.SocketStream) -> None:
    """The example's server: one line in, `echo: NAME` out, then close."""
    request = b""
    while not request.endswith(b"\r\n"):
        data = await stream.receive_some(1024)
        if not data:
            return
        request += data
    name = request.decode().strip().removeprefix("GET ")
    await stream.send_all(f"echo: {name}\n".encode())
    await stream.aclose()


async def main() -> None:
    register("x-echo", f"{__name__}:Handler")  # one registry entry
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, _serve_one, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        # The guard checks this port as every scheme's: a refused one (25, 6379...) would need allow_ports.
        fetched = await fetcher.fetch(f"x-echo://127.0.0.1:{port}/hello")
        print(fetched.content.decode(), end="")
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)

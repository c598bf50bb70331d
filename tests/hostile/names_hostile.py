"""An HTTP server that names its documents after the client's own files (issue 29, item 16).

A server chooses a name with `Content-Disposition` (`fetch -J`), and a URL
chooses one by its last segment (`-O`, `-d`): either can be the name of a
file the run itself reads or writes (its manifest, input list, option file,
WARC files, ETag store).  The class this server stands for: every such name
in turn, so a test can check that the run's own files come out intact.

  /doc/NAME    200, the body NAME three times, no name suggested (the URL names it NAME)
  /named/I     200, the body `named I`, `Content-Disposition: attachment; filename="<names[I]>"`
  /stall       nothing until `release` is set (`asked` is set when the request arrived)
  /stall-body  a head announcing 100 bytes and 10 of them, then the same wait
  anything else 404

A plain threaded server (the standard library's), so the `fetch` command
run as a subprocess can reach it from synchronous tests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class NamingServer:
    """`with naming_server(names) as site:` then `site.url("/named/0")`; `site.requests` lists the paths asked."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.requests: list[str] = []
        self.asked = threading.Event()
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                if self.path.startswith("/stall"):
                    self.stall()
                    return
                status, body, headers = outer.answer(self.path)
                self.send_response(status)
                for name, value in [("Content-Type", "text/plain"), ("Content-Length", str(len(body))), *headers]:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def stall(self) -> None:
                if self.path == "/stall-body":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"0123456789")
                    self.wfile.flush()
                outer.asked.set()
                outer.release.wait(60)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, path: str) -> tuple[int, bytes, list[tuple[str, str]]]:
        kind, _, rest = path.lstrip("/").partition("/")
        if kind == "doc" and rest:
            return 200, rest.encode() * 3, []
        if kind == "named" and rest.isdigit() and int(rest) < len(self.names):
            name = self.names[int(rest)]
            return 200, b"named %s\n" % rest.encode(), [("Content-Disposition", f'attachment; filename="{name}"')]
        return 404, b"no such document\n", []

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def naming_server(names: list[str] | None = None) -> Iterator[NamingServer]:
    server = NamingServer(names or [])
    try:
        yield server
    finally:
        server.close()

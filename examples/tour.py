"""A tour of fetcher: serve a small tree from local servers and fetch it with `fetch`.

    python3 examples/tour.py

Starts an FTP server (pyftpdlib), an HTTP server (the standard library's) and
a Gopher server (a few lines below) on 127.0.0.1, on free ports, then runs
the `fetch` command against them and shows what a user sees.  Nothing leaves
this machine.
"""

from __future__ import annotations

import http.server
import logging
import shlex
import socketserver
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

TREE = {
    "README.txt": b"Welcome to the fetcher tour.\nEvery file here is served over FTP, HTTP and Gopher.\n",
    "pub/hello.txt": b"Hello, world!\n",
    "pub/notes/rfc1738.txt": b"Uniform Resource Locators (URL), December 1994.\n",
    "pub/data.bin": bytes(range(256)) * 64,
}


def make_tree(root: Path) -> None:
    for name, data in TREE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@contextmanager
def ftp_server(root: Path) -> Iterator[int]:
    try:
        from pyftpdlib.authorizers import DummyAuthorizer
        from pyftpdlib.handlers import FTPHandler
        from pyftpdlib.servers import FTPServer
    except ImportError:
        sys.exit("the tour needs pyftpdlib: python3 -m venv .venv && .venv/bin/pip install -e '.[test]'")
    quiet = logging.getLogger("pyftpdlib")  # it logs every session at INFO otherwise
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    authorizer = DummyAuthorizer()
    authorizer.add_anonymous(str(root))
    handler = type("TourFTPHandler", (FTPHandler,), {"authorizer": authorizer, "banner": "tour ftp ready"})
    server = FTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"timeout": 0.2}, daemon=True)
    thread.start()
    try:
        yield server.socket.getsockname()[1]
    finally:
        server.close_all()


@contextmanager
def http_server(root: Path) -> Iterator[int]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


@contextmanager
def gopher_server(root: Path) -> Iterator[int]:
    """Just enough RFC 1436 for the tour: directories as menus, files as bytes."""

    class Gopher(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            selector = self.rfile.readline(1024).decode("utf-8", "replace").rstrip("\r\n").split("\t")[0]
            path = (root / selector.lstrip("/")).resolve()
            if not path.is_relative_to(root.resolve()) or not path.exists():
                self.wfile.write(b"3Not found\t\terror.host\t1\r\n.\r\n")
            elif path.is_dir():
                for child in sorted(path.iterdir()):
                    kind = "1" if child.is_dir() else "0" if child.suffix == ".txt" else "9"
                    relative = "/" + child.relative_to(root).as_posix()
                    self.wfile.write(f"{kind}{child.name}\t{relative}\t127.0.0.1\t{port}\r\n".encode())
                self.wfile.write(b".\r\n")
            else:
                self.wfile.write(path.read_bytes())

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Gopher)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield port
    finally:
        server.shutdown()


def run(*args: str, cwd: Path) -> None:
    print(f"\n$ fetch {' '.join(shlex.quote(arg) for arg in args)}")
    result = subprocess.run([sys.executable, "-m", "fetcher", *args], capture_output=True, cwd=cwd)
    output = result.stdout.decode("utf-8", "replace") + result.stderr.decode("utf-8", "replace")
    lines = output.splitlines()
    for line in lines[:14]:
        print("  " + line)
    if len(lines) > 14:
        print(f"  ... ({len(lines) - 14} more lines)")
    print(f"  [exit {result.returncode}]")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="fetcher-tour-") as temp:
        root = Path(temp) / "tree"
        work = Path(temp) / "work"
        work.mkdir()
        make_tree(root)
        with ftp_server(root) as ftp, http_server(root) as web, gopher_server(root) as gopher:
            ftp_base, web_base, gopher_base = (
                f"ftp://127.0.0.1:{ftp}",
                f"http://127.0.0.1:{web}",
                f"gopher://127.0.0.1:{gopher}",
            )
            print(f"Serving {root} on FTP {ftp}, HTTP {web}, Gopher {gopher} (127.0.0.1 only).")
            run(f"{ftp_base}/pub/hello.txt", cwd=work)
            run(f"{ftp_base}/pub/;type=d", cwd=work)
            run("-v", f"{ftp_base}/%2Fpub/notes/rfc1738.txt;type=a", cwd=work)
            run(f"{web_base}/README.txt", cwd=work)
            run(f"{gopher_base}/1/pub", cwd=work)
            run("-O", f"{gopher_base}/9/pub/data.bin", cwd=work)
            urls = work / "urls.txt"
            links = subprocess.run(
                [sys.executable, "-m", "fetcher", "--links", f"{ftp_base}/pub/;type=d"], capture_output=True
            ).stdout
            urls.write_bytes(links + f"{web_base}/pub/hello.txt\n{web_base}/missing.txt\n".encode())
            print("\n(urls.txt holds the FTP listing's links plus two HTTP URLs, one missing)")
            run("-i", "urls.txt", "-d", "mirror", "--manifest", "manifest.jsonl", cwd=work)
            run("-r", "--layout", "tree", "-d", "tree", f"{ftp_base}/pub/", cwd=work)
            run(f"file://{root}/", cwd=work)
            run("telnet://guest:guest@127.0.0.1:2323/", cwd=work)
            run("gopher://127.0.0.1:6379/_flushall", cwd=work)
            run(f"ftp://127.0.0.1:{ftp}/pub/a%0d%0aDELE%20hello.txt", cwd=work)
            saved = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())
            print("\nFiles the tour wrote:", ", ".join(saved))


if __name__ == "__main__":
    main()

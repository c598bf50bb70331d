"""A tour of fetcher: every scheme of RFC 1738, served on 127.0.0.1 and fetched with `fetch`.

    python3 examples/tour.py        (from a checkout, with the test extra: pip install -e '.[test]')

It starts one server per scheme on free loopback ports: FTP (pyftpdlib), HTTP
(the standard library's), and the repository's own trio servers for Gopher
and Gopher+, NNTP, WAIS, Prospero and telnet (tests/servers/); file: and
mailto: need none.  For each scheme it shows a listing with its facts and a
retrieval, then a bulk run, a mirror and two requests the guard refuses.
Nothing leaves this machine.

The commands run a few at a time and are printed in order, so the whole tour
takes a few seconds.
"""

from __future__ import annotations

import http.server
import logging
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the repository's test servers (tests/servers)

try:
    import trio

    from tests.servers.common import serving
    from tests.servers.gopher import GopherServer, Route, menu_line
    from tests.servers.nntp import Article, Group, NntpServer
    from tests.servers.prospero import Directory, Link, Node, Object, serve_prospero
    from tests.servers.telnet import open_fake_telnetd
    from tests.servers.wais import Database, Document, WaisServer
except ImportError as error:
    sys.exit(f"the tour needs a checkout of the repository and the test extra (pip install -e '.[test]'): {error}")

TREE = {
    "README.txt": b"Welcome to the fetcher tour.\nEvery file here is served over FTP, HTTP, Gopher and file:.\n",
    "pub/hello.txt": b"Hello, world!\n",
    "pub/notes/rfc1738.txt": b"Uniform Resource Locators (URL), December 1994.\n",
    "pub/data.bin": bytes(range(256)) * 64,
}
#: One date for every file, so the listings read the same on every run.
MTIME = time.mktime((1994, 12, 20, 12, 0, 0, 0, 0, -1))
#: How many `fetch` commands run at once (their output is printed in order).
AT_ONCE = 4


def make_tree(root: Path) -> None:
    for name, data in TREE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for path in [*root.rglob("*"), root]:
        os.utime(path, (MTIME, MTIME))


# -- servers ------------------------------------------------------------------------------------------------


@contextmanager
def ftp_server(root: Path) -> Iterator[int]:
    """pyftpdlib (a real FTP server with MLSD), anonymous and read-only, in a thread."""
    try:
        from pyftpdlib.authorizers import DummyAuthorizer
        from pyftpdlib.handlers import FTPHandler
        from pyftpdlib.servers import FTPServer
    except ImportError:
        sys.exit("the tour needs pyftpdlib: pip install -e '.[test]'")
    quiet = logging.getLogger("pyftpdlib")  # it logs every session at INFO otherwise
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    authorizer = DummyAuthorizer()
    authorizer.add_anonymous(str(root))
    handler = type("TourFTPHandler", (FTPHandler,), {"authorizer": authorizer, "banner": "tour ftp ready"})
    server = FTPServer(("127.0.0.1", 0), handler)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():  # one poll at a time, so the loop ends before the server closes
            server.serve_forever(timeout=0.1, blocking=False, handle_exit=False)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.socket.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        server.close_all()


@contextmanager
def http_server(root: Path) -> Iterator[int]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


def gopher_routes(port: int) -> dict[bytes, Route]:
    """A menu of plain Gopher items and a Gopher+ directory whose attributes carry sizes and dates."""
    item = partial(menu_line, host="127.0.0.1", port=port)
    plus = partial(menu_line, host="127.0.0.1", port=port, plus=b"+")

    def info(gtype: str, name: bytes, selector: bytes, size: bytes, date: bytes, abstract: bytes) -> bytes:
        return (b"+INFO: " + gtype.encode() + name + b"\t" + selector + b"\t127.0.0.1\t%d\t+\r\n" % port
                + b"+ADMIN:\r\n Admin: Tour Admin <admin@example.invalid>\r\n Mod-Date: <" + date + b">\r\n"
                + b"+VIEWS:\r\n text/plain: <" + size + b">\r\n+ABSTRACT:\r\n " + abstract + b"\r\n")  # fmt: skip

    return {
        b"": b"iThe fetcher tour's Gopher hole\t\tnull.host\t1\r\n"
        + item("0", b"About this server", b"/about.txt")
        + item("1", b"Gopher+ shelf", b"/plus", plus=b"+")
        + item("9", b"Some bytes", b"/data.bin")
        + b".\r\n",
        b"/about.txt": b"This menu and this text come from tests/servers/gopher.py.\r\n.\r\n",
        b"/data.bin": bytes(range(256)) * 4,
        b"/plus\t$": b"+-2\r\n"
        + info("0", b"Poem", b"/plus/poem.txt", b"1k", b"19941220120000", b"Four lines about URLs.")
        + info("0", b"Recipe", b"/plus/recipe.txt", b"2k", b"19930401093000", b"Gopher soup, step by step."),
        b"/plus": plus("0", b"Poem", b"/plus/poem.txt") + plus("0", b"Recipe", b"/plus/recipe.txt") + b".\r\n",
        b"/plus/poem.txt\t+": b"+-1\r\nA URL names a thing,\r\nand fetch goes and gets it.\r\n.\r\n",
    }


def post(group: str, number: int, sender: str, date: str, subject: str, body: str) -> Article:
    head = f"From: {sender}\nNewsgroups: {group}\nSubject: {subject}\nDate: {date}\nMessage-ID: <{number}@{group}>\n"
    return Article(number, f"{number}@{group}", f"{head}\n{body}\n".encode())


def news() -> list[Group]:
    return [
        Group("tour.announce", [
            post("tour.announce", 1, "Tim <timbl@tour.test>", "Tue, 20 Dec 1994 12:00:00 +0000",
                 "RFC 1738 published", "Uniform Resource Locators are out."),
            post("tour.announce", 2, "Tour <tour@tour.test>", "Wed, 21 Dec 1994 09:30:00 +0000",
                 "fetcher speaks every scheme", "ftp, http, gopher, news, nntp, wais, prospero, telnet, file..."),
        ]),
        Group("tour.chatter", [post("tour.chatter", 1, "Ann <ann@tour.test>", "Thu, 22 Dec 1994 08:00:00 +0000",
                                    "hello", "hi")]),
    ]  # fmt: skip


def wais_databases() -> list[Database]:
    return [
        Database("fruit", [
            Document("apples.txt", b"Apples are red or green.\nAn apple a day keeps the doctor away.\n",
                     date="19930401"),
            Document("orchard.txt", b"The orchard grows apples, pears and plums.\n", date="19940512"),
            Document("bananas.txt", b"Bananas are yellow.\n", date="19921103"),
        ], description=b'(:source :database-name "fruit" :description "Fruit for the tour")\n'),
    ]  # fmt: skip


def prospero_tree(ftp_port: int) -> dict[str, Node]:
    aftp = ["AFTP", "INTERNET-D", f"127.0.0.1({ftp_port})", "ASCII", "/pub/hello.txt", "TEXT"]
    return {
        "/pub": Directory([
            Link("hello.txt", "FILE", "LOCALHOST(0)", "/pub/hello.txt"),
            Link("notes", "DIRECTORY", "LOCALHOST(0)", "/pub/notes"),
            Link("bbs", "EXTERNAL", "bbs.example.org", "", [["TELNET", "", "", "", "", "login as guest"]]),
        ]),
        "/pub/notes": Directory([]),
        "/pub/hello.txt": Object([aftp]),
    }  # fmt: skip


# -- running fetch ------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One `fetch` command of the tour (with what it reads on stdin), and what it printed."""

    args: list[str]
    stdin: bytes = b""
    note: str = ""
    #: The command as printed, when it is not simply `fetch ARGS` (a pipeline).
    display: str = ""
    shown: int = 14
    output: str = ""
    code: int | None = None
    done: trio.Event = field(default_factory=trio.Event)


@dataclass
class Section:
    title: str
    steps: list[Step]


def show(step: Step) -> str:
    command = step.display or "fetch " + " ".join(shlex.quote(arg) for arg in step.args)
    lines = [f"\n$ {command}" + (f"    # {step.note}" if step.note else "")]
    output = step.output.splitlines()
    lines += ["  " + line for line in output[: step.shown]]
    if len(output) > step.shown:
        lines.append(f"  ... ({len(output) - step.shown} more lines)")
    lines.append(f"  [exit {step.code}]")
    return "\n".join(lines)


async def run(step: Step, work: Path, limiter: trio.CapacityLimiter) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env["NETRC"] = str(work / "no-netrc")  # the tour's logins are its own, not the user's ~/.netrc
    async with limiter:
        # stderr into the same pipe, so messages and output keep their order, as on a terminal
        result = await trio.run_process([sys.executable, "-m", "fetcher", *step.args], stdin=step.stdin,
                                        capture_stdout=True, stderr=subprocess.STDOUT, check=False, cwd=work,
                                        env=env)  # fmt: skip
    step.output = result.stdout.decode("utf-8", "replace")
    step.code = result.returncode
    step.done.set()


def first_link(step: Step) -> str:
    return next((line for line in step.output.splitlines() if "://" in line), "")


async def tour(root: Path, work: Path, ftp: int, web: int) -> None:
    async with AsyncExitStack() as stack:
        gopher = await stack.enter_async_context(serving(GopherServer()))
        gopher.extra_routes = gopher_routes(gopher.port)
        nntp = await stack.enter_async_context(serving(NntpServer(news())))
        wais = await stack.enter_async_context(serving(WaisServer(wais_databases())))
        prospero = await stack.enter_async_context(serve_prospero(prospero_tree(ftp)))
        for link in prospero.tree["/pub"].links:  # type: ignore[union-attr]
            link.host = link.host.replace("LOCALHOST(0)", prospero.host_field)
        telnetd = await stack.enter_async_context(open_fake_telnetd(banner=b"\r\nWelcome to the tour BBS.\r\nlogin: "))

        ftp_url, web_url = f"ftp://127.0.0.1:{ftp}", f"http://127.0.0.1:{web}"
        gopher_url = f"gopher://127.0.0.1:{gopher.port}"
        nntp_url, wais_url = f"nntp://127.0.0.1:{nntp.port}", f"wais://127.0.0.1:{wais.port}"
        prospero_url, telnet_url = f"prospero://127.0.0.1:{prospero.port}", f"telnet://guest@127.0.0.1:{telnetd.port}/"
        wais_search = Step(["--links", f"{wais_url}/fruit?apples"], note="the first hit, retrieved")
        sections = [
            Section(f"FTP: pyftpdlib on port {ftp}", [
                Step([f"{ftp_url}/pub/", f"{ftp_url}/pub/hello.txt"],
                     note="a listing (type, size, date, name), then a file: one login"),
            ]),
            Section(f"HTTP: the standard library's server on port {web}", [
                Step(["-v", "-o", "hello.txt", f"{web_url}/pub/hello.txt"],
                     note="HTTP has no listings; the reply's headers carry the facts", shown=16),
                Step(["-w", r"%{size} bytes in %{time_total} s, exit %{exit_code}\n", f"{web_url}/README.txt"],
                     note="a document, then -w's facts about it"),
            ]),
            Section(f"Gopher and Gopher+: tests/servers/gopher.py on port {gopher.port}", [
                Step([f"{gopher_url}/", f"{gopher_url}/1/plus%09%09$"],
                     note="a menu (item types), then a Gopher+ one (size, date, abstract)"),
                Step([f"{gopher_url}/0/about.txt", f"{gopher_url}/0/plus/poem.txt%09%09+"],
                     note="a text, then a Gopher+ text"),
            ]),
            Section(f"NNTP: tests/servers/nntp.py on port {nntp.port}", [
                Step([f"{nntp_url}/tour.announce", f"{nntp_url}/tour.announce/2"],
                     note="a group (size, number, subject, sender, date), then an article"),
                Step(["--nntp-server", f"127.0.0.1:{nntp.port}", "news:*"], note="every group"),
            ]),
            Section(f"WAIS: tests/servers/wais.py on port {wais.port}", [
                Step([f"{wais_url}/fruit?apples"], note="a search: type, size, name, score, lines"),
                wais_search,
            ]),
            Section(f"Prospero: tests/servers/prospero.py on UDP port {prospero.port}", [
                Step([f"{prospero_url}//pub", f"{prospero_url}//pub/hello.txt"],
                     note="a directory, then a file: resolved, fetched over FTP"),
                Step(["--resolve-only", f"{prospero_url}//pub/hello.txt"], note="the file's access method, as a URL"),
            ]),
            Section(f"Telnet: tests/servers/telnet.py on port {telnetd.port}", [
                Step([telnet_url], note="by default: how to log in, no connection"),
                Step(["--interactive", "--timeout", "2", telnet_url], stdin=b"guest\n",
                     note="a real session, typing 'guest'"),
            ]),
            Section("file: this machine", [
                Step([f"file://{root}/pub/", f"file://{root}/README.txt"], note="a listing, then a file"),
            ]),
            Section("mailto: nothing to retrieve", [Step(["mailto:tour@example.org"])]),
            Section("Many URLs at once, a mirror, and the guard", [
                Step(["-i", "-", "-d", "bulk", "--manifest", "manifest.jsonl"],
                     stdin=f"{ftp_url}/pub/hello.txt\n{web_url}/pub/data.bin\n{gopher_url}/0/about.txt\n"
                     f"{web_url}/missing.txt\n".encode(), note="four URLs on stdin, one missing"),
                Step(["-r", "--layout", "tree", "-d", "mirror", f"{ftp_url}/pub/"], note="mirror an FTP tree"),
                Step(["gopher://127.0.0.1:6379/_flushall"], note="a request-forgery port"),
                Step([f"{ftp_url}/pub/a%0d%0aDELE%20hello.txt"], note="an encoded command injection"),
            ]),
        ]  # fmt: skip
        limiter = trio.CapacityLimiter(AT_ONCE)
        async with trio.open_nursery() as nursery:
            for section in sections:
                for step in section.steps:
                    if step is not wais_search:
                        nursery.start_soon(run, step, work, limiter)
            nursery.start_soon(retrieve_first_hit, wais_search, work, limiter)
            for section in sections:
                print(f"\n== {section.title}")
                for step in section.steps:
                    await step.done.wait()
                    print(show(step), flush=True)


async def retrieve_first_hit(search: Step, work: Path, limiter: trio.CapacityLimiter) -> None:
    """The search's hits as URLs (--links), then the first one retrieved: two steps, one after the other."""
    hidden = Step(search.args)
    await run(hidden, work, limiter)
    hit = first_link(hidden)
    search.args = [hit]
    search.display = f"fetch \"$(fetch --links {shlex.quote(hidden.args[-1])} | head -1)\""
    await run(search, work, limiter)


def main() -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fetcher-tour-") as temp:
        root, work = Path(temp) / "tree", Path(temp) / "work"
        work.mkdir()
        make_tree(root)
        with ftp_server(root) as ftp, http_server(root) as web:
            trio.run(tour, root, work, ftp, web)
        saved = sorted(str(path.relative_to(work)) for path in work.rglob("*") if path.is_file())
        print("\nFiles the tour wrote:", ", ".join(saved))
    print(f"The tour took {time.monotonic() - started:.1f} s.")


if __name__ == "__main__":
    main()

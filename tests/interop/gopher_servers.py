"""Real Gopher servers for the interop tests: gophernicus (under socat) and pygopherd.

Both serve a copy of the shared content tree with a generated `gophermap`
(the root menu).  The copy is made of hard links, so the 64 MiB file costs
nothing; only the gophermap is new.  Each server listens on 127.0.0.1 and a
free port, logs under a private state directory, and is stopped with every
process it forked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import require, require_program
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.processes import Server, free_port

GOPHERMAP = """Welcome to the test gopher root.
This line and the one above are info (i) lines.
0Hello text file\t/hello.txt
0Lines starting with a dot\t/dotlines.txt
0Empty file\t/empty.txt
0Unreadable file\t/unreadable.txt
1Directory a\t/a
1Gopher+ items\t/gplus
7Search (type 7)\t/cgi-bin/search
9Big binary\t/big-64M.bin
gTiny GIF\t/images/tiny.gif
ITiny PNG\t/images/tiny.png
hWeb link (URL: selector)\tURL:http://example.invalid/
1Link to another host (never resolves)\t/\tother.invalid\t70
"""

_AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class GopherService:
    name: str
    root: Path
    port: int

    @property
    def base(self) -> str:
        return f"gopher://127.0.0.1:{self.port}"


@pytest.fixture(scope="session")
def gopher_root(content_tree: Path) -> Iterator[Path]:
    """A hard-linked copy of the content tree plus the root gophermap both servers read."""
    base = public_tempdir("fetcher-gopher-")
    root = base / "content"
    try:
        shutil.copytree(content_tree, root, copy_function=os.link)
    except OSError:  # another file system: copy for real
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(content_tree, root)
    gophermap = root / "gophermap"
    gophermap.write_text(GOPHERMAP, encoding="utf-8")
    gophermap.chmod(0o644)
    yield root
    remove_tree(base)


def _state_dir(name: str) -> Path:
    state = public_tempdir(f"fetcher-{name}-")
    return state


@pytest.fixture(scope="module")
def gophernicus(gopher_root: Path) -> Iterator[GopherService]:
    """gophernicus, inetd-style: socat accepts and execs one gophernicus per connection."""
    binary = require_program("gophernicus", "gophernicus")
    socat = require_program("socat", "socat")
    port = free_port()
    state = _state_dir("gophernicus")
    access_log = state / "access.log"
    access_log.touch()
    command = f"{binary} -h 127.0.0.1 -p {port} -r {gopher_root} -nv -nu -nm -ns -l {access_log}"
    argv = [socat, f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,backlog=128", f"EXEC:{command},nofork"]
    if _AS_ROOT:
        # gophernicus refuses to run as root; socat's children inherit nobody.
        shutil.chown(access_log, user="nobody")
        argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *argv]
    server = Server(argv, port, log=state / "listener.log")
    try:
        yield GopherService("gophernicus", gopher_root, port)
    finally:
        server.stop()
        remove_tree(state)


PYGOPHERD_CONF = """[pygopherd]
detach = no
pidfile = {state}/pygopherd.pid
interface = 127.0.0.1
port = {port}
servername = 127.0.0.1
servertype = ForkingTCPServer
timeout = 60
abstract_headers = off
abstract_entries = unsupported
tracebacks = yes
usechroot = no
{setuid}enable_tls = no
root = {root}
mimetypes = /etc/pygopherd/mime.types:/etc/mime.types
encoding = list(mimetypes.encodings_map.items()) + list({{'.bz2' : 'bzip2'}}.items())

[logger]
logmethod = file
priority = LOG_INFO
facility = LOG_LOCAL3

[GopherEntry]
defaultmimetype = text/plain
mapping = [['text/html', 'h'], ['text/.+', '0'], ['application/mac-binhex40', '4'], ['audio/.+', 's'],
        ['image/gif', 'g'], ['image/.+', 'I'], ['application/gopher-menu', '1'],
        ['application/gopher\\\\+-menu', '1'], ['multipart/mixed', 'M'], ['application/.+', '9'], ['.*', '0']]
eaexts = {{'.abstract' : 'ABSTRACT', '.keywords' : 'KEYWORDS', '.ask' : 'ASK', '.3d' : '3D'}}

[handlers.HandlerMultiplexer]
handlers = [url.HTMLURLHandler, gophermap.BuckGophermapHandler, UMN.UMNDirHandler, html.HTMLFileTitleHandler,
            scriptexec.ExecHandler, file.FileHandler]

[handlers.file.CompressedFileHandler]
decompressors = {{}}
decompresspatt = .*

[handlers.dir.DirHandler]
ignorepatt = /\\.cache|/gophermap$|\\.abstract$|\\.ask|~$
cachetime = 0
cachefile = .cache.pygopherd.dir

[handlers.UMN.UMNDirHandler]
extstrip = none

[handlers.ZIP.ZIPHandler]
enabled = false
pattern = \\.zip$

[protocols.ProtocolMultiplexer]
protocols = [gopherp.GopherPlusProtocol, rfc1436.GopherProtocol]

[protocols.gopherp.GopherPlusProtocol]
admin = Test Admin <admin@example.invalid>
"""


@pytest.fixture(scope="module")
def pygopherd(gopher_root: Path) -> Iterator[GopherService]:
    """pygopherd (Gopher0 and partial Gopher+) from a private configuration file."""
    program = Path("/usr/sbin/pygopherd")
    require(program.exists(), "pygopherd", "apt-get install pygopherd")
    python = shutil.which("python3") or "/usr/bin/python3"
    port = free_port()
    state = _state_dir("pygopherd")
    # As root it binds, then drops to nobody (and cannot scribble cache files into the tree).
    setuid = "setuid = nobody\nsetgid = nogroup\n" if _AS_ROOT else ""
    conf = state / "pygopherd.conf"
    conf.write_text(PYGOPHERD_CONF.format(state=state, port=port, root=gopher_root, setuid=setuid), encoding="utf-8")
    # Debian's interpreter, not a virtualenv's: pygopherd's modules live in the system site-packages.
    server = Server(["/usr/bin/python3" if Path("/usr/bin/python3").exists() else python, str(program), str(conf)],
                    port, log=state / "pygopherd.log")  # fmt: skip
    try:
        yield GopherService("pygopherd", gopher_root, port)
    finally:
        server.stop()
        remove_tree(state)

"""The content tree every real server in the interop tests serves.

Built in Python (not a shell script) so a fresh clone needs nothing else.
The tree lives under /tmp with world-readable permissions because the real
servers read it as unprivileged users (ftp, nobody, news), and pytest's own
temporary directories are private (0700).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

BIG_MIB = int(os.environ.get("FETCHER_TEST_BIG_MIB", "64"))

GIF = base64.b64decode("R0lGODlhAQABAIAAAP8AAAAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC")

FILES: dict[str, bytes] = {
    "README.txt": b"Test content tree for the fetcher test suite.\n",
    "hello.txt": b"Hello, world!\n",
    "hello.txt.abstract": b"A friendly greeting.\nThis is the Gopher+ abstract of hello.txt.\n",
    "one-byte.txt": b"x",
    "empty.txt": b"",
    "mixed-eol.txt": b"line 1 ends CRLF\r\nline 2 ends LF\nline 3 ends CRLF\r\nline 4 ends LF\n"
    b"line 5 has a lone CR\rin the middle\nlast line ends CRLF\r\n",
    "dotlines.txt": b"first line\n.\n.hidden-looking line\n..two dots\nlast line\n",
    "text-256k.txt": b"".join(
        b"line %05d: The quick brown fox jumps over the lazy dog. 0123456789\n" % i for i in range(4096)
    ),
    "file with space.txt": b"file whose name contains spaces\n",
    "semi;colon%41pct.txt": b"file whose name contains a semicolon and a literal %41\n",
    "utf8-\u00f1ame.txt": b"file whose name is UTF-8 (n with tilde)\n",
    "a/a.txt": b"in a\n",
    "a/b/b.txt": b"in a/b\n",
    "a/b/c/deep.txt": b"deep file in a/b/c\n",
    "images/tiny.gif": GIF,
    "images/tiny.png": PNG,
    "index.html": b"<!DOCTYPE html>\n<html><head><title>Test index</title></head>\n<body><h1>Test index</h1>\n"
    b'<ul><li><a href="hello.txt">hello.txt</a></li></ul></body></html>\n',
    "page.html": b"<!DOCTYPE html>\n<html><body><p>Just a page.</p></body></html>\n",
    "gplus/.abstract": b"Directory of Gopher+ test items.\n",
    "gplus/doc.txt": b"A document with an abstract.\n",
    "gplus/doc.txt.abstract": b"Abstract line one.\nAbstract line two.\n",
    "gplus/askme.txt": b"Item that carries an ASK block.\n",
    "gplus/askme.txt.ask": b"Ask: What is your name?\tAnonymous\nChoose: Favourite colour?\tred\tgreen\tblue\n",
}

SEARCH_SCRIPT = b"""#!/bin/sh
q="${SEARCHREQUEST:-${QUERY_STRING:-}}"
printf 'iYou searched for: %s\\tfake\\t(NULL)\\t0\\r\\n' "$q"
printf '0hello.txt\\t/hello.txt\\t%s\\t%s\\r\\n' "${SERVER_NAME:-127.0.0.1}" "${SERVER_PORT:-70}"
printf '.\\r\\n'
"""


def _big_bytes(size: int) -> bytes:
    # Deterministic pseudo-random bytes (incompressible, reproducible).
    seed = hashlib.sha256(b"fetcher big file").digest()
    blocks = []
    counter = 0
    while len(blocks) * 32 < size:
        blocks.append(hashlib.sha256(seed + counter.to_bytes(8, "big")).digest())
        counter += 1
    return b"".join(blocks)[:size]


def make_content(root: Path, *, big_mib: int = BIG_MIB) -> Path:
    """Write the tree into `root` (which must not exist or be empty)."""
    old_umask = os.umask(0o022)
    try:
        root.mkdir(parents=True, exist_ok=True)
        for relative, data in FILES.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        block = _big_bytes(1 << 20)
        with open(root / "big-64M.bin", "wb") as sink:
            for index in range(big_mib):
                # Vary each MiB so no two blocks are equal.
                sink.write(hashlib.sha256(index.to_bytes(4, "big")).digest() + block[32:])
        unreadable = root / "unreadable.txt"
        unreadable.write_bytes(b"you should not be able to read this\n")
        unreadable.chmod(0)
        private = root / "private-dir"
        private.mkdir()
        (private / "hidden.txt").write_bytes(b"hidden\n")
        private.chmod(0o700)
        cgi = root / "cgi-bin"
        cgi.mkdir()
        (cgi / "search").write_bytes(SEARCH_SCRIPT)
        (cgi / "search").chmod(0o755)
        root.chmod(0o755)
    finally:
        os.umask(old_umask)
    return root


def public_tempdir(prefix: str) -> Path:
    """A directory under /tmp that unprivileged server users can traverse."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


def remove_tree(root: Path) -> None:
    """Remove a tree, including the deliberately unreadable parts."""
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            try:
                os.chmod(os.path.join(directory, name), stat.S_IRWXU)
            except OSError:
                pass
    shutil.rmtree(root, ignore_errors=True)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while block := source.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()

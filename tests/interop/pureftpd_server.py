"""Pure-FTPd for the interop tests, unpacked privately beside vsftpd.

Debian's FTP server packages conflict with one another, so Pure-FTPd is not
installed: `.ci/run` fetches the package with `apt-get download` and unpacks
it with `dpkg -x` into a private root (default
`~/.cache/fetcher/pure-ftpd`, or `$FETCHER_PUREFTPD_ROOT`).  The fixture
starts `usr/sbin/pure-ftpd` from there in the foreground on 127.0.0.1, a
free control port and a private passive range, with a private PureDB of
virtual users (made with the package's own `pure-pw`), no anonymous login
(Pure-FTPd's anonymous root is the system account ftp's home, a global
setting), a fortune file that decorates the banner with terminal escapes and
a bell, and its transfer log in CLF.  Nothing is written outside the state
directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.interop.ftp_servers import _passive_range
from tests.interop.processes import Server, free_port

USER = "fetchpure"
PASSWORD = "pure-s3cret"
#: A user whose home holds an empty directory and one file.
EMPTY_USER = "fetchempty"
#: The fortune Pure-FTPd shows in its banner: colours, a window title, a bell.
FORTUNE = b"Welcome to \x1b[1;31mPure\x1b[0m-FTPd \x1b]0;title\x07 with a bell \x07"


def pureftpd_root() -> Path:
    found = os.environ.get("FETCHER_PUREFTPD_ROOT")
    if found:
        return Path(found)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fetcher" / "pure-ftpd"


def pureftpd_binary() -> Path | None:
    """The unpacked daemon, else an installed one, else None."""
    for candidate in (pureftpd_root() / "usr/sbin/pure-ftpd", Path("/usr/sbin/pure-ftpd")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def pureftpd_missing() -> str | None:
    """Why Pure-FTPd cannot run here, or None."""
    if pureftpd_binary() is None:
        return f"pure-ftpd (unpacked under {pureftpd_root()})"
    if os.geteuid() != 0:
        return "pure-ftpd (needs root: it changes to the virtual users' uid)"
    return None


class PureFtpd:
    def __init__(self, state: Path, port: int, server: Server, empty_home: Path) -> None:
        self.state = state
        self.port = port
        self.server = server
        self.empty_home = empty_home

    def url(self, user: str = USER) -> str:
        return f"ftp://{user}:{PASSWORD}@127.0.0.1:{self.port}"

    def transfers(self) -> list[str]:
        """The CLF transfer log: one `"GET <path>" 200 <bytes>` line per completed download."""
        deadline = time.monotonic() + 2
        while True:
            try:
                lines = (self.state / "transfers.log").read_text(errors="replace").splitlines()
            except FileNotFoundError:
                lines = []
            if lines or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.stop()
        shutil.rmtree(self.state, ignore_errors=True)


def _password_hash(pure_pw: Path, state: Path, password: str) -> str:
    """A crypt(3) SHA-512 hash (fast to check) from openssl, else the slow argon2 one pure-pw makes."""
    openssl = shutil.which("openssl")
    if openssl is not None:
        made = subprocess.run([openssl, "passwd", "-6", "-salt", "fetcher", "-stdin"], input=password.encode(),
                              capture_output=True, check=True)  # fmt: skip
        return made.stdout.decode().strip()
    scratch = state / "scratch.passwd"
    subprocess.run(
        [str(pure_pw), "useradd", "scratch", "-f", str(scratch), "-u", "65534", "-d", str(state)],
        input=f"{password}\n{password}\n".encode(),
        check=True,
        capture_output=True,
    )
    hashed = scratch.read_text().split(":")[1]
    scratch.unlink()
    return hashed


def _write_users(pure_pw: Path, state: Path, users: dict[str, Path], password: str) -> None:
    """The passwd file of pure-pw's format, then its PureDB (`pure-pw mkdb`)."""
    hashed = _password_hash(pure_pw, state, password)
    lines = [f"{name}:{hashed}:65534:65534::{home}/./::::::::::::\n" for name, home in users.items()]
    (state / "passwd").write_text("".join(lines))
    subprocess.run(
        [str(pure_pw), "mkdb", str(state / "users.pdb"), "-f", str(state / "passwd")], check=True, capture_output=True
    )


def start_pureftpd(content: Path) -> PureFtpd:
    binary = pureftpd_binary()
    assert binary is not None
    state = Path(tempfile.mkdtemp(prefix="fetcher-pureftpd-"))
    state.chmod(0o755)
    empty_home = state / "home"
    (empty_home / "empty").mkdir(parents=True)
    (empty_home / "file.txt").write_bytes(b"next to an empty directory\n")
    for path in (empty_home, empty_home / "empty"):
        path.chmod(0o755)
    pure_pw = binary.parent.parent / "bin" / "pure-pw"
    if not pure_pw.exists():
        pure_pw = Path("/usr/bin/pure-pw")
    _write_users(pure_pw, state, {USER: content, EMPTY_USER: empty_home}, PASSWORD)
    (state / "fortunes").write_bytes(FORTUNE + b"\n%\n")
    port = free_port()
    low, high = _passive_range()
    argv = [
        str(binary),
        "--bind", f"127.0.0.1,{port}",
        "--passiveportrange", f"{low}:{high}",
        "--login", f"puredb:{state / 'users.pdb'}",
        "--noanonymous",
        "--dontresolve",
        "--chrooteveryone",
        "--syslogfacility", "none",
        "--fortunesfile", str(state / "fortunes"),
        "--altlog", f"clf:{state / 'transfers.log'}",
        "--maxclientsperip", "50",
    ]  # fmt: skip
    server = Server(argv, port, log=state / "stdout.log")
    return PureFtpd(state, port, server, empty_home)

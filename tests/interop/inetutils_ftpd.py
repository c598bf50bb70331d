"""GNU inetutils ftpd for the interop tests, unpacked privately and started the way inetd starts it.

Debian's inetutils-ftpd conflicts with vsftpd (both provide ftp-server), so,
like Pure-FTPd, `.ci/run` fetches the package with `apt-get download` and
unpacks it with `dpkg -x` into a private root (default
`~/.cache/fetcher/inetutils-ftpd`, or `$FETCHER_INETUTILS_FTPD_ROOT`).  In
daemon mode it listens only on port 21, so the fixture plays inetd: a
thread accepts on 127.0.0.1 and a free port and runs one `ftpd` per
connection with the socket as its stdin and stdout.  ftpd logs in real
accounts (its anonymous root is the system ftp account's home, a global
setting), so the fixture makes the account fetchinet once (useradd, as
the vsftpd fixture does for fetchuser); the tests name the tree served by
its absolute path.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

USER = "fetchinet"
PASSWORD = "inet-s3cret"


def inetutils_root() -> Path:
    found = os.environ.get("FETCHER_INETUTILS_FTPD_ROOT")
    if found:
        return Path(found)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fetcher" / "inetutils-ftpd"


def inetutils_binary() -> Path | None:
    for candidate in (inetutils_root() / "usr/sbin/ftpd", Path("/usr/sbin/inetutils-ftpd")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def inetutils_missing() -> str | None:
    """Why inetutils ftpd cannot run here, or None."""
    if inetutils_binary() is None:
        return f"inetutils ftpd (unpacked under {inetutils_root()})"
    if os.geteuid() != 0:
        return "inetutils ftpd (needs root: it logs in a real account)"
    return None


def _ensure_user() -> None:
    """The account, made once and never changed after: other test runs may be logged in with it.

    (usermod refuses to touch an account in use, and a home directory is not
    needed: ftpd logs in at "/" when it is missing, and the tests name
    their tree by absolute paths.)
    """
    if subprocess.run(["getent", "passwd", USER], capture_output=True).returncode == 0:
        return
    subprocess.run(["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh", USER],
                   capture_output=True)  # fmt: skip
    subprocess.run(["chpasswd"], input=f"{USER}:{PASSWORD}\n".encode(), check=True, capture_output=True)


class InetutilsFtpd:
    """ftpd per connection on 127.0.0.1:`port`, for the account fetchinet."""

    def __init__(self) -> None:
        binary = inetutils_binary()
        assert binary is not None
        self.binary = binary
        _ensure_user()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port: int = self.listener.getsockname()[1]
        self.children: list[subprocess.Popen[bytes]] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url(self, directory: Path) -> str:
        """The URL of a directory by its absolute path (%2F: the first CWD is "/tmp", whatever the login directory)."""
        return f"ftp://{USER}:{PASSWORD}@127.0.0.1:{self.port}/%2F{directory.as_posix().strip('/')}/"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # the listener was closed: stop
                return
            with conn:
                # As inetd does: the connection is the daemon's stdin and stdout.
                child = subprocess.Popen([str(self.binary), "--auth=default"], stdin=conn.fileno(),
                                         stdout=conn.fileno(), stderr=subprocess.DEVNULL)  # fmt: skip
            self.children.append(child)

    def stop(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the serving thread (Linux)
        except OSError:
            pass
        self.listener.close()
        self._thread.join(timeout=5)
        for child in self.children:
            if child.poll() is None:
                child.terminate()
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

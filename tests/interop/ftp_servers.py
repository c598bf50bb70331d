"""Real FTP servers for the interop tests: pyftpdlib in-process, vsftpd as a process.

pyftpdlib runs in a thread of the test process with a handler subclass that
records every command line per connection, so tests assert the exact command
sequences RFC 1738 §3.2.2 implies.  vsftpd runs as root from a root-owned
private config on 127.0.0.1, a free control port and a private passive port
range, serving the shared content tree to anonymous users and a home with
private files to the local user fetchuser/s3cret (created with useradd if
missing, the machine's only global change, as in the recipe it adapts).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.interop.processes import Server, free_port
from tests.servers.common import pyftpdlib_server

USER = "fetchuser"
PASSWORD = "s3cret"
VSFTPD = "/usr/sbin/vsftpd"


# -- pyftpdlib ------------------------------------------------------------------


class PyFtpd:
    """A pyftpdlib FTPServer on 127.0.0.1:0 in a daemon thread, recording commands."""

    def __init__(
        self,
        root: Path,
        *,
        users: dict[str, tuple[str, Path]] | None = None,
        anonymous: bool = True,
        tls: tuple[str, str] | None = None,
        masquerade: str | None = None,
        banner: str = "pyftpdlib test server ready",
    ) -> None:
        from pyftpdlib.authorizers import DummyAuthorizer
        from pyftpdlib.handlers import FTPHandler

        #: One list of command lines per control connection, in connection order.
        self.sessions: list[list[str]] = []
        sessions = self.sessions
        lock = threading.Lock()
        authorizer = DummyAuthorizer()
        if anonymous:
            authorizer.add_anonymous(str(root), perm="elr")
        for name, (password, home) in (users or {}).items():
            authorizer.add_user(name, password, str(home), perm="elr")
        base: Any = FTPHandler
        if tls is not None:
            from pyftpdlib.handlers import TLS_FTPHandler

            base = TLS_FTPHandler

        class Recording(base):  # type: ignore[misc, valid-type]
            def on_connect(self) -> None:
                self._recorded: list[str] = []
                with lock:
                    sessions.append(self._recorded)

            def pre_process_command(self, line: str, cmd: str, arg: str) -> None:
                self._recorded.append(line)
                super().pre_process_command(line, cmd, arg)

        Recording.authorizer = authorizer
        Recording.banner = banner
        Recording.masquerade_address = masquerade
        Recording.permit_foreign_addresses = False
        Recording.use_sendfile = True
        if tls is not None:
            Recording.certfile, Recording.keyfile = tls
        self.server = pyftpdlib_server(Recording)
        self.port: int = self.server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"timeout": 0.05}, daemon=True)

    def start(self) -> PyFtpd:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.close_all()
        self._thread.join(timeout=5)

    def commands(self) -> list[list[str]]:
        """The recorded sessions, each as its command lines (PASS arguments kept: test data)."""
        return [list(session) for session in self.sessions]

    @property
    def url(self) -> str:
        return f"ftp://127.0.0.1:{self.port}"


@contextmanager
def pyftpd(root: Path, **options: Any) -> Iterator[PyFtpd]:
    server = PyFtpd(root, **options).start()
    try:
        yield server
    finally:
        server.stop()


# -- vsftpd -----------------------------------------------------------------------


def vsftpd_missing() -> str | None:
    """Why vsftpd cannot run here, or None."""
    if not os.path.exists(VSFTPD):
        return "vsftpd"
    if os.geteuid() != 0:
        return "vsftpd (needs root: it insists on a root-owned config)"
    return None


def _ensure_user(home: Path) -> None:
    """The local test account (a real passwd entry: vsftpd logs in through PAM)."""
    found = subprocess.run(["getent", "passwd", USER], capture_output=True)
    if found.returncode != 0:
        # /bin/sh is in /etc/shells, so pam_shells lets the account in.
        subprocess.run(
            ["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/sh", USER],
            check=True,
            capture_output=True,
        )
    else:
        # vsftpd enters the passwd home before local_root ("500 OOPS: cannot
        # change directory" if it is gone, e.g. a previous run's state dir).
        fields = found.stdout.decode().strip().split(":")
        if len(fields) < 6 or not os.path.isdir(fields[5]):
            subprocess.run(["usermod", "--home", str(home), USER], check=True, capture_output=True)
    subprocess.run(["chpasswd"], input=f"{USER}:{PASSWORD}\n".encode(), check=True, capture_output=True)


def _passive_range(size: int = 40) -> tuple[int, int]:
    """A run of `size` consecutive ports of which at least three quarters are free right now.

    vsftpd picks a passive port at random in its range and tries another
    when one is taken, so a few busy ports do no harm; after a bulk
    benchmark tens of thousands of connections sit in TIME_WAIT and a run
    of 40 entirely free ports may not exist.  Probes bind as vsftpd does
    (SO_REUSEADDR).
    """
    for _ in range(500):
        start = free_port()
        if start + size >= 65535:
            continue
        free = 0
        for port in range(start, start + size):
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
                free += 1
        if free >= size * 3 // 4:
            return start, start + size - 1
    raise RuntimeError("no free passive port range")


class Vsftpd:
    """A private vsftpd instance; `home` is fetchuser's FTP home (not chrooted)."""

    def __init__(self, content: Path, state: Path, port: int, server: Server) -> None:
        self.content = content
        self.state = state
        self.port = port
        self.server = server
        self.home = state / "home" / USER

    @property
    def url(self) -> str:
        return f"ftp://127.0.0.1:{self.port}"

    def log(self) -> str:
        try:
            return (self.state / "vsftpd.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def commands(self) -> list[str]:
        """Every FTP command vsftpd logged (log_ftp_protocol), in order, without PASS arguments."""
        found = []
        for line in self.log().splitlines():
            marker = 'FTP command: Client "'
            at = line.find(marker)
            if at < 0:
                continue
            rest = line[at + len(marker) :]
            quote = rest.find('", "')
            if quote >= 0 and rest.endswith('"'):
                found.append(rest[quote + 4 : -1])
        return found

    def stop(self) -> None:
        self.server.stop()
        shutil.rmtree(self.state, ignore_errors=True)


def start_vsftpd(content: Path, *, ascii_download: bool = True) -> Vsftpd:
    """Write a root-owned config into a fresh state directory and start vsftpd in the foreground."""
    state = Path(tempfile.mkdtemp(prefix="fetcher-vsftpd-"))
    state.chmod(0o755)
    (state / "empty").mkdir(mode=0o755)
    home = state / "home" / USER
    (home / "sub").mkdir(parents=True)
    (state / "home").chmod(0o755)
    _ensure_user(home)
    (home / "private.txt").write_bytes(f"private file of {USER}\n".encode())
    (home / "sub" / "nested.txt").write_bytes(b"nested private file\n")
    shutil.chown(home, USER)
    for path in (home / "sub", home / "private.txt", home / "sub" / "nested.txt"):
        shutil.chown(path, USER)
    home.chmod(0o700)
    (home / "private.txt").chmod(0o600)
    port = free_port()
    low, high = _passive_range()
    settings = {
        # Foreground, so the process we start is the listener we stop.
        "listen": "YES",
        "listen_ipv6": "NO",
        "listen_address": "127.0.0.1",
        "listen_port": str(port),
        "background": "NO",
        # vsftpd 3.0.3's seccomp filter can kill sessions on newer kernels.
        "seccomp_sandbox": "NO",
        "secure_chroot_dir": str(state / "empty"),
        "anonymous_enable": "YES",
        "anon_root": str(content),
        "no_anon_password": "NO",
        "anon_upload_enable": "NO",
        "anon_mkdir_write_enable": "NO",
        "anon_other_write_enable": "NO",
        "anon_world_readable_only": "YES",
        "write_enable": "NO",
        "local_enable": "YES",
        "pam_service_name": "vsftpd",
        "user_sub_token": "$USER",
        "local_root": str(state / "home" / "$USER"),
        "chroot_local_user": "NO",
        "allow_writeable_chroot": "YES",
        "pasv_enable": "YES",
        "pasv_min_port": str(low),
        "pasv_max_port": str(high),
        "pasv_address": "127.0.0.1",
        "pasv_promiscuous": "NO",
        "port_enable": "YES",
        "connect_from_port_20": "NO",
        "ascii_download_enable": "YES" if ascii_download else "NO",
        "ftpd_banner": "vsftpd test server ready",
        "dirmessage_enable": "NO",
        "use_localtime": "NO",
        "hide_ids": "NO",
        "max_clients": "0",
        "max_per_ip": "0",
        "xferlog_enable": "YES",
        "xferlog_std_format": "NO",
        "dual_log_enable": "YES",
        "log_ftp_protocol": "YES",
        "vsftpd_log_file": str(state / "vsftpd.log"),
        "xferlog_file": str(state / "xferlog"),
    }
    config = state / "vsftpd.conf"
    config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    config.chmod(0o600)  # vsftpd refuses a config it does not own
    server = Server([VSFTPD, str(config)], port, log=state / "stdout.log")
    return Vsftpd(content, state, port, server)

"""A private INN 2.7 instance (innd + nnrpd) on 127.0.0.1 for the NNTP interop tests.

Nothing under /etc/news, /var/lib/news or /var/spool/news is used at run
time: every INN program honours $INNCONF, and the inn.conf written here
points all of INN's paths into one temporary state directory.  The instance:

* listens on 127.0.0.1 only (only `bindaddress` is set, so no [::] socket);
* has no feed peers, so every connection is a reader handed to nnrpd;
* lets anonymous readers read everything except test.secret, and gives
  AUTHINFO USER/PASS users (checked by ckpasswd against a crypt(3) file)
  everything, including posting;
* is seeded through inews with the articles in `ARTICLES` (fixed message-ids).

innd insists on running as user and group "news", so this needs root (it
starts innd through setpriv).  Quirks worked around (see the comments):
inn2's stop delay, the default article size limit, INN's clock checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.interop.processes import Server

NEWS_BIN = Path("/usr/lib/news/bin")
USER = "fetchuser"
PASSWORD = "s3cret"

LARGE_BODY = b"".join(
    b"large body line %06d abcdefghijklmnopqrstuvwxyz0123456789ABCDEF\n" % i for i in range(16384)
)  # 16384 lines of 66 bytes: 1,081,344 bytes
DOTS_BODY = b"first line\n.\n.hidden-looking line\n..two dots\nlast line\n"
UTF8_SUBJECT = "Grüße aus Köln – ünïcödé ☃"
UTF8_FROM = "Jörg Müller <joerg@example.test>"

#: (message-id, headers, body), posted in this order; test.one gets numbers 1-5, test.two 1, test.secret 1.
ARTICLES: list[tuple[str, bytes, bytes]] = [
    (
        "one.1@example.test",
        b"From: Alice Example <alice@example.test>\nNewsgroups: test.one\nSubject: First test article\n",
        b"Hello from article one.\nSecond line.\n",
    ),
    (
        "one.2-dots@example.test",
        b"From: Alice Example <alice@example.test>\nNewsgroups: test.one\nSubject: Lines starting with dots\n",
        DOTS_BODY,
    ),
    (
        "one.3-utf8@example.test",
        f"From: {UTF8_FROM}\nNewsgroups: test.one\nSubject: {UTF8_SUBJECT}\nMIME-Version: 1.0\n"
        "Content-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: 8bit\n".encode(),
        "Body with UTF-8: naïve café, 東京, ☃.\n".encode(),
    ),
    (
        "one.4-large@example.test",
        b"From: Big Poster <big@example.test>\nNewsgroups: test.one\nSubject: Large article (~1 MiB body)\n",
        LARGE_BODY,
    ),
    (
        "two.1-cross@example.test",
        b"From: Bob Example <bob@example.test>\nNewsgroups: test.one,test.two\n"
        b"Subject: =?UTF-8?B?Q3Jvc3Nwb3N0IOKAkyBlbmNvZGVkIHN1YmplY3Q=?=\nReferences: <one.1@example.test>\n",
        b"Crossposted reply to article one.\n",
    ),
    (
        "secret.1@example.test",
        b"From: Carol Example <carol@example.test>\nNewsgroups: test.secret\nSubject: Secret article\n",
        b"Only visible after AUTHINFO.\n",
    ),
]

# inn.conf keys dropped from the installed file besides the ones _inn_conf sets.
_DROPPED = frozenset({"bindaddress6", "nnrpdposthost"})

_ACTIVE = """\
control 0000000000 0000000001 n
control.cancel 0000000000 0000000001 n
junk 0000000000 0000000001 n
test.one 0000000000 0000000001 y
test.two 0000000000 0000000001 y
test.secret 0000000000 0000000001 y
"""

_NEWSGROUPS = """\
control\tVarious control messages (no posting)
control.cancel\tCancel messages (no posting)
junk\tUnfiled articles (no posting)
test.one\tFirst test group
test.two\tSecond test group
test.secret\tNeeds AUTHINFO to read
"""


def missing() -> str | None:
    """Why INN cannot run here (None when it can)."""
    if not (NEWS_BIN / "innd").exists() or not Path("/etc/news/inn.conf").exists():
        return "INN (innd)"
    if os.geteuid() != 0:
        return "root (innd must run as user news; the INN tests start it through setpriv)"
    if shutil.which("setpriv") is None or shutil.which("perl") is None:
        return "setpriv and perl"
    return None


@dataclass
class Inn:
    port: int
    state: Path
    server: Server

    def stop(self) -> None:
        self.server.stop()
        shutil.rmtree(self.state, ignore_errors=True)


def _as_news(*argv: str | Path) -> list[str]:
    return ["setpriv", "--reuid=news", "--regid=news", "--clear-groups", "--", *map(str, argv)]


def _inn_conf(state: Path, port: int) -> str:
    ours = {
        "domain": "example.test",
        "fromhost": "example.test",
        "server": "127.0.0.1",
        "pathhost": "news.example.test",
        "organization": '"INN test instance"',
        "port": str(port),
        "bindaddress": "127.0.0.1",  # alone: no [::] socket
        "nnrpdpostport": str(port),
        "pathetc": f"{state}/etc",
        "pathdb": f"{state}/db",
        "pathrun": f"{state}/run",
        "pathlog": f"{state}/log",
        "pathtmp": f"{state}/tmp",
        "pathhttp": f"{state}/http",
        "pathspool": f"{state}/spool",
        "patharticles": f"{state}/spool/articles",
        "pathoverview": f"{state}/spool/overview",
        "pathincoming": f"{state}/spool/incoming",
        "pathoutgoing": f"{state}/spool/outgoing",
        "patharchive": f"{state}/spool/archive",
        # The default of 1,000,000 bytes would refuse the 1 MiB article.
        "maxartsize": "0",
        "localmaxartsize": "0",
        "artcutoff": "0",
        "pgpverify": "false",
        "doinnwatch": "false",
        "htmlstatus": "false",
        "docancels": '"require-auth"',
        "readerswhenstopped": "true",
        # With timer != 0 innd sleeps until the next timer report and ignores
        # -t, so SIGTERM would take minutes to act (see start()).
        "timer": "0",
    }
    installed = Path("/etc/news/inn.conf").read_text(errors="replace").splitlines()
    kept = [line for line in installed if line.split(":", 1)[0].strip() not in {*ours, *_DROPPED}]
    return "\n".join(kept) + "\n\n# private test instance\n" + "".join(f"{k}: {v}\n" for k, v in ours.items())


def _crypt(password: str) -> str:
    """A SHA-512 crypt(3) hash for ckpasswd (perl ships with INN; Python's crypt module is going away)."""
    script = 'print crypt($ARGV[0], "\\$6\\$" . join("", map { ("a".."z")[rand 26] } 1..16) . "\\$")'
    return subprocess.run(["perl", "-e", script, password], check=True, capture_output=True, text=True).stdout


def _write_tree(state: Path, port: int) -> Path:
    for sub in ("etc", "db", "run", "log/OLD", "tmp", "http", "spool/articles", "spool/overview",
                "spool/incoming/tmp", "spool/incoming/bad", "spool/outgoing", "spool/archive"):  # fmt: skip
        (state / sub).mkdir(parents=True, exist_ok=True)
    shutil.copytree("/etc/news", state / "etc", dirs_exist_ok=True, symlinks=True)
    etc = state / "etc"
    conf = etc / "inn.conf"
    conf.write_text(_inn_conf(state, port))
    (etc / "incoming.conf").write_text("# no feed peers: every connection is a reader (nnrpd)\n")
    (etc / "newsfeeds").write_text("ME:!*/!local::\n")
    (etc / "storage.conf").write_text("method tradspool {\n    newsgroups: *\n    class: 0\n}\n")
    (etc / "expire.ctl").write_text("/remember/:11\n*:A:never:never:never\n")
    # nnrpd uses the last access block whose users: matches the identity.
    (etc / "readers.conf").write_text(
        f'auth "loopback" {{\n    hosts: "127.0.0.1, localhost, ::1, stdin"\n'
        f'    auth: "ckpasswd -f {etc}/newsusers"\n    default: "<anonymous>"\n}}\n'
        'access "authenticated" {\n    users: "*"\n    newsgroups: "*"\n    access: RPA\n}\n'
        'access "anonymous" {\n    users: "<anonymous>"\n    newsgroups: "*,!test.secret"\n    access: R\n}\n'
    )
    (etc / "newsusers").write_text(f"{USER}:{_crypt(PASSWORD)}\n")
    (etc / "passwd.nntp").write_text(f"127.0.0.1:{USER}:{PASSWORD}\n")  # for inews
    (etc / "motd.nnrpd").write_text("Welcome to the INN test instance.\n")
    (state / "db" / "active").write_text(_ACTIVE)
    (state / "db" / "newsgroups").write_text(_NEWSGROUPS)
    (state / "db" / "active.times").write_text("")
    (state / "db" / "history").write_text("")
    subprocess.run(["chown", "-R", "news:news", str(state)], check=True)
    (etc / "newsusers").chmod(0o640)
    (etc / "passwd.nntp").chmod(0o640)
    state.chmod(0o755)
    return conf


def _post(conf: Path, port: int, message_id: str, headers: bytes, body: bytes) -> None:
    article = headers + f"Message-ID: <{message_id}>\n\n".encode() + body
    # -h headers in the input; -Y always log in (passwd.nntp); -O no Organization; -P no Sender.
    done = subprocess.run(
        _as_news(NEWS_BIN / "inews", "-h", "-Y", "-O", "-P", "-p", str(port)),
        input=article,
        capture_output=True,
        env={**os.environ, "INNCONF": str(conf)},
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"inews could not post <{message_id}>: {done.stderr.decode(errors='replace')}")


def _wait_for_article(conf: Path, message_id: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = subprocess.run(
            _as_news(NEWS_BIN / "grephistory", f"<{message_id}>"),
            capture_output=True,
            env={**os.environ, "INNCONF": str(conf)},
        )
        if found.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"<{message_id}> never reached the history of the test INN")


def start(port: int) -> Inn:
    """Build, start and seed a private INN on 127.0.0.1:port; `Inn.stop()` removes it again."""
    state = Path(tempfile.mkdtemp(prefix="fetcher-inn-", dir="/tmp"))
    try:
        conf = _write_tree(state, port)
        env = {"INNCONF": str(conf)}
        subprocess.run(_as_news(NEWS_BIN / "makedbz", "-i", "-o"), check=True, env={**os.environ, **env},
                       capture_output=True)  # fmt: skip
        # -f: stay in the foreground (the recorded PID is innd); -c 0: accept any Date;
        # -t 2: wake every 2 s, so SIGTERM (only a flag in INN 2.7) is acted on quickly.
        server = Server(_as_news(NEWS_BIN / "innd", "-f", "-c", "0", "-t", "2"), port, log=state / "innd.log", env=env)
    except BaseException:
        shutil.rmtree(state, ignore_errors=True)
        raise
    inn = Inn(port, state, server)
    try:
        for message_id, headers, body in ARTICLES:
            _post(conf, port, message_id, headers, body)
        _wait_for_article(conf, ARTICLES[-1][0])
    except BaseException:
        inn.stop()
        raise
    return inn

"""nntp:, news:, nntps:, snews: against the in-repo trio NNTP server (tests/servers/nntp.py)."""

from __future__ import annotations

import hashlib
import os
import pty
import select
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trustme

from fetcher import Client
from fetcher.errors import (
    AuthError,
    FetchError,
    LimitExceeded,
    NotFound,
    ProtocolError,
    Timeout,
    TransientError,
    UsageError,
)
from tests.conftest import ROOT, run_fetch
from tests.servers.nntp import Article, Faults, Group, NntpServer, article, serving

pytestmark = pytest.mark.usefixtures("no_netrc")

DOTS = b"first line\n.\n.hidden-looking line\n..two dots\nlast line\n"
EVIL_BODY = b"\x1b[31mred\x1b[0m and a bell \x07\n"
BIG_BODY = b"".join(b"large body line %06d abcdefghijklmnopqrstuvwxyz0123456789ABCDEF\n" % i for i in range(16384))


def groups() -> list[Group]:
    return [
        Group(
            "test.group",
            [
                article(1, "one@example.test", "First article", b"Hello from article one.\n"),
                article(2, "dots@example.test", "Dot lines", DOTS),
                article(3, "evil@example.test", "Escapes", EVIL_BODY, extra_headers=b"X-Evil: a\rb\n"),
                article(4, "big@example.test", "Large", BIG_BODY),
            ],
        ),
        Group("test.many", [article(n, f"m{n}@example.test", f"Number {n}", b"x\n") for n in range(1, 151)]),
        Group("test.secret", [article(1, "secret@example.test", "Secret", b"hush\n")], needs_auth=True),
        Group("test.empty", [], status="m"),
    ]


def text_of(server: NntpServer, message_id: str) -> bytes:
    found = server.find(message_id)
    assert found is not None
    return found.text


def base(server: NntpServer) -> str:
    return f"nntp://127.0.0.1:{server.port}"


async def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, env=env, timeout=60))


# -- articles ---------------------------------------------------------------------


async def test_article_by_number_is_unstuffed_with_local_newlines() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client() as client:
            result = await client.fetch(f"{base(server)}/test.group/2")
    assert result.kind == "document"
    assert result.content_type == "message/rfc822"
    assert result.size is None
    assert result.content == text_of(server, "dots@example.test")
    assert b"\n.\n.hidden-looking line\n..two dots\n" in result.content
    assert result.metadata["message_id"] == "dots@example.test"
    assert server.sessions == [["MODE READER", "CAPABILITIES", "GROUP test.group", "ARTICLE 2", "QUIT"]]


async def test_raw_keeps_the_crlf_wire_form() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client(raw=True) as client:
            result = await client.fetch(f"{base(server)}/test.group/2")
    assert result.content == text_of(server, "dots@example.test").replace(b"\n", b"\r\n")


async def test_message_id_with_server_setting() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client(nntp_server=f"127.0.0.1:{server.port}") as client:
            result = await client.fetch("news:one@example.test")
    assert result.content == text_of(server, "one@example.test")
    assert server.commands[-2:] == ["ARTICLE <one@example.test>", "QUIT"]


async def test_terminator_split_across_reads_and_tiny_writes() -> None:
    faults = Faults(split_terminator=True, write_size=7)
    async with serving(NntpServer(groups(), faults=faults)) as server:
        async with Client() as client:
            result = await client.fetch(f"{base(server)}/test.group/2")
            again = await client.fetch(f"{base(server)}/test.group/1")
    assert result.content == text_of(server, "dots@example.test")
    assert again.content == text_of(server, "one@example.test")
    assert len(server.sessions) == 1  # the split "." did not leave the session out of step


async def test_one_mebibyte_article_streams_to_a_file(tmp_path: Path) -> None:
    target = tmp_path / "big.eml"
    async with serving(NntpServer(groups())) as server:
        async with Client() as client, client.open(f"{base(server)}/test.group/4") as resource:
            chunks = 0
            with open(tmp_path / "copy", "wb") as sink:
                async for chunk in resource:
                    sink.write(chunk)
                    chunks += 1
        async with Client() as client:
            download = await client.download(f"{base(server)}/test.group/4", target)
    expected = text_of(server, "big@example.test")
    assert len(BIG_BODY) == 1_081_344
    assert chunks > 1
    assert (tmp_path / "copy").read_bytes() == expected
    assert target.read_bytes() == expected
    assert download.sha256 == hashlib.sha256(expected).hexdigest()
    assert not (tmp_path / "big.eml.part").exists()


async def test_dropped_connection_mid_article_leaves_no_complete_file(tmp_path: Path) -> None:
    target = tmp_path / "a.eml"
    async with serving(NntpServer(groups(), faults=Faults(drop_mid_article=True))) as server:
        async with Client() as client:
            with pytest.raises(ProtocolError) as caught:
                await client.download(f"{base(server)}/test.group/4", target)
        run = await cli("-o", str(tmp_path / "b.eml"), f"{base(server)}/test.group/4")
    assert "before its end" in caught.value.message
    assert not target.exists() and (tmp_path / "a.eml.part").exists()
    assert run.returncode == 7
    assert b"before its end" in run.stderr
    assert not (tmp_path / "b.eml").exists()


async def test_stall_times_out() -> None:
    async with serving(NntpServer(groups(), faults=Faults(stall_mid_article=True))) as server:
        async with Client(timeout=0.5) as client:
            with pytest.raises(Timeout) as caught:
                await client.fetch(f"{base(server)}/test.group/4")
        run = await cli("--timeout", "0.5", f"{base(server)}/test.group/1")
    assert caught.value.exit_code == 8
    assert run.returncode == 8
    assert b"sent nothing for 0.5 s" in run.stderr


async def test_stall_after_greeting_times_out() -> None:
    async with serving(NntpServer(groups(), faults=Faults(stall_after_greeting=True))) as server:
        async with Client(timeout=0.3) as client:
            with pytest.raises(Timeout):
                await client.fetch(f"{base(server)}/test.group/1")


async def test_escapes_untouched_in_file_and_escaped_on_a_terminal(tmp_path: Path) -> None:
    async with serving(NntpServer(groups())) as server:
        url = f"{base(server)}/test.group/3"
        saved = await cli("-o", str(tmp_path / "evil.eml"), url)
        piped = await cli(url)
        shown = await trio.to_thread.run_sync(run_on_terminal, url)
    expected = text_of(server, "evil@example.test")
    assert saved.returncode == 0 and (tmp_path / "evil.eml").read_bytes() == expected
    assert piped.stdout == expected
    assert b"X-Evil: a\rb" in expected and b"\x1b[31m" in expected
    assert b"\x1b" not in shown and b"\x07" not in shown
    assert b"X-Evil: a\\rb" in shown
    assert b"\\x1b[31mred\\x1b[0m and a bell \\x07" in shown


def run_on_terminal(url: str) -> bytes:
    """Run `fetch URL` with stdout on a pseudo-terminal; return what the terminal got."""
    leader, follower = pty.openpty()
    env = {**os.environ, "NETRC": str(ROOT / "tests" / "no-such-netrc")}
    process = subprocess.Popen(
        [sys.executable, "-m", "fetcher", url], stdout=follower, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        env=env,
    )  # fmt: skip
    os.close(follower)
    output = bytearray()
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 30)
            if not ready:
                break
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            output += data
    finally:
        os.close(leader)
        process.wait(timeout=30)
    assert process.returncode == 0, process.stderr.read() if process.stderr else b""
    return bytes(output).replace(b"\r\n", b"\n")  # the tty's own output processing


# -- listings ----------------------------------------------------------------------


async def test_group_listing_entries() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client() as client:
            result = await client.fetch(f"{base(server)}/test.group")
    assert result.kind == "listing"
    assert [entry.name for entry in result.entries] == ["1", "2", "3", "4"]
    first = result.entries[0]
    assert first.type == "article"
    assert first.url == f"nntp://127.0.0.1:{server.port}/test.group/1"
    assert first.extra["subject"] == "First article"
    assert first.extra["from"] == "Tester <t@example.test>"
    assert first.extra["date"] == "Sat, 21 Nov 2026 01:00:00 +0000"
    assert first.extra["message_id"] == "one@example.test"
    assert first.size == len(text_of(server, "one@example.test").replace(b"\n", b"\r\n"))
    assert first.description == "First article | Tester <t@example.test> | Sat, 21 Nov 2026 01:00:00 +0000"
    assert server.commands[2:4] == ["GROUP test.group", "OVER 1-4"]


async def test_listing_defaults_to_last_100_and_honours_range() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client() as client:
            newest = await client.fetch(f"{base(server)}/test.many")
        async with Client(article_range=(10, 20)) as client:
            chosen = await client.fetch(f"{base(server)}/test.many")
    assert [e.extra["number"] for e in newest.entries] == list(range(51, 151))
    assert [e.extra["number"] for e in chosen.entries] == list(range(10, 21))
    assert "OVER 51-150" in server.commands and "OVER 10-20" in server.commands


async def test_news_group_listing_gives_nntp_urls_and_cli_table() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client(nntp_server=f"127.0.0.1:{server.port}") as client:
            result = await client.fetch("news:test.group")
        run = await cli("--nntp-server", f"127.0.0.1:{server.port}", "news:test.group")
        links = await cli("--links", "--range", "1-2", f"{base(server)}/test.group")
    assert result.entries[1].url == f"nntp://127.0.0.1:{server.port}/test.group/2"
    assert run.returncode == 0
    lines = run.stdout.decode().splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("article") and "First article | Tester <t@example.test>" in lines[0]
    assert "Escapes" in lines[2]
    assert links.stdout.decode() == "".join(f"{base(server)}/test.group/{n}\n" for n in (1, 2))


async def test_xover_then_head_fallback() -> None:
    async with serving(NntpServer(groups(), faults=Faults(no_over=True))) as server:
        async with Client() as client:
            xover = await client.fetch(f"{base(server)}/test.group")
    assert "XOVER 1-4" in server.commands and not any(c.startswith("OVER") for c in server.commands)
    async with serving(
        NntpServer(groups(), faults=Faults(no_over=True, no_xover=True, no_capabilities=True))
    ) as server:
        async with Client() as client:
            head = await client.fetch(f"{base(server)}/test.group")
    assert server.commands[2:9] == ["GROUP test.group", "OVER 1-4", "XOVER 1-4", "HEAD 1", "HEAD 2", "HEAD 3", "HEAD 4"]
    assert [e.extra["subject"] for e in head.entries] == [e.extra["subject"] for e in xover.entries]
    assert head.entries[0].size is None
    assert head.entries[0].url == f"{base(server)}/test.group/1"


async def test_empty_group_and_missing_things() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client(nntp_server=f"127.0.0.1:{server.port}") as client:
            empty = await client.fetch(f"{base(server)}/test.empty")
            with pytest.raises(NotFound, match="no such newsgroup"):
                await client.fetch(f"{base(server)}/no.such.group")
            with pytest.raises(NotFound, match="no such article"):
                await client.fetch(f"{base(server)}/test.group/99")
            with pytest.raises(NotFound, match="message-id"):
                await client.fetch("news:nowhere@example.test")
        runs = [
            await cli(f"{base(server)}/no.such.group/1"),
            await cli(f"{base(server)}/test.group/99"),
            await cli("--nntp-server", f"127.0.0.1:{server.port}", "news:nowhere@example.test"),
        ]
    assert empty.entries == []
    assert [run.returncode for run in runs] == [6, 6, 6]
    assert b"411 no such group no.such.group" in runs[0].stderr


async def test_all_groups() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client(nntp_server=f"127.0.0.1:{server.port}") as client:
            result = await client.fetch("news:*")
    assert "LIST ACTIVE" in server.commands
    assert [(e.name, e.url, e.type) for e in result.entries] == [
        ("test.empty", "news:test.empty", "group"),
        ("test.group", "news:test.group", "group"),
        ("test.many", "news:test.many", "group"),
    ]
    assert result.entries[2].description == "150 articles (1-150)"
    assert result.entries[0].description.endswith("moderated")
    async with serving(NntpServer(groups(), faults=Faults(no_list_active=True))) as server:
        run = await cli("--json", f"news://127.0.0.1:{server.port}/*")
    assert server.commands[-3:-1] == ["LIST ACTIVE", "LIST"]
    assert run.returncode == 0
    assert f'"url": "news://127.0.0.1:{server.port}/test.many"'.encode() in run.stdout


async def test_old_server_without_capabilities_or_reader_mode() -> None:
    faults = Faults(no_capabilities=True, mode_reader_refused=True, greeting=b"201 old server, no posting")
    async with serving(NntpServer(groups(), faults=faults)) as server:
        async with Client() as client:
            result = await client.fetch(f"{base(server)}/test.group/1")
    assert result.content == text_of(server, "one@example.test")
    assert server.commands[:2] == ["MODE READER", "CAPABILITIES"]


# -- server names, errors -------------------------------------------------------------


async def test_news_without_a_server_is_a_usage_error() -> None:
    async with Client() as client:
        with pytest.raises(UsageError) as caught:
            await client.fetch("news:comp.misc")
    assert "--nntp-server" in (caught.value.hint or "") and "NNTPSERVER" in (caught.value.hint or "")
    run = await cli("news:comp.misc")
    assert run.returncode == 2
    assert b"names no news server" in run.stderr and b"NNTPSERVER" in run.stderr


async def test_nntpserver_environment_variable() -> None:
    async with serving(NntpServer(groups())) as server:
        run = await cli("news:dots@example.test", env={"NNTPSERVER": f"127.0.0.1:{server.port}"})
    assert run.returncode == 0
    assert run.stdout == text_of(server, "dots@example.test")


@pytest.mark.parametrize(
    ("greeting", "error", "code"),
    [(b"400 too busy, try later", TransientError, 7), (b"502 you may not read here", AuthError, 5)],
)
async def test_greeting_refusals(greeting: bytes, error: type[FetchError], code: int) -> None:
    async with serving(NntpServer(groups(), faults=Faults(greeting=greeting))) as server:
        async with Client() as client:
            with pytest.raises(error) as caught:
                await client.fetch(f"{base(server)}/test.group/1")
        run = await cli(f"{base(server)}/test.group/1")
    assert caught.value.exit_code == code == run.returncode
    assert greeting.split()[0] in run.stderr


async def test_garbage_reply_is_a_protocol_error() -> None:
    async with serving(NntpServer(groups(), faults=Faults(garbage_reply_to="GROUP"))) as server:
        run = await cli(f"{base(server)}/test.group/1")
    assert run.returncode == 7
    assert b"where an NNTP status line was expected" in run.stderr
    assert b"\x1b" not in run.stderr


async def test_oversized_reply_is_a_limit_error() -> None:
    async with serving(NntpServer(groups(), faults=Faults(oversized_reply_to="GROUP"))) as server:
        async with Client() as client:
            # However the bytes arrive, the line reader refuses the line past line_bytes.
            with pytest.raises(LimitExceeded, match=r"more than 65536 bytes in one line") as caught:
                await client.fetch(f"{base(server)}/test.group")
        async with Client(limits={"line_bytes": 300 * 1024}) as client:
            with pytest.raises(ProtocolError, match="malformed GROUP reply"):
                await client.fetch(f"{base(server)}/test.group")
    assert caught.value.limit_name == "line_bytes" and caught.value.exit_code == 7


# -- authentication -------------------------------------------------------------------


async def test_authinfo_on_480() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client(user="reader", password="s3cret") as client:
            listing = await client.fetch(f"{base(server)}/test.secret")
            result = await client.fetch(f"{base(server)}/test.secret/1")
    assert result.content == text_of(server, "secret@example.test")
    assert [e.name for e in listing.entries] == ["1"]
    assert server.sessions[0][2:6] == [
        "GROUP test.secret",
        "AUTHINFO USER reader",
        "AUTHINFO PASS s3cret",
        "GROUP test.secret",
    ]
    assert server.commands.count("AUTHINFO USER reader") == 1  # the pooled session stays logged in


async def test_authinfo_asks_for_the_password_and_uses_netrc(tmp_path: Path) -> None:
    asked: list[tuple[str, bool]] = []

    def prompt(text: str, secret: bool) -> str:
        asked.append((text, secret))
        return "s3cret"

    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login reader password s3cret\n")
    netrc.chmod(0o600)
    async with serving(NntpServer(groups())) as server:
        async with Client(user="reader", prompt=prompt) as client:
            asked_result = await client.fetch(f"{base(server)}/test.secret/1")
        run = await cli("--netrc-file", str(netrc), f"{base(server)}/test.secret/1")
    assert asked_result.content == run.stdout == text_of(server, "secret@example.test")
    assert asked == [(f"Password for reader at 127.0.0.1:{server.port}: ", True)]


async def test_authinfo_refusals() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client(user="reader", password="wrong") as client:
            with pytest.raises(AuthError, match="481"):
                await client.fetch(f"{base(server)}/test.secret/1")
        async with Client() as client:
            with pytest.raises(AuthError) as caught:
                await client.fetch(f"{base(server)}/test.secret/1")
        run = await cli(f"{base(server)}/test.secret/1")
    assert "-u USER" in (caught.value.hint or "")
    assert run.returncode == 5
    assert b"requires a login" in run.stderr
    assert "AUTHINFO PASS wrong" in server.commands


# -- pooling -------------------------------------------------------------------------------


async def test_one_session_for_many_urls_and_reconnect_when_stale() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client(nntp_server=f"127.0.0.1:{server.port}") as client:
            await client.fetch(f"{base(server)}/test.group")
            for n in (1, 2, 3):
                await client.fetch(f"{base(server)}/test.group/{n}")
            await client.fetch("news:one@example.test")  # another scheme: another pool key
    assert len(server.sessions) == 2
    assert server.sessions[0].count("MODE READER") == 1
    assert server.sessions[0][-1] == "QUIT"
    async with serving(NntpServer(groups(), faults=Faults(close_after=4))) as server:
        async with Client() as client:
            first = await client.fetch(f"{base(server)}/test.group/1")
            second = await client.fetch(f"{base(server)}/test.group/2")
    assert (first.content, second.content) == (
        text_of(server, "one@example.test"),
        text_of(server, "dots@example.test"),
    )
    assert len(server.sessions) == 2


async def test_abandoned_body_closes_the_session() -> None:
    async with serving(NntpServer(groups())) as server:
        async with Client() as client:
            async with client.open(f"{base(server)}/test.group/4") as resource:
                async for _ in resource:
                    break
            result = await client.fetch(f"{base(server)}/test.group/1")
    assert result.content == text_of(server, "one@example.test")
    assert len(server.sessions) == 2  # the half-read one was not reused
    assert "QUIT" not in server.sessions[0]


# -- TLS ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, str]:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return context, str(path)


async def test_nntps_and_snews_implicit_tls(tls_ca: tuple[ssl.SSLContext, str]) -> None:
    context, cafile = tls_ca
    async with serving(NntpServer(groups(), tls=context)) as server:
        async with Client(cacert=cafile, nntp_server=f"127.0.0.1:{server.port}") as client:
            result = await client.fetch(f"nntps://127.0.0.1:{server.port}/test.group/2")
            listing = await client.fetch("snews:test.group")
        refused = await cli(f"nntps://127.0.0.1:{server.port}/test.group/2")
    assert result.content == text_of(server, "dots@example.test")
    assert listing.entries[0].url == f"nntps://127.0.0.1:{server.port}/test.group/1"
    assert refused.returncode == 4  # no trust in the test CA without --cacert


async def test_starttls(tls_ca: tuple[ssl.SSLContext, str]) -> None:
    context, cafile = tls_ca
    async with serving(NntpServer(groups(), starttls=context, faults=Faults(offer_starttls=True))) as server:
        async with Client(cacert=cafile, starttls=True) as client:
            result = await client.fetch(f"{base(server)}/test.group/1")
    assert result.content == text_of(server, "one@example.test")
    assert server.commands[:5] == ["MODE READER", "CAPABILITIES", "STARTTLS", "CAPABILITIES", "GROUP test.group"]
    async with serving(NntpServer(groups())) as server:
        run = await cli("--starttls", f"{base(server)}/test.group/1")
    assert run.returncode == 7
    assert b"does not offer STARTTLS" in run.stderr
    assert "GROUP test.group" not in server.commands


def test_article_helper_shape() -> None:
    item: Article = article(7, "x@y", "S", b"body\n")
    assert item.header("subject") == b"S" and item.text.endswith(b"\n\nbody\n")


async def test_trace_hides_the_password_and_guard_refuses_injection() -> None:
    async with serving(NntpServer(groups())) as server:
        traced = await cli("-v", "-u", "reader:s3cret", f"{base(server)}/test.secret/1")
        injected = await cli("--nntp-server", f"127.0.0.1:{server.port}", "news:x%0D%0AQUIT@example.test")
    assert traced.returncode == 0
    assert traced.stdout == text_of(server, "secret@example.test")
    assert b"> AUTHINFO USER reader\n" in traced.stderr and b"> AUTHINFO PASS ****\n" in traced.stderr
    assert b"s3cret" not in traced.stderr
    assert injected.returncode == 3
    assert len(server.sessions) == 1  # the refused URL never connected

"""The guard: refused ports and injected lines, the controls that lift ports,
and proof that a refusal opens no socket (a listening canary sees nothing).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from urllib.parse import quote

import anyio
import pytest
import trio

import fetcher
from fetcher import guard
from fetcher.errors import UnsafeURL
from fetcher.guard import BAD_PORTS, SSRF_PORTS, Policy
from fetcher.url import URL, parse_url
from tests.conftest import run_fetch


def refusal(url: URL | str, policy: Policy = guard.DEFAULT_POLICY) -> UnsafeURL:
    with pytest.raises(UnsafeURL) as caught:
        guard.check(parse_url(url) if isinstance(url, str) else url, policy)
    assert caught.value.exit_code == 3
    return caught.value


def passes(url: URL | str, policy: Policy = guard.DEFAULT_POLICY) -> bool:
    guard.check(parse_url(url) if isinstance(url, str) else url, policy)
    return True


# -- ports ------------------------------------------------------------------


def test_the_lists() -> None:
    fetch_bad_ports = (
        "0 1 7 9 11 13 15 17 19 20 21 22 23 25 37 42 43 53 69 77 79 87 95 101 102 103 104 109 110 111 113 115 117 "
        "119 123 135 137 139 143 161 179 389 427 465 512 513 514 515 526 530 531 532 540 548 554 556 563 587 601 "
        "636 989 990 993 995 1719 1720 1723 2049 3659 4045 4190 5060 5061 6000 6566 6665 6666 6667 6668 6669 6679 "
        "6697 10080"
    )
    assert {int(port) for port in fetch_bad_ports.split()} == BAD_PORTS
    assert {2375, 3306, 5432, 6379, 8000, 8500, 9000, 9200, 10050, 11211} == SSRF_PORTS


@pytest.mark.parametrize(
    ("url", "port"),
    [
        ("http://h.com:25/", 25),
        ("https://h.com:22/", 22),
        ("http://h.com:21/", 21),
        ("http://h.com:119/", 119),
        ("http://h.com:0/", 0),
        ("ftp://h.com:22/x", 22),
        ("ftp://h.com:119/x", 119),
        ("ftps://h.com:21/x", 21),
        ("gopher://h.com:25/", 25),
        ("gopher://h.com:6667/", 6667),
        ("nntp://h.com:25/comp.misc", 25),
        ("nntp://h.com:21/comp.misc", 21),
        ("nntps://h.com:119/comp.misc", 119),
        ("news://h.com:563/comp.misc", 563),
        ("telnet://h.com:25/", 25),
        ("wais://h.com:6000/db", 6000),
        ("prospero://h.com:1//x", 1),
        ("x-test://h.com:10080/", 10080),
    ],
)
def test_bad_ports_are_refused(url: str, port: int) -> None:
    error = refusal(url)
    scheme = url.split(":", 1)[0]
    assert (error.part, error.rule) == ("port", "bad-port")
    assert str(error) == (
        f"port {port} refused for {scheme} (bad-port rule): "
        "it belongs to another service (the WHATWG Fetch bad-port list)"
    )
    assert (
        error.hint == f"if you trust this server, allow it with --allow-port {port} (library: allow_ports={{{port}}})"
    )


@pytest.mark.parametrize("port", sorted(SSRF_PORTS))
@pytest.mark.parametrize("scheme", ["gopher", "gophers"])
def test_request_forgery_ports_are_refused_for_gopher(scheme: str, port: int) -> None:
    error = refusal(f"{scheme}://127.0.0.1:{port}/_save")
    assert (error.part, error.rule) == ("port", "ssrf-port")
    assert str(error) == (
        f"port {port} refused for {scheme} (ssrf-port rule): "
        f"{scheme} sends URL text as a raw line, and this port is a common request-forgery target"
    )
    assert error.hint is not None and f"--allow-port {port}" in error.hint


@pytest.mark.parametrize(
    "url", ["http://h.com:6379/", "ftp://h.com:3306/", "nntp://h.com:11211/g", "wais://h.com:9200/d"]
)
def test_request_forgery_ports_are_for_line_schemes_only(url: str) -> None:
    assert passes(url)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://h.com/",
        "ftp://h.com:21/",
        "ftps://h.com/",
        "ftps://h.com:990/",
        "http://h.com/",
        "https://h.com:443/",
        "gopher://h.com/",
        "gopher://h.com:70/",
        "nntp://h.com/g",
        "nntp://h.com:119/g",
        "nntps://h.com/g",
        "nntps://h.com:563/g",
        "news://h.com:119/g",
        "snews://h.com:563/g",
        "telnet://h.com/",
        "telnet://h.com:23/",
        "wais://h.com/db",
        "prospero://h.com//x",
        "gopher://h.com:7070/",
        "http://h.com:8080/",
        "news:comp.misc",
        "file:///etc/motd",
        "mailto:a@h.com",
    ],
)
def test_default_and_ordinary_ports_pass(url: str) -> None:
    assert passes(url)


def test_allow_port_lifts_exactly_that_port() -> None:
    policy = Policy(allow_ports=frozenset({6379}))
    assert passes("gopher://127.0.0.1:6379/_save", policy)
    assert refusal("gopher://127.0.0.1:11211/", policy).rule == "ssrf-port"
    assert refusal("gopher://127.0.0.1:25/", policy).rule == "bad-port"
    assert passes("http://h.com:25/", Policy(allow_ports=frozenset({25, 22})))
    assert refusal("http://h.com:23/", Policy(allow_ports=frozenset({25, 22}))).rule == "bad-port"


def test_unsafe_ports_lifts_every_port_but_never_injection() -> None:
    policy = Policy(unsafe_ports=True)
    for port in sorted(BAD_PORTS | SSRF_PORTS):
        assert passes(f"gopher://h.com:{port}/", policy)
    assert refusal("ftp://h.com:25/a%0d%0aDELE%20x", policy).rule == "line-injection"
    assert refusal("gopher://h.com:6379/1a%0D%0Aset%20x", policy).rule == "line-injection"
    assert refusal("ftp://h.com:25/a%0d%0aDELE%20x", Policy(allow_ports=frozenset({25}))).part == "name"


def test_check_port_names_derived_connections() -> None:
    with pytest.raises(UnsafeURL) as caught:
        guard.check_port("ftp", 25, what="data port")
    assert str(caught.value).startswith("data port 25 refused for ftp (bad-port rule)")
    guard.check_port("ftp", 25, Policy(allow_ports=frozenset({25})), what="data port")
    guard.check_port("ftp", 2121, what="data port")
    guard.check_port("gopher", 6379, default_port=6379)


# -- injection --------------------------------------------------------------

INJECTIONS = [
    ("ftp://a%0D%0APASS%20x@h.com/", "user", "'\\r'"),
    ("ftp://a:b%0Ac@h.com/", "password", "'\\n'"),
    ("ftp://a:b%00@h.com/", "password", "'\\x00'"),
    ("ftp://h.com/a%00b/c", "cwd segment", "'\\x00'"),
    ("ftp://h.com/a/b%0D%0AMKD%20x/c", "cwd segment", "'\\r'"),
    ("ftp://h.com/a%0d%0aDELE%20x", "name", "'\\r'"),
    ("ftp://h.com/a%0A;type=i", "name", "'\\n'"),
    ("http://a%0D@h.com/", "user", "'\\r'"),
    ("http://a:b%0A@h.com/", "password", "'\\n'"),
    ("gopher://h.com/1a%0Db", "selector", "'\\r'"),
    ("gopher://h.com/1a%00", "selector", "'\\x00'"),
    ("gopher://h.com/7a%09b%0Ac", "search", "'\\n'"),
    ("gopher://h.com/1a%09%09+%0D%0Ax", "gopher+ string", "'\\r'"),
    ("gopher://h.com/1a%09%09!%00", "gopher+ string", "'\\x00'"),
    ("news:a%0D%0Ab@h.com", "message-id", "'\\r'"),
    ("news://h.com/a%00@h", "message-id", "'\\x00'"),
    ("prospero://h.com//a%0Db", "hsoname", "'\\r'"),
    ("prospero://h.com//a;x%0A=1", "field", "'\\n'"),
    ("prospero://h.com//a;x=1%00", "field", "'\\x00'"),
    ("wais://h.com/a%0Db", "database", "'\\r'"),
    ("wais://h.com/db?a%0Ab", "search", "'\\n'"),
]


@pytest.mark.parametrize(("url", "part", "char"), INJECTIONS)
def test_line_injection_is_refused(url: str, part: str, char: str) -> None:
    error = refusal(url)
    assert (error.part, error.rule) == (part, "line-injection")
    assert str(error).startswith(f"{part} contains {char} after decoding (line-injection rule): ")
    assert error.hint == "nothing lifts this rule; remove the encoded control character from the URL"
    assert refusal(url, Policy(unsafe_ports=True)).rule == "line-injection"


@pytest.mark.parametrize(
    ("url", "changes", "part"),
    [
        ("nntp://h.com/g", {"group": "g\r\nQUIT"}, "group"),
        ("news:comp.misc", {"group": "comp\nx"}, "group"),
        ("gopher://h.com/1sel", {"selector": "a\tb"}, "selector"),
        ("gopher://h.com/7sel%09q", {"search": "a\tb"}, "search"),
        ("http://h.com/x", {"path": "x HTTP/1.0\r\nHost: y"}, "path"),
        ("http://h.com/x?q", {"search": "q\nX: y"}, "search"),
    ],
)
def test_values_built_by_hand_are_checked_too(url: str, changes: dict[str, str], part: str) -> None:
    error = refusal(parse_url(url).replace(**changes))
    assert (error.part, error.rule) == (part, "line-injection")


def test_tab_in_a_gopher_selector_message() -> None:
    error = refusal(parse_url("gopher://h.com/1sel").replace(selector="a\tb"))
    assert str(error) == (
        "selector contains '\\t' after decoding (line-injection rule): a TAB ends the gopher selector field and "
        "starts another"
    )


def test_white_space_in_a_message_id_is_refused() -> None:
    error = refusal("news:a%20b@h.com")
    assert (error.part, error.rule) == ("message-id", "line-injection")
    assert str(error) == (
        "message-id contains white space after decoding (line-injection rule): "
        "it would add arguments to the NNTP command"
    )


def test_nul_in_a_file_path_is_refused() -> None:
    error = refusal("file:///etc/passwd%00.txt")
    assert (error.part, error.rule) == ("path", "nul-in-path")


@pytest.mark.parametrize(
    ("url", "part"),
    [
        ("telnet://%1B%5B2J@h.com/", "user"),
        ("telnet://guest:%07@h.com/", "password"),
        ("telnet://a%09b@h.com/", "user"),
        ("mailto:%1B%5D0;x%07@h.com", "address"),
        ("mailto:a%0D%0Ab@h.com", "address"),
    ],
)
def test_advisories_refuse_control_characters(url: str, part: str) -> None:
    error = refusal(url)
    assert (error.part, error.rule) == (part, "control-character")
    assert "(control-character rule): it would be printed to a terminal" in str(error)


@pytest.mark.parametrize("url", ["telnet://guest:pw@h.com/", "mailto:%22a%20b%22@h.com", "news:a@h.com"])
def test_advisories_and_ids_without_control_characters_pass(url: str) -> None:
    assert passes(url)


# -- the Gopher+ ASK form of RFC 1738 §3.4.9, exactly ------------------------


def gopher_plus(plus: str) -> str:
    return "gopher://h.com/1form%09%09" + quote(plus, safe="+!$")


@pytest.mark.parametrize(
    "plus",
    [
        "+\t1\r\n+-1\r\n.\r\n",
        "+\t1\r\n+-1\r\nred\r\n.\r\n",
        "+\t1\r\n+-1\r\nred\r\nblue\r\n.\r\n",
        "+\t1\r\n+-1\r\n\r\n..\r\n. \r\nx\ty\r\n.\r\n",
    ],
)
def test_the_ask_form_is_accepted(plus: str) -> None:
    url = parse_url(gopher_plus(plus))
    assert getattr(url, "plus") == plus  # noqa: B009
    assert passes(url)


@pytest.mark.parametrize(
    "plus",
    [
        "+\t1\r\n+-1\r\nred\r\n",  # no closing "."
        "+\t1\n+-1\nred\n.\n",  # LF without CR
        "+\t1\r\n+-1\r\nred\r\n.\r\nDELE x\r\n",  # a command after the block
        "+\t1\r\n+-1\r\n.\r\nset x 1\r\n.\r\n",  # a lone "." answer ends the block early
        "+text/plain\t1\r\n+-1\r\nred\r\n.\r\n",  # a view before the TAB
        "+\t1\r\n+-2\r\nred\r\n.\r\n",
        "+\t2\r\n+-1\r\n.\r\n",
        "\t1\r\n+-1\r\n.\r\n",
        "+\t1\r\n+-1\r\nre\rd\r\n.\r\n",  # a bare CR inside an answer
        "+\t1\r\n+-1\r\nre\x00d\r\n.\r\n",
        "+\t1\r\n+-1\r\nred\r\n.\r\n\r\n",
        "+\r\n",
    ],
)
def test_near_misses_of_the_ask_form_are_refused(plus: str) -> None:
    error = refusal(gopher_plus(plus))
    assert (error.part, error.rule) == ("gopher+ string", "line-injection")
    assert "only the ASK form of RFC 1738 §3.4.9" in str(error)


# -- no socket is opened -----------------------------------------------------


class Canary:
    """A listening socket that counts the connections that reached it."""

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("127.0.0.1", port))
        except OSError as error:
            self.sock.close()
            if error.errno == errno.EADDRINUSE:
                pytest.skip(f"127.0.0.1:{port} is in use by another program; the canary cannot listen there")
            raise
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.port: int = self.sock.getsockname()[1]

    def connections(self) -> int:
        count = 0
        while True:
            try:
                peer, _ = self.sock.accept()
            except BlockingIOError:
                return count
            peer.close()
            count += 1

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def canary_at() -> Iterator[type[Canary]]:
    opened: list[Canary] = []

    class Opened(Canary):
        def __init__(self, port: int = 0) -> None:
            super().__init__(port)
            opened.append(self)

    yield Opened
    for canary in opened:
        canary.close()


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything looks a name up or connects."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a connection was attempted: {args!r}")

    async def refuse_async(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a connection was attempted: {args!r}")

    monkeypatch.setattr(anyio, "connect_tcp", refuse_async)  # what fetcher.net.connect dials with
    monkeypatch.setattr(anyio, "getaddrinfo", refuse_async)
    monkeypatch.setattr(trio, "open_tcp_stream", refuse_async)
    monkeypatch.setattr(trio.socket, "getaddrinfo", refuse_async)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


async def test_library_refuses_before_any_socket(canary_at: type[Canary], no_sockets: None) -> None:
    redis = canary_at(6379)
    other = canary_at()
    async with fetcher.Client() as client:
        with pytest.raises(UnsafeURL) as caught:
            await client.fetch("gopher://127.0.0.1:6379/_save")
        assert caught.value.rule == "ssrf-port"
        with pytest.raises(UnsafeURL) as caught:
            await client.fetch(f"ftp://127.0.0.1:{other.port}/a%0d%0aDELE%20x")
        assert caught.value.rule == "line-injection"
        with pytest.raises(UnsafeURL):
            async with client.open(f"gopher://127.0.0.1:{other.port}/1a%0D%0Aset%20x%201"):
                pass
    async with fetcher.Client(unsafe_ports=True) as client:
        with pytest.raises(UnsafeURL) as caught:
            await client.fetch(f"ftp://127.0.0.1:{other.port}/a%0d%0aDELE%20x")
        assert caught.value.part == "name"
    assert (redis.connections(), other.connections()) == (0, 0)


async def test_library_connects_once_the_port_is_allowed(canary_at: type[Canary]) -> None:
    # The control that shows the canary would notice: nntp on the bad port
    # 6667 is refused, and reaches the canary once allowed.
    irc = canary_at(6667)
    async with fetcher.Client(timeout=0.5, connect_timeout=2) as client:
        with pytest.raises(UnsafeURL):
            await client.fetch("nntp://127.0.0.1:6667/comp.misc")
    assert irc.connections() == 0
    async with fetcher.Client(allow_ports={6667}, timeout=0.5, connect_timeout=2) as client:
        with pytest.raises(fetcher.errors.FetchError) as caught:
            await client.fetch("nntp://127.0.0.1:6667/comp.misc")
        assert not isinstance(caught.value, UnsafeURL)
    assert irc.connections() == 1


def test_cli_refuses_the_redis_payload_without_connecting(canary_at: type[Canary]) -> None:
    redis = canary_at(6379)
    result = run_fetch("gopher://127.0.0.1:6379/_save")
    assert result.returncode == 3
    assert result.stdout == b""
    assert result.stderr == (
        b"fetch: port 6379 refused for gopher (ssrf-port rule): gopher sends URL text as a raw line, and this port "
        b"is a common request-forgery target (gopher://127.0.0.1:6379/_save)\n"
        b"  hint: if you trust this server, allow it with --allow-port 6379 (library: allow_ports={6379})\n"
    )
    assert redis.connections() == 0


def test_cli_refuses_ftp_command_injection_without_connecting(canary_at: type[Canary]) -> None:
    ftp = canary_at(21)
    result = run_fetch("ftp://127.0.0.1/a%0d%0aDELE%20x")
    assert result.returncode == 3
    assert result.stderr.startswith(b"fetch: name contains '\\r' after decoding (line-injection rule): ")
    assert ftp.connections() == 0
    # the same on a port nothing else refuses, and with the port policy lifted
    other = canary_at()
    for args in ([], ["--unsafe-ports"], ["--allow-port", str(other.port)]):
        result = run_fetch(*args, f"ftp://127.0.0.1:{other.port}/a%0d%0aDELE%20x")
        assert result.returncode == 3
        assert b"(line-injection rule)" in result.stderr
    assert other.connections() == 0


def test_cli_allow_port_lifts_exactly_that_port(canary_at: type[Canary]) -> None:
    irc = canary_at(6667)
    refused = run_fetch("--allow-port", "6668", "nntp://127.0.0.1:6667/comp.misc")
    assert refused.returncode == 3
    assert b"--allow-port 6667" in refused.stderr
    assert irc.connections() == 0
    allowed = run_fetch("--timeout", "0.5", "--allow-port", "6667", "nntp://127.0.0.1:6667/comp.misc")
    assert allowed.returncode not in (0, 3)
    assert irc.connections() == 1
    lifted = run_fetch("--timeout", "0.5", "--unsafe-ports", "nntp://127.0.0.1:6667/comp.misc")
    assert lifted.returncode not in (0, 3)
    assert irc.connections() == 1

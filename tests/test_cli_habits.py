"""The command as curl and wget users type it (issue 29, items 3, 10 and 19).

- no prefix of a long option is taken (`--retry 3` was --retry-max-time 3,
  `--head URL` was --header URL), and curl's combined short flags work;
- curl's spellings with the same meaning (--retry, -I, -D, -f, -S, -x, `-C -`)
  and wget's long names (--tries, --directory-prefix, --output-document, ...);
- spellings fetch would misread (wget's -O FILE, -c, -P, -nv, ...) refused
  with a hint and exit 2, before any request;
- options that change nothing in a run say so; contradictory ones are refused;
- --output-dir is created; an endless option file is refused.

Every case runs the real `fetch` command and checks exit codes, messages,
files and what the server received.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.conftest import run_fetch
from tests.servers.http_server import Exchange, HTTPTestServer, Received

TEXT = b"line one\nline two\n"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "HTTP_PROXY")
NO_PROXY_ENV = dict.fromkeys(PROXY_VARIABLES, "")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
async def server(nursery: trio.Nursery) -> HTTPTestServer:
    instance = HTTPTestServer()
    await nursery.start(instance.serve)
    instance.add("/notes.txt", TEXT, headers=[("ETag", '"v1"'), ("X-Odd", "Mixed Case")])

    @instance.route("/page")
    async def page(request: Received, exchange: Exchange) -> None:
        """A real server's HEAD: the GET's fields, Content-Length included, and no body."""
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(TEXT)}\r\n"
                "X-Served-By: test\r\n\r\n").encode()  # fmt: skip
        await exchange.send(head if request.method == "HEAD" else head + TEXT)

    return instance


async def cli(*args: str, cwd: Path | None = None, input: bytes | None = None) -> tuple[int, bytes, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env=NO_PROXY_ENV, cwd=cwd, input=input))
    return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")


def flaky(server: HTTPTestServer, failures: int) -> list[int]:
    """/flaky answers 503 `failures` times, then the document; the list counts the requests."""
    calls: list[int] = []

    @server.route("/flaky")
    async def route(request: Received, exchange: Exchange) -> None:
        calls.append(1)
        if len(calls) <= failures:
            await exchange.respond(503, b"busy\n", [("Retry-After", "0")])
        else:
            await exchange.respond(200, TEXT)

    return calls


# -- no abbreviations --------------------------------------------------------------------------------------


async def test_retry_is_curls_retry_not_a_prefix_of_retry_max_time(server: HTTPTestServer) -> None:
    calls = flaky(server, 2)
    code, out, err = await cli("--retry", "3", server.url("/flaky"))
    assert (code, out, err) == (0, TEXT, "")
    assert len(calls) == 3


async def test_head_is_curls_head_not_a_prefix_of_header(server: HTTPTestServer) -> None:
    """`--head URL1 URL2` used to send `URL1` as a header and fetch URL2 only, exit 0."""
    first, second = server.url("/page"), server.url("/notes.txt")
    code, out, err = await cli("--head", first, second)
    assert code == 0, err
    assert [(request.method, request.path) for request in server.requests] == [("HEAD", "/page"),
                                                                               ("HEAD", "/notes.txt")]  # fmt: skip
    assert out.startswith(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n"
                          b"X-Served-By: test\r\n\r\nHTTP/1.1 200 OK\r\n")  # fmt: skip
    assert b"line one" not in out
    assert all(request.header("http") is None for request in server.requests)  # not sent as `-H URL1`


@pytest.mark.parametrize("prefix", ["--retr", "--max-redir", "--no-rob", "--insec", "--time", "--hea"])
async def test_a_prefix_of_a_long_option_is_refused(server: HTTPTestServer, prefix: str) -> None:
    code, out, err = await cli(prefix, "3", server.url("/notes.txt"))
    assert code == 2 and out == b"", err
    assert err.startswith(f"fetch: unrecognized arguments: {prefix}"), err
    assert server.requests == []


@pytest.mark.parametrize("flags", ["-sSLO", "-sSO", "-fsSLO", "-LOsS"])
async def test_curls_combined_short_flags(server: HTTPTestServer, tmp_path: Path, flags: str) -> None:
    code, out, err = await cli(flags, server.url("/notes.txt"), cwd=tmp_path)
    assert (code, out, err) == (0, b"", "")
    assert (tmp_path / "notes.txt").read_bytes() == TEXT


async def test_fail_and_show_error_are_the_defaults_they_are(server: HTTPTestServer) -> None:
    code, out, err = await cli("-fsSL", server.url("/notes.txt"))
    assert (code, out, err) == (0, TEXT, "")
    code, out, err = await cli("-sS", "--fail", "--show-error", server.url("/missing"))
    assert code == 6 and out == b"" and "HTTP 404" in err


# -- curl's spellings ----------------------------------------------------------------------------------------


async def test_head_prints_the_response_head_and_fetches_no_body(server: HTTPTestServer) -> None:
    code, out, err = await cli("-I", server.url("/page"))
    assert (code, err) == (0, "")
    assert out == (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 18\r\n"
                   b"X-Served-By: test\r\n\r\n")  # fmt: skip
    assert [request.method for request in server.requests] == ["HEAD"]


async def test_head_with_output_or_another_scheme_is_a_usage_error(server: HTTPTestServer, tmp_path: Path) -> None:
    code, out, err = await cli("-I", "-O", server.url("/page"), cwd=tmp_path)
    assert (code, out) == (2, b"")
    assert err.startswith("fetch: -I (--head) prints the response head on stdout and fetches no body"), err
    assert "hint: to save the head along with the document, use -D FILE" in err
    code, out, err = await cli("-I", f"file://{tmp_path}/")
    assert (code, out) == (2, b"")
    assert f"-I (--head) asks an HTTP server for a response head, and file://{tmp_path}/ is not http" in err
    code, _, err = await cli("-I", "-i", str(tmp_path / "list"), "-d", str(tmp_path))
    assert code == 2 and "not to a bulk run" in err
    assert server.requests == [] and list(tmp_path.iterdir()) == []


async def test_dump_header_writes_the_head_to_a_file_and_the_body_where_it_goes(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    heads = tmp_path / "heads.txt"
    heads.write_bytes(b"from an earlier run\n")
    code, out, err = await cli("-D", str(heads), server.url("/notes.txt"), server.url("/page"))
    assert (code, out, err) == (0, TEXT + TEXT, "")
    written = heads.read_bytes()
    assert written.startswith(b"HTTP/1.1 200 OK\r\n") and b"from an earlier run" not in written
    assert b"\r\nETag: \"v1\"\r\nX-Odd: Mixed Case\r\n" in written  # the fields as the server wrote them
    assert written.count(b"HTTP/1.1 200 OK\r\n") == 2 and written.endswith(b"X-Served-By: test\r\n\r\n")
    assert [request.method for request in server.requests] == ["GET", "GET"]
    # -D -: the head, then the document, on stdout (as curl -D - does)
    code, out, err = await cli("--dump-header", "-", server.url("/page"))
    assert (code, err) == (0, "")
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 18\r\nX-Served-By: test\r\n\r\n"
    assert out == head + TEXT


async def test_x_is_the_proxy(server: HTTPTestServer) -> None:
    origin = "http://origin.invalid:8080/notes.txt"
    code, out, err = await cli("-x", server.url("/"), origin)
    assert (code, out) == (0, TEXT), err
    assert server.requests[-1].raw.startswith(b"GET http://origin.invalid:8080/notes.txt HTTP/1.1\r\n")


async def test_curls_continue_dash_resumes(server: HTTPTestServer, tmp_path: Path) -> None:
    (tmp_path / "notes.txt.part").write_bytes(TEXT[:5])
    code, out, err = await cli("-C", "-", "-O", server.url("/notes.txt"), cwd=tmp_path)
    assert (code, out, err) == (0, b"", "")
    assert (tmp_path / "notes.txt").read_bytes() == TEXT
    assert server.requests[-1].header("range") == "bytes=5-"


# -- wget's long names ---------------------------------------------------------------------------------------


async def test_wget_long_names_mean_what_they_mean_in_wget(server: HTTPTestServer, tmp_path: Path) -> None:
    calls = flaky(server, 2)
    code, out, err = await cli("--tries", "3", "--no-verbose", server.url("/flaky"))  # 3 attempts: 2 retries
    assert (code, out, err) == (0, TEXT, "")
    assert len(calls) == 3
    calls.clear()
    code, _, err = await cli("--tries", "2", server.url("/flaky"))
    assert code == 7 and len(calls) == 2, err
    code, _, err = await cli("--tries", "0", server.url("/flaky"))
    assert code == 2 and "0 means endless tries in wget" in err
    code, out, err = await cli("--output-document", str(tmp_path / "a.txt"), "--no-check-certificate",
                               server.url("/notes.txt"))  # fmt: skip
    assert (code, out, err) == (0, b"", "")
    assert (tmp_path / "a.txt").read_bytes() == TEXT
    code, out, err = await cli("--directory-prefix", str(tmp_path / "dl"), server.url("/notes.txt"))
    assert code == 0, err
    assert (tmp_path / "dl" / "notes.txt").read_bytes() == TEXT


# -- misreadings ---------------------------------------------------------------------------------------------


MISREADINGS = [
    (["-O", "saved.txt"], "-O takes no value here, so 'saved.txt' would be read as a URL", "-o FILE"),
    (["-Osaved.txt"], "-Osaved.txt: -O takes no value here", "-o saved.txt"),
    (["-O", "-"], "-O takes no value here", "a document goes to stdout"),
    (["-O-"], "-O takes no value here", "a document goes to stdout"),
    (["-c"], "-c: not a fetch option (it looks like wget's -c (--continue))", "-C (--continue)"),
    (["-P", "dl"], "-P: not a fetch option (it looks like wget's -P DIR", "-d DIR (--directory-prefix DIR)"),
    (["-nv"], "-nv: not a fetch option", "-s (--no-verbose)"),
    (["-nc"], "-nc: not a fetch option", "--no-clobber"),
    (["-np"], "-np: not a fetch option", "--no-parent"),
    (["-t", "3"], "-t: not a fetch option (it looks like wget's -t N (--tries))", "--tries N"),
    (["-t3"], "-t3: not a fetch option", "--tries N"),
    (["-T", "10"], "-T: not a fetch option", "--timeout SECONDS"),
    (["-l", "2"], "-l: not a fetch option", "--depth N"),
    (["-U", "probe"], "-U: not a fetch option", "-A TEXT"),
    (["--quiet"], "--quiet: not a fetch option (it looks like wget's -q (--quiet))", "-s hides the progress bar"),
    (["-X", "HEAD"], "-X: not a fetch option (it looks like curl's -X METHOD", "-I for a HEAD request"),
    (["-e", "robots=off"], "-e is curl's --referer URL; 'robots=off' looks like a wget -e command", "--no-robots"),
    (["-C", "100"], "-C takes no value here, so '100' would be read as a URL", "-C alone"),
    (["-R", "*.gif"], "-R takes no value here", "-R here is curl's --remote-time"),
    (["-qO-"], "-qO-: -O takes no value here", "a document goes to stdout"),  # wget -qO- URL
    (["-qO", "saved.txt"], "-O takes no value here, so 'saved.txt' would be read as a URL", "-o FILE"),
    (["-sc"], "-sc: -c is not a fetch option (it looks like wget's -c (--continue))", "-C (--continue)"),
    (["-rl", "2"], "-rl: -l is not a fetch option (it looks like wget's -l N (--level))", "--depth N"),
    (["-C100"], "-C100: -C takes no value here (it looks like curl's -C OFFSET)", "-C alone"),
]


@pytest.mark.parametrize(("spelled", "message", "hint"), MISREADINGS, ids=[" ".join(m[0]) for m in MISREADINGS])
async def test_a_spelling_fetch_would_misread_is_refused_with_a_hint(
    server: HTTPTestServer, tmp_path: Path, spelled: list[str], message: str, hint: str
) -> None:
    code, out, err = await cli(*spelled, server.url("/notes.txt"), cwd=tmp_path)
    assert (code, out) == (2, b""), err
    first, second = err.splitlines()
    assert first.startswith("fetch: ") and message in first, err
    assert second.startswith("  hint: ") and hint in second, err
    assert server.requests == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["-m", "-H", "-d"])
async def test_a_url_given_as_the_value_of_a_wget_flag_is_refused(server: HTTPTestServer, option: str) -> None:
    code, _, err = await cli("-r", option, server.url("/notes.txt"))
    assert code == 2 and f"fetch: {option} {server.url('/notes.txt')}: the URL would be read as the value" in err
    assert server.requests == []


async def test_values_that_look_foreign_but_are_values_are_left_alone(server: HTTPTestServer, tmp_path: Path) -> None:
    code, out, err = await cli("--user-agent=-c", "-e", "http://ref.invalid/?robots=off", "-H", "X-T: -nv",
                               "-O", server.url("/notes.txt"), cwd=tmp_path)  # fmt: skip
    assert (code, out, err) == (0, b"", "")
    request = server.requests[-1]
    assert (request.header("user-agent"), request.header("referer")) == ("-c", "http://ref.invalid/?robots=off")
    assert request.header("x-t") == "-nv"
    assert (tmp_path / "notes.txt").read_bytes() == TEXT


# -- options that do not apply -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "warning"),
    [
        (["-N"], "-N (--timestamping) does not apply without -r"),
        (["-C"], "-C (--continue) does not apply: it resumes a file of -o FILE or -O, and the document goes to"),
        (["--no-clobber"], "--no-clobber does not apply: it keeps an existing file of -o FILE, -O or -d"),
        (["--layout", "tree"], "--layout does not apply: it arranges files saved under -d DIR"),
        (["--output-dir", "x"], "--output-dir does not apply: it is where -O (or a relative -o FILE) saves"),
        (["-J"], "-J (--content-disposition) does not apply: it names the file of -O or -d"),
        (["--depth", "2"], "--depth does not apply without -r"),
        (["--span-hosts"], "--span-hosts does not apply without -r"),
    ],
)
async def test_an_option_that_does_not_apply_says_so(
    server: HTTPTestServer, tmp_path: Path, given: list[str], warning: str
) -> None:
    code, out, err = await cli(*given, server.url("/notes.txt"), cwd=tmp_path)
    assert (code, out) == (0, TEXT), err
    assert err.startswith(f"fetch: warning: {warning}") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


async def test_options_that_apply_say_nothing(server: HTTPTestServer, tmp_path: Path) -> None:
    code, out, err = await cli("-C", "--no-clobber", "-J", "-O", "--output-dir", "d", server.url("/notes.txt"),
                               cwd=tmp_path)  # fmt: skip
    assert (code, out, err) == (0, b"", "")
    code, out, err = await cli("--layout", "tree", "-d", str(tmp_path / "t"), server.url("/notes.txt"))
    assert code == 0 and "warning" not in err, err


async def test_contradictory_options_are_usage_errors(server: HTTPTestServer, tmp_path: Path) -> None:
    code, _, err = await cli("-r", "-N", "--no-clobber", "-d", str(tmp_path / "m"), server.url("/"))
    assert code == 2 and err.startswith("fetch: -N (--timestamping) replaces files that changed and --no-clobber")
    code, _, err = await cli("-i", "-", "--output-dir", str(tmp_path / "o"), input=b"")
    assert code == 2 and err.startswith("fetch: --output-dir is where -O saves one URL's file"), err
    code, _, err = await cli("-D", str(tmp_path / "h"), "-d", str(tmp_path / "o"), server.url("/notes.txt"))
    assert code == 2 and err.startswith("fetch: -D (--dump-header) applies to URLs named on the command line")
    assert server.requests == [] and list(tmp_path.iterdir()) == []


# -- --output-dir --------------------------------------------------------------------------------------------


async def test_output_dir_is_created_as_the_docs_show(server: HTTPTestServer, tmp_path: Path) -> None:
    """docs/download.md: `fetch -O --output-dir downloads/ URL` in a fresh directory."""
    code, out, err = await cli("-O", "--output-dir", "downloads/", server.url("/notes.txt"), cwd=tmp_path)
    assert (code, out, err) == (0, b"", "")
    assert (tmp_path / "downloads" / "notes.txt").read_bytes() == TEXT
    code, out, err = await cli("-o", "n.txt", "--output-dir", "a/b", server.url("/notes.txt"), cwd=tmp_path)
    assert (code, out, err) == (0, b"", "")
    assert (tmp_path / "a" / "b" / "n.txt").read_bytes() == TEXT
    (tmp_path / "file").write_bytes(b"")
    code, _, err = await cli("-O", "--output-dir", "file/sub", server.url("/notes.txt"), cwd=tmp_path)
    assert code == 9 and err.startswith("fetch: --output-dir file/sub: cannot create it"), err


# -- option files that never end -----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["-K", "FETCHRC"])
def test_an_endless_option_file_is_refused(how: str) -> None:
    args, env = (["-K", "/dev/zero"], None) if how == "-K" else ([], {"FETCHRC": "/dev/zero"})
    result = run_fetch(*args, "http://127.0.0.1:1/", env=env, timeout=30)
    assert result.returncode == 2 and result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert lines[0] == "fetch: the option file /dev/zero is over 1 MiB (the cap for an option file)"
    assert lines[1].startswith("  hint: an option file holds options, one a line")


def test_an_option_file_of_too_many_lines_is_refused(tmp_path: Path) -> None:
    options = tmp_path / "rc"
    options.write_text("silent\n" * 10_001)
    result = run_fetch("-K", str(options), "http://127.0.0.1:1/")
    assert result.returncode == 2
    assert result.stderr.decode().startswith(f"fetch: the option file {options} has over 10000 lines")
    options.write_text("silent\n" * 9_999)
    result = run_fetch("-K", str(options), "http://127.0.0.1:1/")  # read: the guard then refuses port 1
    assert result.returncode == 3 and "option file" not in result.stderr.decode()


def test_units_are_binary_like_the_options() -> None:
    from fetcher.cli.units import binary, binary_rate

    assert binary(4 * 1024 * 1024) == "4.0 MiB" and binary_rate(4 << 20) == "4.0 MiB/s"
    assert (binary(1000), binary(307200), binary(3 << 30)) == ("1000 B", "300.0 KiB", "3.0 GiB")
    assert binary_rate(None) == "-- B/s"



async def test_head_in_the_library_has_no_body_whatever_content_length_says(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    """`Client(head=True)`: the document of a HEAD is empty (its Content-Length is the GET's), so saving it
    is complete at 0 bytes rather than "transfer ended at 0 of 18 bytes"."""
    from fetcher import Client

    async with Client(head=True, timeout=20) as client:
        with trio.fail_after(10):
            async with client.open(server.url("/page")) as resource:
                assert (await resource.read(), resource.size) == (b"", 0)
                assert resource.metadata["status_line"] == "HTTP/1.1 200 OK"
            saved = await client.download(server.url("/page"), tmp_path / "head")
    assert saved.bytes == 0 and (tmp_path / "head").read_bytes() == b""
    assert [request.method for request in server.requests] == ["HEAD", "HEAD"]


async def test_head_in_a_library_bulk_run_is_never_sent_down_a_pipelined_lane(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    """The lanes write plain GETs: with `head=True` every URL takes the task path, which sends HEAD."""
    from fetcher import Client

    urls = [server.url("/page"), server.url("/notes.txt"), server.url("/page?2")]
    names = iter(("a", "b", "c"))
    async with Client(head=True, timeout=20) as client:
        with trio.fail_after(20):
            async with client.fetch_all(urls, destination=lambda url: tmp_path / next(names)) as results:
                outcomes = [outcome async for outcome in results]
    assert len(outcomes) == 3
    assert sorted(request.method for request in server.requests) == ["HEAD", "HEAD", "HEAD"]


async def test_an_option_file_holds_defaults_that_do_not_warn(server: HTTPTestServer, tmp_path: Path) -> None:
    (tmp_path / "rc").write_text("no-clobber\nlayout = tree\n")
    code, out, err = await cli("-K", str(tmp_path / "rc"), server.url("/notes.txt"))
    assert (code, out, err) == (0, TEXT, "")

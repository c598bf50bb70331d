"""The `fetch` command's options: the argparse parser and its argument types.

Kept apart from fetcher/cli/main.py (which runs a parsed command) so the help
text, the man page and the completion scripts (fetcher/cli/manpage.py,
fetcher/cli/completion.py) read one definition.  Imports stay light: nothing
here loads trio or a protocol module.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn

from fetcher import __version__


def _port_list(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def _range(text: str) -> tuple[int, int]:
    first, sep, last = text.partition("-")
    if not sep or not first.isdigit() or not last.isdigit() or int(first) > int(last):
        raise argparse.ArgumentTypeError(f"{text!r} is not FIRST-LAST (e.g. 100-200)")
    return int(first), int(last)


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    scale = units.get(text[-1:].lower(), 1)
    digits = text[:-1] if scale != 1 else text
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 500K, 64M, 2G)")
    return int(digits) * scale


def _limit(text: str) -> tuple[str, int]:
    from fetcher.settings import DEFAULT_LIMITS

    name, sep, value = text.partition("=")
    name = name.strip().replace("-", "_")
    try:
        DEFAULT_LIMITS.replace(**{name: _size(value.strip()) if sep else -1})
    except (TypeError, ValueError, argparse.ArgumentTypeError) as error:
        raise argparse.ArgumentTypeError(f"{text!r}: {error} (form NAME=N, e.g. listing_entries=500000)") from None
    return name, _size(value.strip())


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of seconds")
    return value


def _whole(minimum: int, what: str) -> Callable[[str], int]:
    """An argparse type: a whole number >= `minimum` (0 or 1), refused with exit 2 otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: {what} must be {'positive' if minimum else 'zero or more'}")
        return value

    return parse


_count = _whole(1, "a count")


def _tries(text: str) -> int:
    """wget's --tries N: N attempts in all, so N-1 retries; wget's 0 (endless) has no equivalent here."""
    attempts = _whole(0, "a count")(text)
    if attempts == 0:
        raise argparse.ArgumentTypeError("0 means endless tries in wget; fetch always stops: give --retries N")
    return attempts - 1
_zero_or_more = _whole(0, "a count")


def _positive_size(text: str) -> int:
    value = _size(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive size")
    return value


def _header(text: str) -> tuple[str, str]:
    """-H 'Name: value' (CR/LF/NUL are left to the guard, which refuses them with exit 3)."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not 'NAME: VALUE'")
    return name.strip(), value.strip(" \t")


def _write_out(text: str) -> str:
    from fetcher.cli.writeout import check

    try:
        return check(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _rate(text: str) -> int:
    from fetcher.net.ratelimit import parse_rate

    try:
        return parse_rate(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _form_field(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


class _Parser(argparse.ArgumentParser):
    """argparse, with the project's error shape: `fetch: <message>` and a hint, exit 2."""

    def error(self, message: str) -> NoReturn:
        from fetcher.text import escape

        self.exit(2, f"fetch: {escape(message)}\n  hint: see fetch --help\n")


#: The examples block of `fetch --help` (and the EXAMPLES section of the man page).
EXAMPLES = """examples:
  fetch ftp://ftp.example.org/pub/README              print a file (a directory URL lists it)
  fetch -O https://example.org/big.iso                save as big.iso, with a progress bar
  fetch -C -O https://example.org/big.iso             resume big.iso.part (says so if complete)
  fetch -H 'Accept: text/plain' -A probe/1 URL        send a header and a User-Agent
  fetch -w '%{size} %{time_total}\\n' -o out URL       facts about each URL on stdout
  fetch -i urls.txt -d out/ -j 16 --manifest m.jsonl  many URLs, 16 at once, one record each
  fetch -r --depth 2 -d mirror/ ftp://host/pub/       mirror a tree
  fetch --help gopher                                 a scheme's URL form, options and an example
  fetch --print-completion bash > /etc/bash_completion.d/fetch
"""

#: The exit codes, for --help and the man page's EXIT STATUS.
EXIT_CODES = (
    (0, "ok"),
    (1, "some URLs of a bulk run failed"),
    (2, "usage error or bad URL"),
    (3, "refused by the guard (port policy, injection)"),
    (4, "cannot connect"),
    (5, "login refused"),
    (6, "not found"),
    (7, "protocol error"),
    (8, "timeout"),
    (9, "cannot write the output"),
    (130, "interrupted"),
    (141, "stdout closed by its reader (fetch URL | head)"),
)

#: The usage lines: the forms of the command, not its 90 options (they follow, grouped).
USAGE = "fetch [options] URL...\n       fetch [options] -i FILE -d DIR\n       fetch --help [SCHEME]"

DESCRIPTION = (
    "Retrieve RFC 1738 URLs: ftp, http(s), gopher(s), news, nntp(s), wais, prospero, file, telnet and mailto. "
    "A document goes to stdout (or -o FILE), a directory or menu is printed as a listing. "
    "Options that take no value are off unless given."
)


class _HelpAction(argparse.Action):
    """-h/--help [TOPIC]: this page, or a scheme's page (`fetch --help ftp`, also `--help ftp://host/`).

    The topic pages are plain text in fetcher/cli/topics.py: no protocol module is imported.
    """

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs="?", default=argparse.SUPPRESS, metavar="TOPIC", help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        if values is None:
            _print_and_exit(parser, parser.format_help())
        from fetcher.cli.topics import UnknownTopic, topic_text

        try:
            text = topic_text(str(values))
        except UnknownTopic as unknown:
            parser.error(str(unknown))
        _print_and_exit(parser, text)


def _print_and_exit(parser: argparse.ArgumentParser, text: str) -> NoReturn:
    import os
    import sys

    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # fetch --help | head: stop quietly, as for documents
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        parser.exit(141)
    parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    """The `fetch` command line.  Every option states its default in its help (tests/test_help_docs.py checks)."""
    exits = "".join(f"\n  {code:>3}  {meaning}" for code, meaning in EXIT_CODES)
    parser = _Parser(
        prog="fetch",
        usage=USAGE,
        description=textwrap.fill(DESCRIPTION, 79),
        epilog=EXAMPLES + "\nexit codes:" + exits + "\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
        # No prefixes of long options: `--retry 3` must not run as --retry-max-time 3, nor `--head URL`
        # as --header URL (issue 29).  Combined short flags (-sSLO) still work: they are not prefixes.
        allow_abbrev=False,
    )
    parser.add_argument("urls", nargs="*", metavar="URL", help="URLs to retrieve (default: none; give one or -i FILE)")
    info = parser.add_argument_group("help")
    info.add_argument("-h", "--help", action=_HelpAction,
                      help="show this help, or with TOPIC a scheme's URL form, options and example "
                      "(fetch --help ftp; fetch --help schemes lists them) and exit")  # fmt: skip
    info.add_argument("--version", action="version", version=f"fetch (fetcher) {__version__}",
                      help="print the version and exit")  # fmt: skip
    info.add_argument("--man", action="store_true",
                      help="print the manual page (roff) and exit; read it with: fetch --man | man -l -")  # fmt: skip
    info.add_argument("--print-completion", choices=("bash", "zsh", "fish"), metavar="SHELL",
                      help="print a bash, zsh or fish completion script and exit (bash, zsh: needs shtab) "
                      "(default: none)")  # fmt: skip
    files = parser.add_argument_group("option files (one option a line: 'name = value', '--name value', # comments)")
    files.add_argument("-K", "--config", action="append", metavar="FILE",
                       help="read options from FILE after ~/.fetchrc, before the command line (repeatable; "
                       "default: none)")  # fmt: skip
    files.add_argument("-q", "--no-config", action="store_true",
                       help="do not read ~/.fetchrc (or the file $FETCHRC names) "
                       "(default: read it if it exists)")  # fmt: skip
    out = parser.add_argument_group("output")
    out.add_argument("-o", "--output", "--output-document", metavar="FILE",
                     help="write the document to FILE (via FILE.part); a relative FILE goes under --output-dir "
                     "(default: stdout; '-' is stdout)")  # fmt: skip
    out.add_argument("-O", "--remote-name", action="store_true",
                     help="save under a name from the URL (replaces an existing file; see --no-clobber)")  # fmt: skip
    out.add_argument("-J", "--content-disposition", action="store_true",
                     help="-O, -d: use the file name an HTTP server suggests (Content-Disposition), made safe "
                     "(default: the URL's name)")  # fmt: skip
    out.add_argument("--output-dir", metavar="DIR",
                     help="directory for -O files and a relative -o FILE, created if missing "
                     "(default: the current directory)")  # fmt: skip
    out.add_argument("--no-clobber", action="store_true",
                     help="keep an existing output file (-o, -O, -d): say so and exit 0 "
                     "(default: replace it)")  # fmt: skip
    out.add_argument("-s", "--silent", "--no-verbose", action="store_true",
                     help="no progress bar (errors are still reported)")  # fmt: skip
    out.add_argument("-S", "--show-error", action="store_true", default=True,
                     help="report errors, also with -s (default: always; accepted for curl's -sS)")  # fmt: skip
    out.add_argument("-v", "--verbose", action="store_true", help="trace protocol lines on stderr")
    out.add_argument("--json", action="store_true",
                     help="listings, advisories and an HTML page's links as JSON lines")  # fmt: skip
    out.add_argument("--links", action="store_true",
                     help="listings and an HTML page's links as absolute URLs, one a line (for -i -)")  # fmt: skip
    out.add_argument("--raw", action="store_true", help="keep wire forms (no gzip decoding, no CRLF conversion)")
    out.add_argument("-w", "--write-out", type=_write_out, metavar="FORMAT",
                     help="print FORMAT on stdout after each URL, bulk runs and -r too, with curl's fields: "
                     "%%{http_code} %%{url_effective} %%{size_download} %%{time_total} %%{remote_ip} %%{errormsg} "
                     "%%{json} ... (docs/command.md: -w); \\n \\t (default: nothing)")  # fmt: skip
    out.add_argument("--max-size", type=_positive_size, metavar="SIZE",
                     help="stop with an error past SIZE bytes, e.g. 500K, 64M (default: no cap)")  # fmt: skip
    out.add_argument("--show-error-body", action="store_true", help="print the body of an HTTP error")
    out.add_argument("-f", "--fail", action="store_true", default=True,
                     help="an HTTP error status fails the URL with its exit code and saves nothing (default: "
                     "always; --show-error-body prints the error page)")  # fmt: skip
    http = parser.add_argument_group("HTTP requests")
    http.add_argument("-H", "--header", type=_header, action="append", default=[], metavar="'NAME: VALUE'",
                      help="add an HTTP(S) request header (repeatable; 'NAME:' removes a default one) "
                      "(default: none)")  # fmt: skip
    http.add_argument("-I", "--head", action="store_true",
                      help="HTTP(S): send HEAD and print the response head on stdout; no body is fetched")  # fmt: skip
    http.add_argument("-D", "--dump-header", metavar="FILE",
                      help="write each HTTP response head (the last of a redirect chain) to FILE, '-' for stdout "
                      "(default: none)")  # fmt: skip
    http.add_argument("-A", "--user-agent", metavar="TEXT", help="HTTP(S) User-Agent (default fetcher/VERSION)")
    http.add_argument("-e", "--referer", metavar="URL", help="HTTP(S) Referer header (default: none)")
    http.add_argument("-L", "--location", action="store_true", default=True, help="follow redirects (default)")
    http.add_argument("--no-location", dest="location", action="store_false",
                      help="do not follow redirects (default: follow them, -L)")  # fmt: skip
    http.add_argument("--max-redirs", type=_zero_or_more, default=20, metavar="N",
                      help="follow at most N redirects (default 20)")  # fmt: skip
    http.add_argument("--redirect-schemes", metavar="LIST",
                      help="schemes a redirect may lead to (default http,https,ftp)")  # fmt: skip
    http.add_argument("-x", "--proxy", metavar="URL", help="HTTP proxy (default: $http_proxy / $https_proxy)")
    net = parser.add_argument_group("time limits and retries")
    net.add_argument("--timeout", type=_positive_float, default=30.0, metavar="SECONDS",
                     help="idle time limit (default 30)")  # fmt: skip
    net.add_argument("--connect-timeout", type=_positive_float, default=15.0, metavar="SECONDS",
                     help="time limit for each connection to open (default 15)")  # fmt: skip
    net.add_argument("-m", "--max-time", type=_positive_float, metavar="SECONDS",
                     help="bound the whole retrieval of one URL (default: no bound)")  # fmt: skip
    net.add_argument("--speed-limit", type=_size, metavar="BYTES",
                     help="fail a transfer below BYTES/s for --speed-time (default off; 100 in bulk)")  # fmt: skip
    net.add_argument("--limit-rate", type=_rate, metavar="RATE",
                     help="at most RATE bytes/s in all, e.g. 100K, 1M (K=1024) (default: no limit)")  # fmt: skip
    net.add_argument("--speed-time", type=_positive_float, default=30.0, metavar="SECONDS",
                     help="window of the --speed-limit rule (default 30)")  # fmt: skip
    net.add_argument("--retries", "--retry", dest="retries", type=_zero_or_more, metavar="N",
                     help="retry transient failures N times, with backoff (default 2 in bulk, else 0)")  # fmt: skip
    net.add_argument("--tries", dest="retries", type=_tries, metavar="N",
                     help="wget's form: N attempts in all, that is --retries N-1 (default: as --retries)")  # fmt: skip
    net.add_argument("--retry-max-time", type=_positive_float, default=60.0, metavar="SECONDS",
                     help="stop retrying a URL after SECONDS (default 60)")  # fmt: skip
    safety = parser.add_argument_group("safety and TLS")
    safety.add_argument("--limit", type=_limit, action="append", default=[], metavar="NAME=N",
                        help="raise or lower a cap on what a server can send, e.g. listing_entries=500000 "
                        "(repeatable; default: the caps in docs/safety.md)")  # fmt: skip
    safety.add_argument("--allow-port", type=_port_list, action="append", default=[], metavar="PORT",
                        help="allow a port the guard refuses (repeatable; default: none)")  # fmt: skip
    safety.add_argument("--unsafe-ports", action="store_true", help="lift the port policy (not the injection guard)")
    safety.add_argument("--cacert", metavar="FILE",
                        help="trust the CA certificates in FILE (default: the system's trust store)")  # fmt: skip
    safety.add_argument("-k", "--insecure", "--no-check-certificate", action="store_true",
                        help="do not verify TLS certificates (dangerous)")  # fmt: skip
    auth = parser.add_argument_group("login")
    auth.add_argument("-u", "--user", metavar="USER[:PASSWORD]",
                      help="credentials (default: ~/.netrc, else anonymous; asks for a missing password "
                      "on a terminal)")  # fmt: skip
    auth.add_argument("--location-trusted", action="store_true",
                      help="send -u credentials to hosts redirects lead to (default: URL's origin only)")  # fmt: skip
    auth.add_argument("--netrc-file", metavar="FILE", help="credentials file (default $NETRC, else ~/.netrc)")
    auth.add_argument("--no-netrc", action="store_true", help="do not read any netrc file")
    auth.add_argument("--anon-password", metavar="EMAIL", help="anonymous FTP password (default $FETCH_EMAIL)")
    auth.add_argument("--ftp-account", metavar="ACCOUNT",
                      help="answer to an FTP 332 reply (ACCT) (default: none; the login then fails)")  # fmt: skip
    auth.add_argument("--ftp-tls", action="store_true", help="explicit FTPS (AUTH TLS) on ftp:// URLs")
    auth.add_argument("--starttls", action="store_true", help="NNTP STARTTLS when offered")
    proto = parser.add_argument_group("protocol inputs (fetch --help SCHEME says which apply)")
    proto.add_argument("-C", "--continue", dest="resume", action="store_true",
                       help="resume FILE.part of -o/-O, or FILE itself without one (HTTP, FTP, file)")  # fmt: skip
    proto.add_argument("--query", metavar="WORDS",
                       help="search words for gopher type 7 and wais databases (default: the URL's "
                       "?WORDS or %%09WORDS, else an error)")  # fmt: skip
    proto.add_argument("--form", type=_form_field, action="append", default=[], metavar="NAME=VALUE",
                       help="answer a Gopher+ ASK form field (repeatable; default: none)")  # fmt: skip
    proto.add_argument("--range", dest="article_range", type=_range, metavar="FIRST-LAST",
                       help="newsgroup listings: the articles FIRST to LAST (default: the newest 100)")  # fmt: skip
    proto.add_argument("--nntp-server", metavar="HOST[:PORT]", help="server for news: URLs (default $NNTPSERVER)")
    proto.add_argument("--max-hits", type=_count, default=40, metavar="N", help="WAIS search hits (default 40)")
    proto.add_argument("--wais-chunk", type=_count, default=10000, metavar="BYTES",
                       help="WAIS retrieval chunk (default 10000)")  # fmt: skip
    proto.add_argument("--strict", dest="gopher_strict", action="store_true", help="RFC 1436 text unstuffing")
    proto.add_argument("--resolve-only", action="store_true", help="prospero: print the resolved URL only")
    proto.add_argument("--interactive", action="store_true", help="telnet: open a real session")
    bulk = parser.add_argument_group("many URLs")
    bulk.add_argument("-i", "--input-file", metavar="FILE",
                      help="read URLs from FILE, one a line ('-' for stdin) (default: none)")  # fmt: skip
    bulk.add_argument("-d", "--directory", "--directory-prefix", metavar="DIR",
                      help="save every document under DIR (default: none; documents go to stdout one after "
                      "another, -O saves each by its name; -r, --manifest, --skip-done, --cluster need "
                      "-d)")  # fmt: skip
    bulk.add_argument("--layout", choices=("flat", "tree"), default="flat",
                      help="-d files side by side (flat) or as host/path (tree) (default flat)")  # fmt: skip
    bulk.add_argument("-j", "--jobs", type=_count, default=8, metavar="N", help="URLs at once (default 8)")
    bulk.add_argument("--per-host", type=_count, default=2, metavar="N", help="URLs at once per host (default 2)")
    bulk.add_argument(
        "--no-pipeline",
        dest="pipeline",
        action="store_false",
        help="send one HTTP request at a time on each connection (default: bulk runs pipeline plain GETs)",
    )
    bulk.add_argument("--manifest", metavar="FILE",
                      help="append one JSON record per URL to FILE; an existing FILE is added to, not replaced "
                      "(default: none)")  # fmt: skip
    bulk.add_argument("--skip-done", metavar="MANIFEST",
                      help="skip URLs this manifest records as done (default: retrieve all)")  # fmt: skip
    bulk.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                      help="progress bars on stderr (default: when stderr is a terminal; -s: off)")  # fmt: skip
    bulk.add_argument("--cluster", metavar="local[:N]|tcp://HOST:PORT",
                      help="run the bulk job on a dask cluster (pip install 'fetcher-rfc1738[cluster]') "
                      "(default: in this process)")  # fmt: skip
    mirror = parser.add_argument_group("mirroring (-r)")
    mirror.add_argument("-r", "--recursive", action="store_true", help="follow listings")
    mirror.add_argument("--depth", type=_zero_or_more, default=5, metavar="N", help="-r: link levels (default 5)")
    mirror.add_argument("--span-hosts", action="store_true", help="-r: follow links to other hosts (default: no)")
    mirror.add_argument("--follow-schemes", metavar="LIST",
                        help="schemes recursion may cross into, e.g. ftp,gopher (default: none; stay on the start "
                        "URL's scheme)")  # fmt: skip
    mirror.add_argument("-R", "--remote-time", action="store_true",
                        help="bulk runs give FTP files the server's time (MDTM, one more command a file; "
                        "default: only single fetches and -N do)")  # fmt: skip
    mirror.add_argument("-N", "--timestamping", action="store_true",
                        help="-r: transfer only files whose size or time differ from the local copy")  # fmt: skip
    mirror.add_argument("--parent", action="store_true",
                        help="-r may go above the start directory (default: never)")  # fmt: skip
    mirror.add_argument("--no-parent", dest="parent", action="store_false",
                        help="-r never goes above the start directory (default; wget's -np)")  # fmt: skip
    mirror.add_argument("--no-robots", action="store_true", help="-r over HTTP ignores robots.txt")
    mirror.add_argument("--ftp-facts", action="store_true",
                        help="FTP listings ask SIZE and MDTM of each file listed without a size or exact time "
                        "(NLST, LIST dates, links), for exact -N and --json; one round trip per file "
                        "(default: never)")  # fmt: skip
    warc = parser.add_argument_group("archiving (WARC; needs the 'warc' extra)")
    warc.add_argument("--warc-file", metavar="NAME",
                      help="also archive every retrieval in NAME.warc.gz (default: none)")  # fmt: skip
    warc.add_argument("--warc-max-size", type=_positive_size, metavar="SIZE",
                      help="start a new file past SIZE bytes: NAME-00000.warc.gz, ... (default: one file)")  # fmt: skip
    warc.add_argument("--warc-cdx", action="store_true", help="write a CDXJ index NAME.cdxj beside it")
    warc.add_argument("--warc-dedup", action="store_true", help="revisit records for payloads already archived")
    warc.add_argument("--warc-deflate", choices=("auto", "always"), default="auto", metavar="WHEN",
                      help="auto: a big record is stored uncompressed while deflating it would slow the "
                           "transfer; always: deflate it however fast it arrives (a smaller, slower archive) "
                           "(default: auto)")  # fmt: skip
    return parser

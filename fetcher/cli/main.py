"""`fetch URL...`: the command line.

Imports stay light until the arguments are parsed, so `fetch --version`
does not load trio or any protocol module.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from fetcher.cli.options import build_parser

__all__ = ["build_parser", "entry_point", "main", "settings_from_args"]

if TYPE_CHECKING:
    from fetcher.errors import FetchError


def _prompt_on_terminal(prompt: str, secret: bool) -> str | None:
    if not sys.stdin.isatty():
        return None
    if secret:
        import getpass

        return getpass.getpass(prompt)
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


def settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    user = password = None
    if args.user:
        user, sep, secret = args.user.partition(":")
        password = secret if sep else None
    settings: dict[str, Any] = {
        "timeout": args.timeout,
        "connect_timeout": args.connect_timeout,
        "max_time": args.max_time,
        "speed_limit": args.speed_limit,  # None: off for one URL, on in bulk runs
        "speed_time": args.speed_time,
        "limits": dict(args.limit),
        "location_trusted": args.location_trusted,
        "allow_ports": frozenset(args.allow_port),
        "unsafe_ports": args.unsafe_ports,
        "follow_redirects": args.location,
        "max_redirects": args.max_redirs,
        "user": user,
        "password": password,
        "use_netrc": not args.no_netrc,
        "netrc_file": args.netrc_file,
        "anon_password": args.anon_password,
        "ftp_account": args.ftp_account,
        "ftp_tls": args.ftp_tls,
        "starttls": args.starttls,
        "cacert": args.cacert,
        "insecure": args.insecure,
        "raw": args.raw,
        "max_size": args.max_size,
        "show_error_body": args.show_error_body,
        "head": args.head,
        "query": args.query,
        "form": dict(args.form),
        "article_range": args.article_range,
        "nntp_server": args.nntp_server,
        "max_hits": args.max_hits,
        "wais_chunk": args.wais_chunk,
        "gopher_strict": args.gopher_strict,
        "resolve_only": args.resolve_only,
        "listing_facts": args.json,
        "ftp_facts": args.ftp_facts,
        "remote_time": True if args.remote_time or getattr(args, "timestamping", False) else None,
        "interactive": args.interactive,
        "proxy": args.proxy,
        "jobs": args.jobs,
        "per_host": args.per_host,
        "pipeline": args.pipeline,
        "retries": 2 if args.retries is None else args.retries,
        "user_agent": args.user_agent,
        "headers": (*args.header, *((("Referer", args.referer),) if args.referer is not None else ())),
        "retry_max_time": args.retry_max_time,
        "limit_rate": args.limit_rate,
        "prompt": _prompt_on_terminal if sys.stdin.isatty() else None,
    }
    if args.redirect_schemes:
        settings["redirect_schemes"] = frozenset(s.strip().lower() for s in args.redirect_schemes.split(",") if s)
    return settings


def report(error: FetchError, url: str | None = None) -> None:
    from fetcher.text import safe_text
    from fetcher.url import redact

    url = redact(url) if url else url
    where = f" ({safe_text(url)})" if url and url not in error.message else ""
    sys.stderr.write(f"fetch: {safe_text(error.message)}{where}\n")
    if error.hint:
        sys.stderr.write(f"  hint: {safe_text(error.hint)}\n")


def _current_stderr_handler() -> Any:
    import logging

    class CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
        """Writes to whatever `sys.stderr` is at the time: while a progress bar is drawn, rich's
        proxy, which prints each line above the bar instead of through it."""

        @property  # type: ignore[override]
        def stream(self) -> Any:
            return sys.stderr

        @stream.setter
        def stream(self, value: Any) -> None:
            pass

    return CurrentStderr()


def _install_logging(verbose: bool) -> Callable[[], None]:
    """Send fetcher's log lines to stderr through `SafeFormatter`; return a function that undoes it.

    Every log line fetcher prints (the -v protocol trace, bulk retry lines,
    handler warnings) passes there, so server text in any of them is
    escaped and passwords in URLs are masked in one place.

    With -v everything from DEBUG up (the protocol trace); otherwise
    warnings only.  Undoing matters when `main` runs inside another
    program (the tests do): the loggers must not keep a handler on a
    stream that is gone.
    """
    import logging

    from fetcher.text import SafeFormatter

    handler = _current_stderr_handler()
    handler.setFormatter(SafeFormatter("%(message)s"))
    saved = []
    names = ("fetcher.trace", "fetcher") if verbose else ("fetcher",)
    for name in names:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.addHandler(handler)
        if verbose:
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
        else:
            handler.setLevel(logging.WARNING)

    def restore() -> None:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

    return restore


def is_bulk(args: argparse.Namespace) -> bool:
    return bool(args.input_file or args.directory or args.manifest or args.recursive or args.skip_done or args.cluster)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    arguments = sys.argv[1:] if argv is None else list(argv)
    from fetcher.cli.applies import Contradiction
    from fetcher.cli.config import ConfigError, config_arguments
    from fetcher.cli.habits import Misread, normalize

    try:
        arguments = normalize(parser, arguments)  # curl's `-C -`; wget's -O FILE, -c, -nv... refused
        # Intermixed: URLs may come before, between and after options, as with curl.
        args = parser.parse_intermixed_args(arguments)
        from_files = config_arguments(parser, args)
    except (ConfigError, Misread, Contradiction) as error:
        return _refused(error.message, error.hint)
    if from_files:  # the files first: the command line wins
        args = parser.parse_intermixed_args([*from_files, *arguments])
    if args.print_completion:
        return _print_completion(parser, args.print_completion)
    if args.man:
        from fetcher.cli.manpage import render

        return _print_text(render(parser))
    if not args.urls and not args.input_file:
        parser.print_usage(sys.stderr)
        sys.stderr.write("fetch: give at least one URL (or -i FILE)\n")
        return 2
    if args.netrc_file is not None and not args.no_netrc and not os.path.isfile(args.netrc_file):
        sys.stderr.write(f"fetch: --netrc-file {args.netrc_file!r}: no such file\n  hint: check the path, "
                         "or leave the option out to use $NETRC or ~/.netrc\n")  # fmt: skip
        return 2
    from fetcher.cli.applies import check, given

    try:
        for warning in check(args, given(parser, arguments), bulk=is_bulk(args)):
            _say_warning(warning)
    except Contradiction as error:
        return _refused(error.message, error.hint)
    if args.silent:
        args.progress = False
    restore = _install_logging(args.verbose)
    args.argv = ["fetch", *arguments]
    try:
        return _main(args)
    finally:
        restore()


def _refused(message: str, hint: str | None) -> int:
    """A usage error found before anything runs: `fetch: ...`, `  hint: ...`, exit 2."""
    from fetcher.text import safe_text

    sys.stderr.write(f"fetch: {safe_text(message)}\n")
    if hint:
        sys.stderr.write(f"  hint: {safe_text(hint)}\n")
    return 2


def _say_warning(text: str) -> None:
    from fetcher.text import safe_text

    sys.stderr.write(f"fetch: warning: {safe_text(text)}\n")


#: True in the `fetch` command's own process (`entry_point`), not when `main` is called in a program.
_own_process = False


def _print_completion(parser: argparse.ArgumentParser, shell: str) -> int:
    from fetcher.cli.completion import script
    from fetcher.errors import FetchError

    try:
        text = script(parser, shell)
    except FetchError as error:
        report(error)
        return error.exit_code
    return _print_text(text)


def _print_text(text: str) -> int:
    """Print generated text (completion script, man page); `| head` stops quietly."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        return _stdout_closed()
    return 0


def _main(args: argparse.Namespace) -> int:
    from fetcher.errors import FetchError, UsageError
    from fetcher.net import aio

    if _own_process and not gc.isenabled():
        # Start-up's objects stay out of the collector's way (a permanent generation), and it is back on.
        gc.freeze()
        gc.enable()

    from fetcher.cli.own_files import of_run
    from fetcher.cli.serial import prints_documents
    from fetcher.disk.reserved import reserving

    try:
        with reserving(of_run(args)), _archive(args):
            if is_bulk(args) and not prints_documents(args):
                from fetcher.cli.bulk import run_bulk

                if _own_process:
                    from fetcher.cli.descriptors import fit_jobs

                    args.jobs, args.per_host = fit_jobs(args.jobs, args.per_host)

                return aio.run(run_bulk, args, settings_from_args(args))
            if args.output and len(args.urls) > 1:
                raise UsageError("-o names one file; give one URL, or use -d DIR for many")
            return aio.run(_run_urls, args)
    except KeyboardInterrupt:
        sys.stderr.write("fetch: interrupted\n")
        return 130
    except BrokenPipeError:
        return _stdout_closed()
    except FetchError as error:
        report(error)
        return error.exit_code
    except BaseExceptionGroup as group:
        # A failure inside a nursery arrives wrapped; the user should still
        # see the one error and its exit code (anything else is a bug: re-raise).
        interrupts, rest = group.split(KeyboardInterrupt)
        if interrupts is not None:
            sys.stderr.write("fetch: interrupted\n")
            return 130
        if rest is not None and rest.split(BrokenPipeError)[0] is not None:
            return _stdout_closed()
        errors, other = (rest or group).split(FetchError)
        if other is None and errors is not None:
            first = _first_leaf(errors)
            if isinstance(first, FetchError):
                report(first)
                return first.exit_code
        raise


@contextmanager
def _archive(args: argparse.Namespace) -> Iterator[None]:
    """With --warc-file, record every retrieval of the run (warcio is imported only then)."""
    from fetcher.errors import UsageError

    if args.warc_file is None:
        if args.warc_max_size is not None or args.warc_cdx or args.warc_dedup or args.warc_deflate != "auto":
            raise UsageError("--warc-max-size, --warc-cdx, --warc-dedup and --warc-deflate need --warc-file NAME")
        yield
        return
    if getattr(args, "cluster", None):
        if args.warc_deflate != "auto":
            raise UsageError("--warc-deflate always with --cluster is not implemented (the workers deflate as 'auto')")
        yield  # each cluster worker archives what it retrieves (fetcher.cluster.archive)
        return
    try:
        from fetcher.archive.recorder import WarcRecorder
    except ImportError:
        raise UsageError(
            "--warc-file needs the warcio library", hint="pip install 'fetcher-rfc1738[warc]' (or: pip install warcio)"
        ) from None
    from fetcher.archive.tap import recording

    try:
        recorder = WarcRecorder(args.warc_file, max_size=args.warc_max_size, cdx=args.warc_cdx,
                                dedup=args.warc_dedup, command_line=args.argv,
                                always_deflate=args.warc_deflate == "always")  # fmt: skip
        recorder.guard_termination()
    except OSError as error:
        from fetcher.errors import OutputError

        raise OutputError(f"cannot write the WARC file {args.warc_file!r}: {error.strerror or error}") from None
    try:
        with recording(recorder):
            yield
    finally:
        recorder.close()


#: Exit code when the reader of stdout went away (`fetch URL | head`): 128 + SIGPIPE, as a shell reports it.
STDOUT_CLOSED = 141


def _stdout_closed() -> int:
    """The reader of stdout went away (`| head`): stop quietly, as curl and cat do.

    stdout is pointed at /dev/null so the interpreter's final flush does
    not raise (and print) a second BrokenPipeError on the way out.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return STDOUT_CLOSED


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf


async def _run_urls(args: argparse.Namespace) -> int:
    import time

    from fetcher.cli.inputs import BadLine
    from fetcher.cli.serial import InputURLs
    from fetcher.cli.single import Done, run_one
    from fetcher.client import Client
    from fetcher.errors import FetchError, UsageError

    failures = 0
    last_code = 0
    urls = InputURLs(args)  # the command line's, then -i FILE's (without -d: to stdout, one after another)
    async with Client(**settings_from_args(args)) as client:
        if args.write_out is not None:
            from fetcher.cli.writeout import needs_peers

            client.peers = {} if needs_peers(args.write_out) else None
        async for text in urls:
            started, done, code = time.monotonic(), Done(), 0
            failure: FetchError | None = None
            try:
                if isinstance(text, BadLine):  # an unclosed wrapper, an over-long line (fetcher.cli.inputs)
                    raise UsageError(text.problem)
                done = await run_one(client, text, args)
            except FetchError as error:
                if args.show_error_body and error.body:
                    _print_error_body(error.body)
                report(error, text)
                failures += 1
                last_code = code = error.exit_code
                failure = error
            if args.write_out is not None:
                from fetcher.cli.writeout import facts, render

                found = facts(text, result=done.resource, error=failure, seconds=time.monotonic() - started,
                              size=done.size, filename=done.path, exit_code=code, peers=client.peers)  # fmt: skip
                sys.stdout.write(render(args.write_out, found))
                sys.stdout.flush()
    if failures == 0:
        return 0
    return last_code if urls.count == 1 else 1


def _print_error_body(body: bytes) -> None:
    """The server's error page goes to stdout like a document (escaped on a terminal)."""
    from fetcher.text import TerminalText

    out = sys.stdout.buffer
    out.write(TerminalText().feed(body, final=True).encode("utf-8", "replace") if sys.stdout.isatty() else body)
    out.flush()


def entry_point() -> None:
    global _own_process
    # The `fetch` command's process.  Start-up imports build ~100k objects and
    # almost no garbage, which the cyclic collector would walk again and again
    # (5-6 ms of a one-URL fetch here): it is off until the run starts (`_main`).
    _own_process = True
    gc.disable()
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    status = main()
    if "distributed" in sys.modules and "fetcher.cluster" in sys.modules:
        from fetcher.cluster import exit_now

        exit_now(status)  # a --cluster run: dask's teardown skipped
    # The run is over and closed what it opened: what is left is modules and their
    # data, which the interpreter's exit would walk once more in a last garbage
    # collection (11-12 ms on this machine, a tenth of a one-URL fetch).  Frozen,
    # they are left to the OS; the standard streams are still flushed at exit.
    gc.freeze()
    sys.exit(status)

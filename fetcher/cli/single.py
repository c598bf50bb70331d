"""One URL named on the command line (not a bulk run): where its document goes.

- stdout (no -o/-O, or `-o -`): raw bytes to a pipe or file; escaped text on
  a terminal, where binary data is refused unless `-o -` asked for it;
- a file (-o FILE, -O): written through FILE.part; `--no-clobber` keeps an
  existing file; `-C` continues FILE.part, or FILE itself when there is no
  FILE.part (says so and downloads nothing when it is complete), and says
  on stderr when it has to start over (fetcher/disk/resume.py);
- a progress bar on stderr when it is a terminal and the document is not
  being written to that same terminal (`--progress`/`-s` force it);
- transient failures retried with `Client.with_retries` (`--retries`),
  never once bytes have gone to stdout.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fetcher.client import Client
    from fetcher.resource import Resource

#: Content types that are never text, whatever their first bytes look like.
BINARY_TYPES = frozenset({
    "application/zip", "application/gzip", "application/x-gzip", "application/pdf", "application/x-tar",
    "application/x-bzip2", "application/x-xz", "application/zstd", "application/x-7z-compressed",
    "application/wasm", "application/x-executable", "application/vnd.debian.binary-package",
})  # fmt: skip
BINARY_MAJORS = ("image/", "audio/", "video/", "font/")

BINARY_HINT = "binary output can mess up your terminal; use -o FILE or -o - to force"


@dataclass
class Done:
    """What one URL produced (for -w/--write-out)."""

    size: int = 0
    #: The resource retrieved (closed by now: its url, content_type and metadata), if one was opened.
    resource: Resource | None = None
    #: The file written, if any.
    path: str | None = None


def is_binary(content_type: str | None, first: bytes) -> bool:
    """Binary: a NUL byte in the first chunk, or a content type that is never text."""
    if b"\x00" in first:
        return True
    kind = (content_type or "").partition(";")[0].strip().lower()
    return kind in BINARY_TYPES or kind.startswith(BINARY_MAJORS)


def progress_wanted(args: argparse.Namespace, to_terminal: bool) -> bool:
    """--progress / --no-progress / -s decide; by default only when stderr is a terminal
    and the document is not being drawn on that terminal (stdout)."""
    if getattr(args, "silent", False):
        return False
    if args.progress is not None:
        return bool(args.progress)
    return sys.stderr.isatty() and not to_terminal


def _say(text: str) -> None:
    from fetcher.text import safe_text

    sys.stderr.write(f"fetch: {safe_text(text)}\n")


async def run_one(client: Client, text: str, args: argparse.Namespace) -> Done:
    from fetcher.cli import render
    from fetcher.disk.reserved import refuse_reserved
    from fetcher.url import parse_url

    url = parse_url(text)
    target: Path | None = None
    if args.output and args.output != "-":
        target = Path(args.output_dir or ".") / args.output  # an absolute -o FILE stays itself
    elif args.remote_name:
        target = Path(args.output_dir or ".") / render.remote_name(url)
        refuse_reserved(target, "the name from the URL")
    if target is not None and args.output:
        target = through_links(target)
    if target is not None and args.output_dir:
        make_output_dir(args.output_dir)
    if target is not None and args.no_clobber and os.path.lexists(target):
        _say(f"{target} exists; kept it (--no-clobber)")
        return Done()
    done = Done()
    # A stream (stdout, a FIFO, /dev/stdout onto a file) cannot take bytes back: no retry once some went out.
    streamed = target is None or (bool(args.output) and _in_place(target))
    retries = 0 if args.retries is None else args.retries

    async def attempt(number: int) -> Done:
        return await _attempt(client, url, args, target, resume=args.resume or number > 1, done=done)

    return await client.with_retries(url, attempt, retries, retryable=lambda _: not (streamed and done.size))


def _in_place(target: Path) -> bool:
    """The user's -o names something written where it is (a special file, a descriptor through /proc)."""
    from fetcher.disk.names import inspect_target

    return descriptor_link(target) or inspect_target(target) == "special"


async def _attempt(
    client: Client, url: Any, args: argparse.Namespace, target: Path | None, *, resume: bool, done: Done
) -> Done:
    from fetcher.cli import render
    from fetcher.disk.names import partial_path, partial_size
    from fetcher.disk.reserved import refuse_reserved
    from fetcher.disk.resume import recorded, restart_note
    from fetcher.disk.save import save

    offset = partial_size(target) if target is not None and resume else 0
    validators = recorded(partial_path(target)) if target is not None and offset else None
    # -C on FILE with no FILE.part (left by wget, curl, a copy): FILE itself is continued, as `curl -C -` does.
    adopted = (_complete_size(target) or 0) if target is not None and args.resume and offset == 0 else 0
    async with client.open(url, offset=offset or adopted, validators=validators) as resource:
        done.resource = resource
        if getattr(args, "head", False) or getattr(args, "dump_header", None) is not None:
            from fetcher.cli.heads import received

            received(resource, args)  # -I, -D
            if args.head:
                return done
        if resource.kind != "document":
            print_resource_meta(resource, args, target)
            done.path = str(target) if target is not None else None
            return done
        if args.links or args.json:  # an HTML page's links, as a listing's (render.links_listing)
            option = "--links" if args.links else "--json"
            listing = await render.links_listing(resource, max_links=client.settings.limits.frontier, option=option)
            done.size = resource.bytes_read
            print_resource_meta(listing, args, target)
            done.path = str(target) if target is not None else None
            return done
        if adopted and (kept := _nothing_to_add(resource, adopted)) is not None:
            _say(f"{target} {kept}")
            return done
        note = restart_note(resource, offset or adopted)
        if note is not None:  # bytes already on disk are fetched again: never without a word
            _say(f"{target}: {note}" if target is not None else note)
        if target is None:
            await _stream_to_stdout(resource, args, done)
            return done
        named = server_name(resource, args)
        if args.remote_name and not args.output and named and not (offset or adopted):
            suggested = Path(args.output_dir or ".") / render.remote_name(resource.url, named)
            refuse_reserved(suggested, "the name its server chose")
            if suggested != target and args.no_clobber and os.path.lexists(suggested):
                _say(f"{suggested} exists; kept it (--no-clobber)")
                return done
            target = suggested
        if adopted and resource.offset:
            _adopt(target)
        bar = _bar(args, resource, target.name, resource.offset, to_terminal=False)

        def advance(count: int) -> None:
            done.size += count  # what went out (counted again as written below)
            bar.advance(count)

        # -o names the user's own file: a special one (/dev/null, a FIFO) is written in place.
        with bar:
            download = await save(resource, target, resumed=(offset or adopted) > 0, digest=False,
                                  in_place_ok=bool(args.output),
                                  in_place_always=bool(args.output) and descriptor_link(target),
                                  on_chunk=advance)  # fmt: skip
        done.size = download.bytes
        done.path = str(download.path)
        return done


def through_links(path: Path) -> Path:
    """The file `-o PATH` means: a symlink the user typed is followed to its target, as curl and wget do.

    The name is resolved once, here, and the document is then written as
    `TARGET.part` beside the target and renamed onto it: the link stays a
    link, the target gets the bytes, and the rename keeps its atomicity.  A
    dangling link creates the file it names.  A link to a directory and a
    loop of links are refused with their own message.  (Names a server or a
    URL chooses are never followed: see `fetcher.disk.place`.)
    """
    from fetcher.errors import OutputError

    if not os.path.islink(path) or descriptor_link(path):
        return path
    try:
        resolved = Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        resolved = Path(os.path.realpath(path))  # dangling: the file it names is created
    except OSError as error:  # ELOOP: the links go round
        raise OutputError(f"cannot write {path}: {error.strerror or error} (a loop of symlinks)",
                          hint="fix the symlink, or choose another name with -o") from None  # fmt: skip
    if resolved.is_dir():
        raise OutputError(f"{path} is a symlink to the directory {resolved}",
                          hint="give -o a file name, or save into it with -O --output-dir DIR")  # fmt: skip
    return resolved


def descriptor_link(path: Path) -> bool:
    """True when `path` reaches an open descriptor through /proc (`/dev/stdout`, `/dev/fd/3`, `/proc/self/fd/1`).

    Such a name is not a place to rename a file onto (it would replace
    `/dev/stdout` itself): it is written where it is, like a special file,
    even when the descriptor is a regular file (`fetch -o /dev/stdout URL > file`).
    """
    hop = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links followed
        if os.path.realpath(os.path.dirname(hop)).startswith("/proc/"):
            return True
        try:
            link = os.readlink(hop)
        except OSError:
            return False  # not a link (any more)
        hop = os.path.normpath(os.path.join(os.path.dirname(hop), link))
    return False


def make_output_dir(directory: str) -> None:
    """--output-dir is created when missing, as -d is (curl would need --create-dirs)."""
    from fetcher.errors import OutputError

    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise OutputError(f"--output-dir {directory}: cannot create it: {error.strerror or error}",
                          hint="choose a directory you can write to") from None  # fmt: skip


def server_name(resource: Resource, args: argparse.Namespace) -> str | None:
    """The name a retrieval suggests for -O: an HTTP server's Content-Disposition only with
    --content-disposition (as curl -J and wget do); other schemes' handlers name documents themselves
    (an FTP file's name, a news article's number)."""
    if resource.url.scheme in ("http", "https") and not getattr(args, "content_disposition", False):
        return None
    return resource.filename


def _nothing_to_add(resource: Resource, size: int) -> str | None:
    """What -C says of the user's FILE of `size` bytes when the server has no more bytes for it, else None.

    Complete when the server has exactly that many (a 416, or a whole document of that size);
    longer than the server's document: kept as it is (curl and wget do not touch it either).
    """
    if resource.size == size and resource.offset in (0, size):
        return f"is already complete ({size} bytes); nothing to do"
    if not resource.offset and resource.size is not None and resource.size < size:
        return f"is longer than the document on the server ({size} > {resource.size} bytes); kept it, nothing to do"
    return None


def _adopt(target: Path) -> None:
    """The user's partial FILE becomes FILE.part, which the rest is appended to and renamed back when complete."""
    from fetcher.disk.names import partial_path
    from fetcher.disk.resume import forget
    from fetcher.errors import OutputError

    part = partial_path(target)
    forget(part)  # validators of some earlier .part describe another document
    logging.getLogger("fetcher.trace").debug("* no %s: continuing %s itself", part.name, target.name)
    try:
        os.rename(target, part)
    except OSError as error:
        raise OutputError(f"cannot continue {target}: {error.strerror}", hint="remove it and run again") from None


def _complete_size(target: Path) -> int | None:
    """Size of an existing regular file -C continues when there is no FILE.part beside it."""
    try:
        info = os.lstat(target)
    except OSError:
        return None
    import stat

    return info.st_size if stat.S_ISREG(info.st_mode) else None


class NoBar:
    """No bar for this transfer (stderr not a terminal, -s, --no-progress)."""

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def advance(self, count: int) -> None:
        pass


def _bar(args: argparse.Namespace, resource: Resource, label: str, offset: int, *, to_terminal: bool) -> Any:
    if not progress_wanted(args, to_terminal):
        return NoBar()
    from fetcher.cli.progress_single import TransferBar

    total = resource.size + offset if resource.size is not None and offset else resource.size
    return TransferBar(label, total, offset)


async def _stream_to_stdout(resource: Resource, args: argparse.Namespace, done: Done) -> None:
    """Raw bytes to a pipe or file; escaped text on a terminal.

    Binary data is refused on a terminal unless `-o -` asks for it (and even
    then it is escaped: no escape sequence from a server reaches the terminal).

    On a terminal, a UTF-8 character or CRLF cut between two reads is put
    back together first (`TerminalText`), so it shows as itself.
    """
    from fetcher.errors import UsageError
    from fetcher.text import TerminalText

    out = sys.stdout.buffer
    on_terminal = sys.stdout.isatty()
    forced = args.output == "-"
    terminal = TerminalText() if on_terminal else None
    label = resource.url.path.rpartition("/")[2] if hasattr(resource.url, "path") else ""
    with _bar(args, resource, label or str(resource.url.scheme), 0, to_terminal=on_terminal) as bar:
        async for chunk in resource:
            if terminal is not None and not done.size and not forced and is_binary(resource.content_type, chunk):
                raise UsageError("not writing binary data to the terminal", hint=BINARY_HINT)
            if terminal is not None:
                out.write(terminal.feed(chunk).encode("utf-8", "replace"))
            else:
                out.write(chunk)
            done.size += len(chunk)
            bar.advance(len(chunk))
        if terminal is not None:
            out.write(terminal.close().encode("utf-8", "replace"))
        out.flush()


def print_resource_meta(resource: Resource, args: argparse.Namespace, target: Any = None) -> None:
    """A listing or advisory: to stdout as a table, --json or --links; to a file with -o/-O."""
    from fetcher.cli import render

    if resource.kind == "listing" and target is None:
        # Line by line: a listing at its entry cap never also exists as one text (peak RSS, issue 14).
        form = "json" if args.json else "links" if args.links else "table"
        for line in render.listing_lines(resource.entries, form, url=resource.url):
            sys.stdout.write(line)
        sys.stdout.flush()
        return
    if resource.kind == "listing":
        if args.json:
            text = render.listing_json(resource.entries)
        elif args.links:
            text = render.listing_links(resource.entries)
        else:
            text = render.listing_table(resource.entries, resource.url)
    else:
        assert resource.advisory is not None
        text = render.advisory_json(resource.advisory) if args.json else render.advisory_text(resource.advisory)
    if target is not None:
        from fetcher.disk.names import inspect_target, output_error
        from fetcher.disk.writer import write_file

        data = text.encode("utf-8", "surrogateescape")
        descriptor = bool(args.output) and descriptor_link(target)
        if descriptor or (args.output and inspect_target(target) == "special"):  # -o /dev/null, a FIFO: in place
            try:
                with open(target, "ab" if descriptor else "wb") as sink:
                    sink.write(data)
            except OSError as error:
                raise output_error(error, target) from None
            return
        write_file(target, data, user_named=bool(args.output))  # via NAME.part, never through a symlink planted there
        return
    sys.stdout.write(text)
    sys.stdout.flush()

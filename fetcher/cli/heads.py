"""`-I/--head` and `-D/--dump-header FILE`: an HTTP response head as curl prints it.

The head is rebuilt from what the handler kept of the final response (its
status line and its fields, names in the server's own case), so a
redirect chain shows its last head.  `-D FILE` is emptied by the first
head of the run and added to by the next ones (one per URL, in order, as
curl writes them); `-D -` and `-I` write to stdout.  On a terminal the
server's text is escaped; in a file or a pipe it is written as received.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fetcher.resource import Resource


def head_bytes(resource: Resource) -> bytes | None:
    """The response head of an HTTP retrieval (status line, fields, blank line); None for other schemes."""
    metadata = resource.metadata or {}
    headers = metadata.get("headers")
    status = metadata.get("status")
    if resource.url.scheme not in ("http", "https") or headers is None or status is None:
        return None
    line = metadata.get("status_line") or f"HTTP/1.1 {status}"
    lines = [line, *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def _to_stdout(data: bytes) -> None:
    out = sys.stdout.buffer
    if sys.stdout.isatty():
        from fetcher.text import safe_text

        text = "\n".join(safe_text(line) for line in data.decode("latin-1").split("\r\n"))
        out.write(text.encode("utf-8", "replace"))
    else:
        out.write(data)
    out.flush()


def received(resource: Resource, args: argparse.Namespace) -> None:
    """Show the head of `resource` where -I and -D ask (nothing when neither was given)."""
    if not args.head and args.dump_header is None:
        return
    data = head_bytes(resource)
    if data is None:
        from fetcher.errors import UsageError

        if args.head:
            raise UsageError(f"-I (--head): {resource.url} is not an HTTP URL (a redirect led there); "
                             "it has no response head", hint="fetch it without -I")  # fmt: skip
        from fetcher.text import safe_text

        sys.stderr.write(f"fetch: -D: {safe_text(str(resource.url))} is not an HTTP URL; it has no response "
                         "head to write\n")  # fmt: skip
        return
    if args.head:
        _to_stdout(data)
    if args.dump_header == "-":
        if not args.head:  # -I -D - would print the head twice
            _to_stdout(data)
    elif args.dump_header is not None:
        _dump(args, data)


def _dump(args: argparse.Namespace, data: bytes) -> None:
    """The first head of the run empties FILE; the next ones are added, one per URL."""
    from fetcher.errors import OutputError

    first = not getattr(args, "dump_header_started", False)
    try:
        with open(args.dump_header, "wb" if first else "ab") as sink:
            sink.write(data)
    except OSError as error:
        raise OutputError(f"-D {args.dump_header}: cannot write the response head: "
                          f"{error.strerror or error}") from None  # fmt: skip
    args.dump_header_started = True

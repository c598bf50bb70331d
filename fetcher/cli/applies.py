"""Options that do not apply to the run they were given to: said, never silently ignored.

`fetch -N URL` (no -r), `fetch -C URL` (to stdout), `--no-clobber` with
nothing to clobber, `--layout tree` without -d: each used to run as if the
option were not there.  A user who gave an option meant something by it,
so each such option gets one line on stderr saying why it changes
nothing here, and a combination that cannot mean anything (-I with -o,
-N with --no-clobber) is a usage error (exit 2) before anything runs.

Only options spelled on the command line count: a default never warns,
and neither does ~/.fetchrc, which holds the user's defaults for every run
(`no-clobber` there must not warn on each `fetch URL`).  Standard library
only; this runs before trio.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable

#: Options that only steer a recursive retrieval (-r): (dest, how the user spells it).
MIRROR_ONLY = (
    ("depth", "--depth"),
    ("span_hosts", "--span-hosts"),
    ("parent", "--parent"),
    ("no_robots", "--no-robots"),
    ("follow_schemes", "--follow-schemes"),
)


class Contradiction(Exception):
    """Two options that cannot both hold, or an option that cannot apply to these URLs (exit 2)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def given(parser: argparse.ArgumentParser, tokens: Iterable[str]) -> set[str]:
    """The `dest` of every option spelled in `tokens` (values are skipped; `--` ends the options)."""
    actions = parser._option_string_actions
    found: set[str] = set()
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token == "--":
            break
        if not token.startswith("-") or token == "-":
            continue
        if token.startswith("--"):
            name, eq, _ = token.partition("=")
            action = actions.get(name)
            if action is not None:
                found.add(action.dest)
                skip = not eq and action.nargs not in (0, "?")
            continue
        for index in range(1, len(token)):
            action = actions.get("-" + token[index])
            if action is None:
                break
            found.add(action.dest)
            if action.nargs != 0:
                skip = index == len(token) - 1 and action.nargs != "?"
                break
    # --no-parent is written by hand as the default it is; only --parent itself is a mirror option.
    if "parent" in found and not any(token == "--parent" for token in tokens):
        found.discard("parent")
    return found


def _scheme(text: str) -> str | None:
    match = re.match(r"\s*(?:URL:)?<?([A-Za-z][A-Za-z0-9+.-]*):", text)
    return match[1].lower() if match else None


def check(args: argparse.Namespace, spelled: set[str], *, bulk: bool) -> list[str]:
    """Warnings (one line each) for options that change nothing here; Contradiction for impossible ones."""
    to_file = bool(args.remote_name or (args.output and args.output != "-"))
    _contradictions(args, spelled, bulk=bulk, to_file=to_file)
    warnings: list[str] = []
    if "timestamping" in spelled and not args.recursive:
        warnings.append("-N (--timestamping) does not apply without -r: it compares the files of a mirror; "
                        "every URL is transferred")  # fmt: skip
    if not bulk:
        if "resume" in spelled and not to_file:
            warnings.append("-C (--continue) does not apply: it resumes a file of -o FILE or -O, and the "
                            "document goes to stdout")  # fmt: skip
        if "no_clobber" in spelled and not to_file:
            warnings.append("--no-clobber does not apply: it keeps an existing file of -o FILE, -O or -d, and "
                            "the document goes to stdout")  # fmt: skip
        if "layout" in spelled:
            warnings.append("--layout does not apply: it arranges files saved under -d DIR, and this run saves "
                            "none there")  # fmt: skip
        if "output_dir" in spelled and not (args.remote_name or (args.output and args.output != "-")):
            warnings.append("--output-dir does not apply: it is where -O (or a relative -o FILE) saves, and "
                            "the document goes to stdout")  # fmt: skip
        if "content_disposition" in spelled and not args.remote_name:
            warnings.append("-J (--content-disposition) does not apply: it names the file of -O or -d")
    elif "no_clobber" in spelled and args.recursive:
        warnings.append("--no-clobber does not apply to -r: a mirror replaces the files that changed "
                        "(-N transfers only those)")  # fmt: skip
    if not args.recursive:
        for dest, spelling in MIRROR_ONLY:
            if dest in spelled:
                warnings.append(f"{spelling} does not apply without -r: it steers a recursive retrieval")
    return warnings


def _contradictions(args: argparse.Namespace, spelled: set[str], *, bulk: bool, to_file: bool) -> None:
    if args.head:
        if bulk:
            raise Contradiction("-I (--head) applies to URLs named on the command line, not to a bulk run "
                                "(-i, -d, -r, --manifest)", "give the URLs on the command line")  # fmt: skip
        if to_file or args.resume:
            raise Contradiction("-I (--head) prints the response head on stdout and fetches no body: "
                                "-o, -O and -C have nothing to save",
                                "to save the head along with the document, use -D FILE instead of -I")  # fmt: skip
        for url in args.urls:
            scheme = _scheme(url)
            if scheme is not None and scheme not in ("http", "https"):
                raise Contradiction(f"-I (--head) asks an HTTP server for a response head, and {url} "
                                    f"is not http: or https:", "leave -I out for other schemes (fetch --help "
                                    f"{scheme} says what they show)")  # fmt: skip
    if args.dump_header is not None and bulk:
        raise Contradiction("-D (--dump-header) applies to URLs named on the command line, not to a bulk run "
                            "(-i, -d, -r, --manifest)", "a --manifest FILE records each status")  # fmt: skip
    if "timestamping" in spelled and args.no_clobber:
        raise Contradiction("-N (--timestamping) replaces files that changed and --no-clobber keeps every "
                            "existing file: give one of them", "-N with -r updates a mirror")  # fmt: skip
    if "output_dir" in spelled and bulk:
        raise Contradiction("--output-dir is where -O saves one URL's file; a bulk run (-i, -d, -r, "
                            "--manifest) saves under -d DIR", "use -d DIR")  # fmt: skip

"""fetch(1): the manual page, generated from the parser (fetcher/cli/options.py) and the scheme pages.

`fetch --man` prints it, and setup.py writes it to share/man/man1/fetch.1
of the wheel at build time, so the installed page is always the parser of
that version (no generated file is kept in the repository to go stale).
Written here rather than with argparse-manpage so that the page also
carries the URL SCHEMES, EXIT STATUS and ENVIRONMENT sections, and so the
build needs nothing but the standard library.  `python -m fetcher.cli.manpage`
prints it too.
"""

from __future__ import annotations

import argparse
import datetime
import os

from fetcher import __version__
from fetcher.cli.habits import DEFAULTS_ACCEPTED, EQUIVALENTS, MISREAD
from fetcher.cli.options import DESCRIPTION, EXAMPLES, EXIT_CODES, build_parser
from fetcher.cli.topics import COMMON, TOPICS, example_lines

ENVIRONMENT = (
    ("FETCHRC", "the option file read before the command line instead of ~/.fetchrc (-q: none)"),
    ("NETRC", "the credentials file read when no -u is given (default ~/.netrc)"),
    ("FETCH_EMAIL", "the anonymous FTP password (--anon-password)"),
    ("NNTPSERVER", "the news server for news: URLs (--nntp-server)"),
    ("http_proxy, https_proxy, no_proxy", "the HTTP proxy (--proxy) and the hosts reached without it"),
)


FILES = (
    ("~/.fetchrc", "options read before the command line, one a line ('name = value', '--name value', "
     "# comments; at most 1 MiB), unless -q or $FETCHRC names another file; -K FILE adds more"),
    ("~/.netrc", "credentials (machine, login, password), unless --no-netrc"),
)

#: The foreign spellings fetch refuses with a hint (MISREAD, and wget's -O FILE), for the man page and docs.
REFUSED = ("-O FILE", *sorted(MISREAD))


def section_title(title: str) -> str:
    """A group title as a heading: upper case outside the parentheses, which name options as typed.

    `mirroring (-r)` must not become `MIRRORING (-R)`: -R is another option.
    """
    head, paren, rest = title.partition(" (")
    return head.upper() + (paren + rest if paren else "")


def equivalence_rows() -> list[tuple[str, str, str]]:
    """The rows of the curl/wget table: a heading row, then (fetch, curl, wget) as habits.py has them."""
    return [("fetch", "curl", "wget"), *EQUIVALENTS]


def roff(text: str) -> str:
    """Text as roff prints it: backslashes and hyphens escaped, no line read as a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in text.split("\n"))


def _option_head(action: argparse.Action) -> str:
    if action.nargs == 0:
        forms = [f"\\fB{roff(option)}\\fR" for option in action.option_strings]
    else:
        metavar = action.metavar or action.dest.upper()
        if isinstance(metavar, tuple):
            metavar = " ".join(metavar)
        if action.nargs == "?":
            metavar = f"[{metavar}]"
        forms = [f"\\fB{roff(option)}\\fR \\fI{roff(str(metavar))}\\fR" for option in action.option_strings]
    return ", ".join(forms)


def _help(action: argparse.Action) -> str:
    text = (action.help or "").replace("%%", "%")
    if action.choices:
        text += f" (one of: {', '.join(str(choice) for choice in action.choices)})"
    return roff(" ".join(text.split()))


def _date() -> str:
    # SOURCE_DATE_EPOCH keeps a rebuilt wheel byte-identical (reproducible builds).
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.UTC) if epoch else datetime.datetime.now(datetime.UTC)
    return when.strftime("%Y-%m-%d")


def render(parser: argparse.ArgumentParser | None = None) -> str:
    parser = parser or build_parser()
    out = [
        f'.TH FETCH 1 "{_date()}" "fetcher {__version__}" "User Commands"',
        ".SH NAME",
        "fetch \\- retrieve RFC 1738 URLs (ftp, http, gopher, news, nntp, wais, prospero, file, telnet, mailto)",
        ".SH SYNOPSIS",
        ".B fetch",
        "[\\fIoptions\\fR] \\fIURL\\fR...",
        ".br",
        ".B fetch",
        "[\\fIoptions\\fR] \\fB\\-i\\fR \\fIFILE\\fR \\fB\\-d\\fR \\fIDIR\\fR",
        ".br",
        ".B fetch \\-\\-help",
        "[\\fISCHEME\\fR]",
        ".SH DESCRIPTION",
        roff(DESCRIPTION),
    ]
    for group in parser._action_groups:
        actions = [action for action in group._group_actions if action.option_strings]
        if not actions:
            continue
        out.append(f".SS {roff(section_title(str(group.title)))}")
        for action in actions:
            out += [".TP", _option_head(action), _help(action)]
    out.append(".SH URL SCHEMES")
    out.append(f"Options for every scheme: {roff(' '.join(COMMON))}.")
    for topic in TOPICS:
        out += [f".SS {roff(', '.join(topic.schemes))}: {roff(topic.title)}", ".nf"]
        out += [roff(form) for form in topic.forms]
        out += [".fi", ".PP", roff(topic.does), ".PP", f"Options: {roff(' '.join(topic.options))}.", ".PP", ".nf"]
        out += [roff(line) for line in example_lines(topic.examples)]
        out.append(".fi")
    out += _equivalence_section()
    out += [".SH EXAMPLES", ".nf"]
    out += [roff(line) for line in EXAMPLES.splitlines()[1:]]
    out += [".fi", ".SH EXIT STATUS"]
    for code, meaning in EXIT_CODES:
        out += [".TP", f"\\fB{code}\\fR", roff(meaning)]
    out.append(".SH ENVIRONMENT")
    for name, meaning in ENVIRONMENT:
        out += [".TP", f"\\fB{roff(name)}\\fR", roff(meaning)]
    out.append(".SH FILES")
    for name, meaning in FILES:
        out += [".TP", f"\\fI{roff(name)}\\fR", roff(meaning)]
    out += [
        ".SH SEE ALSO",
        "\\fBcurl\\fR(1), \\fBwget\\fR(1), \\fBftp\\fR(1), \\fBtelnet\\fR(1); RFC 1738 (Uniform Resource Locators).",
        "Shell completion: \\fBfetch \\-\\-print\\-completion bash|zsh|fish\\fR.",
    ]
    return "\n".join(out) + "\n"


def _equivalence_section() -> list[str]:
    """CURL AND WGET: one table of the same meaning under the three tools' spellings."""
    rows = equivalence_rows()
    widths = [max(len(row[column]) for row in rows) + 2 for column in range(2)]
    out = [
        ".SH CURL AND WGET",
        "Short options follow curl; wget's options are taken by their long names where they mean the same "
        "(\\-\\-tries, \\-\\-directory\\-prefix, \\-\\-no\\-verbose, \\-\\-output\\-document, "
        "\\-\\-no\\-check\\-certificate, \\-\\-no\\-parent).",
        "The same meaning in each tool (\\- where a tool has none):",
        ".PP",
        ".nf",
    ]
    for fetch, curl, wget in rows:
        out.append(roff(f"{fetch:<{widths[0]}}{curl:<{widths[1]}}{wget}".rstrip()))
    refused = (f"Refused before anything runs, with a hint naming fetch's option, because fetch would read "
               f"them differently: {', '.join(REFUSED)}; also a URL given to -m, -H or -d, and a wget command "
               "(robots=off) given to -e.")  # fmt: skip
    out += [".fi", ".PP", roff(f"Accepted as the defaults they are here: {', '.join(DEFAULTS_ACCEPTED)}."),
            ".PP", roff(refused)]  # fmt: skip
    return out


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())

"""`fetch --help SCHEME`: each scheme's URL form, what fetcher does with it, its options and an example.

The pages are the registry's (fetcher/registry/pages.py for the built-in
schemes, a plug-in handler's `topic` hook): this module only renders them
and knows no scheme.  They are plain data, so help costs no protocol import
(the handlers are loaded by fetcher.registry when a URL is retrieved).  The
man page (fetcher/cli/manpage.py) prints the same pages in its URL SCHEMES
section.
"""

from __future__ import annotations

import re
import textwrap

from fetcher import registry
from fetcher.handler.topic import Topic

#: The built-in schemes' pages, in the order the overview and the man page show them.
TOPICS: tuple[Topic, ...] = registry.topics()


class UnknownTopic(ValueError):
    pass


#: The options every scheme shares (output, time limits, safety), named once in the pages.
COMMON = ("-o", "-O", "-v", "--json", "--timeout", "-m", "--limit")


def _wrap(text: str, indent: str = "  ") -> str:
    # Never break inside an option name (--ftp-facts) or a URL at its hyphens.
    return textwrap.fill(text, width=78, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)


def example_lines(examples: tuple[str, ...]) -> list[str]:
    """Examples as `command   what it does`, the descriptions aligned in one column."""
    pairs = [[*re.split(r"\s{2,}", example, maxsplit=1), ""][:2] for example in examples]
    width = max(len(command) for command, _ in pairs)
    return [f"{command:<{width}}  {note}".rstrip() if note else command for command, note in pairs]


def render(topic: Topic) -> str:
    lines = [f"fetch --help {topic.schemes[0]}: {topic.title}", "", "URL form:"]
    lines += [f"  {form}" for form in topic.forms]
    lines += ["", "What fetch does:", _wrap(topic.does), "", "Options for these URLs (fetch --help has them all):"]
    lines.append(_wrap(" ".join(topic.options)))
    lines.append(_wrap("and for every scheme: " + " ".join(COMMON)))
    lines += ["", "Examples:"] + [f"  {line}" for line in example_lines(topic.examples)]
    return "\n".join(lines) + "\n"


def overview() -> str:
    lines = ["fetch --help SCHEME shows a scheme's URL form, options and examples:", ""]
    for topic in TOPICS:
        lines.append(f"  {', '.join(topic.schemes):<16} {topic.title}")
    lines += ["", "A URL works too: fetch --help ftp://host/pub/ shows the ftp page."]
    return "\n".join(lines) + "\n"


def topic_text(name: str) -> str:
    """The page for a scheme name, a URL (its scheme) or 'schemes'; raise UnknownTopic otherwise."""
    wanted = name.strip().lower()
    if ":" in wanted:
        wanted = wanted.split(":", 1)[0]
    if wanted in ("schemes", "topics"):
        return overview()
    topic = registry.topic(wanted)
    if topic is None:
        known = ", ".join(scheme for topic in TOPICS for scheme in topic.schemes)
        raise UnknownTopic(f"no help topic {name!r}: topics are {known} and schemes")
    return render(topic)

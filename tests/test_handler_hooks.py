"""The handler hooks (fetcher.handler.BaseHandler): what the core asks a scheme, and the defaults it falls back on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fetcher import registry
from fetcher.cli.render import listing_table, remote_name, tree_parts
from fetcher.cli.topics import topic_text
from fetcher.handler import BaseHandler, Entry, Resource, Session, Topic
from fetcher.mirror.scope import place
from fetcher.url import URL, GenericURL, parse_url

PAGE = Topic(("x-demo",), "A demonstration scheme", ("x-demo://<host>/<path>",), "Nothing at all.", ("-o",),
             ("fetch x-demo://h/a   nothing",))  # fmt: skip


class Demo(BaseHandler):
    """A plug-in that overrides every hook it can."""

    scheme = "x-demo"
    topic = PAGE

    async def open(self, url: URL, session: Session) -> Resource:
        raise NotImplementedError

    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        return "demo-" + (super().local_name(url, index=index) or "none")

    def tree_segments(self, url: URL) -> list[str]:
        return ["below", *(url.path or "").split("/")] if isinstance(url, GenericURL) else []

    def host_directory(self, url: URL, host: str) -> str:
        return "demo@" + host

    def tree_path(self, url: URL) -> tuple[str, bool] | None:
        return (url.path or "/", False) if isinstance(url, GenericURL) else None

    def listing_view(self, entries: list[Entry]) -> Iterator[str] | None:
        return iter([f"* {entry.name}\n" for entry in entries])


class Bare:
    """A plug-in that does not derive from BaseHandler (as tests/plugin_scheme.py): the defaults apply."""

    scheme = "x-bare"
    default_port = None


@pytest.fixture
def plugins() -> Iterator[None]:
    registry.register("x-demo", "tests.test_handler_hooks:Demo")
    registry.register("x-bare", "tests.test_handler_hooks:Bare")
    yield
    for scheme in ("x-demo", "x-bare"):
        registry.unregister(scheme)


@pytest.mark.usefixtures("plugins")
def test_a_plugins_hooks_name_its_files_and_place_its_urls() -> None:
    url = parse_url("x-demo://host.test/pub/file.txt")
    assert remote_name(url) == "demo-file.txt"
    assert tree_parts(url) == ["demo@host.test", "below", "pub", "file.txt"]
    assert place(url) == (("x-demo", "host.test", None), "/pub/file.txt")
    table = listing_table([Entry("one"), Entry("two")], url)
    assert table == "* one\n* two\n"
    assert topic_text("x-demo").startswith("fetch --help x-demo: A demonstration scheme\n")


@pytest.mark.usefixtures("plugins")
@pytest.mark.parametrize("scheme", ["x-bare", "x-unknown"])
def test_without_hooks_the_core_does_what_it_did_for_a_scheme_it_knows_nothing_of(scheme: str) -> None:
    url = parse_url(f"{scheme}://host.test:8000/pub/file.txt")
    assert remote_name(url) == "file.txt"
    assert remote_name(parse_url(f"{scheme}://host.test/pub/"), index=False) == "pub"
    assert tree_parts(url) == [f"{scheme}_host.test_8000", "index"]
    assert place(url) is None
    assert listing_table([Entry("one", size=3)], url) == "file  3  one\n"
    with pytest.raises(ValueError, match="no help topic"):
        topic_text(scheme)


def test_the_built_in_schemes_answer_through_their_hooks() -> None:
    assert registry.hooks("http").keeps_dialogue is False
    assert registry.hooks("ftp").keeps_dialogue is True
    assert tree_parts(parse_url("https://h.test/a/b%20c")) == ["h.test", "a", "b c"]
    assert tree_parts(parse_url("ftps://h.test/a/b")) == ["ftps_h.test", "a", "b"]
    assert remote_name(parse_url("nntp://h.test/comp.lang/7")) == "comp.lang.7"
    assert place(parse_url("gopher://h.test/1/a/../b")) == (("gopher", "h.test", 70), "/b")


def test_what_a_mirror_does_not_follow_is_each_schemes_own_answer() -> None:
    """-r's refusals per scheme come from the hooks: Gopher's interactive items, WAIS searches, devices anywhere."""
    follow: frozenset[str] = frozenset()
    gopher, wais, ftp = registry.hooks("gopher"), registry.hooks("wais"), registry.hooks("ftp")
    assert "needs words" in (gopher.not_mirrored(Entry("find", type="search"), follow) or "")
    assert "interactive session" in (gopher.not_mirrored(Entry("bbs", type="telnet"), follow) or "")
    assert gopher.not_mirrored(Entry("a.txt", type="text"), follow) is None
    # The default refuses what no scheme can save; another scheme's item types mean nothing to FTP.
    assert "FIFO" in (ftp.not_mirrored(Entry("pipe", type="other"), follow) or "")
    assert ftp.not_mirrored(Entry("find", type="search"), follow) is None
    database = parse_url("wais://127.0.0.1/db")
    assert "needs words" in (wais.not_mirrored_url(database) or "")
    assert wais.not_mirrored_url(parse_url("wais://127.0.0.1/db?apples")) is None
    assert registry.hooks("x-unknown").not_mirrored_url(database) is None

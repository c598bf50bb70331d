"""Link extraction from HTML pages (fetcher/mirror/links.py), the pure part of `-r` over HTTP."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fetcher.errors import LimitExceeded
from fetcher.mirror.links import LinkParser, extract_links


def test_links_of_every_structural_element_in_document_order() -> None:
    page = """<!doctype html><html><head>
    <link rel="stylesheet" href="style.css"><link rel="preconnect" href="https://cdn.example/">
    <script src="/js/app.js"></script></head>
    <body><a href="sub/page.html">page</a> <a href="#top">top</a>
    <img src="pics/a.png" srcset="pics/a-2x.png 2x, pics/a-3x.png 3x">
    <iframe src="frame.html"></iframe><area href="map.html">
    <video src="v.mp4" poster="poster.jpg"></video>
    <a href="javascript:void(0)">js</a><a href="mailto:x@example.org">mail</a>
    <a href="sub/page.html">again</a></body></html>"""
    links, base = extract_links(page)
    assert base is None
    assert links == [
        "style.css",
        "/js/app.js",
        "sub/page.html",
        "pics/a.png",
        "pics/a-2x.png",
        "pics/a-3x.png",
        "frame.html",
        "map.html",
        "v.mp4",
        "poster.jpg",
    ]


def test_first_base_href_counts_and_entities_are_decoded() -> None:
    page = '<base href="http://h/dir/"><base href="http://other/"><a href="a?x=1&amp;y=2">x</a>'
    links, base = extract_links(page)
    assert base == "http://h/dir/"
    assert links == ["a?x=1&y=2"]


def test_meta_refresh_target_and_whitespace_inside_urls() -> None:
    page = '<meta http-equiv="Refresh" content="5; URL=\'next.html\'"><a href=" sp\nlit.html ">x</a>'
    links, _ = extract_links(page)
    assert links == ["next.html", "split.html"]


def test_fed_in_pieces_gives_the_same_links() -> None:
    page = '<a href="one.html">1</a><img src="two.png"><a href="three.html">3</a>'
    parser = LinkParser()
    for cut in range(0, len(page), 7):
        parser.feed(page[cut : cut + 7])
    parser.close()
    assert parser.links == extract_links(page)[0]


def test_a_page_of_too_many_links_stops_at_the_cap() -> None:
    page = "".join(f'<a href="p{i}.html">x</a>' for i in range(50))
    with pytest.raises(LimitExceeded) as caught:
        extract_links(page, max_links=10)
    assert "--limit frontier=" in (caught.value.hint or "")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('<>/="\' abhrefsrcimg&#;:\n.x')), max_size=300))
def test_any_text_gives_links_or_the_cap_error(text: str) -> None:
    try:
        links, base = extract_links(text, max_links=5)
    except LimitExceeded:
        return
    assert len(links) <= 5 and len(set(links)) == len(links)
    assert all(link and link == link.strip() for link in links)
    assert base is None or isinstance(base, str)

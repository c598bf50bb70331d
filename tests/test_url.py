"""The RFC 1738 parser: every example of the RFC, every error rule, joins.

Each valid case states the exact decomposition; each error case states the
part the URLError names and, where the error sits at one place, its position
in the text as given (wrappers included).
"""

from __future__ import annotations

import pytest

from fetcher.errors import URLError
from fetcher.url import (
    DEFAULT_PORTS,
    URL,
    FileURL,
    FtpURL,
    GenericURL,
    GopherURL,
    HttpURL,
    MailtoURL,
    NewsURL,
    NntpURL,
    ProsperoURL,
    TelnetURL,
    WaisURL,
    join,
    parse_url,
    redact,
    to_bytes,
    unwrap,
)
from fetcher.url.careful import parse_careful
from tests.conftest import run_fetch

# -- expected values, spelled out -------------------------------------------


def ftp(
    host: str,
    cwd: tuple[str, ...] = (),
    name: str = "",
    *,
    user: str | None = None,
    password: str | None = None,
    port: int = 21,
    typecode: str | None = None,
    scheme: str = "ftp",
    fragment: str | None = None,
) -> FtpURL:
    return FtpURL(
        scheme=scheme,
        user=user,
        password=password,
        host=host,
        port=port,
        cwd=cwd,
        name=name,
        typecode=typecode,
        fragment=fragment,
    )


def http(
    host: str,
    path: str = "",
    search: str | None = None,
    *,
    user: str | None = None,
    password: str | None = None,
    port: int = 80,
    scheme: str = "http",
    fragment: str | None = None,
) -> HttpURL:
    return HttpURL(
        scheme=scheme, user=user, password=password, host=host, port=port, path=path, search=search, fragment=fragment
    )


def gopher(
    host: str,
    gtype: str = "1",
    selector: str = "",
    search: str | None = None,
    plus: str | None = None,
    *,
    port: int = 70,
    scheme: str = "gopher",
    fragment: str | None = None,
) -> GopherURL:
    return GopherURL(
        scheme=scheme,
        host=host,
        port=port,
        gtype=gtype,
        selector=selector,
        search=search,
        plus=plus,
        fragment=fragment,
    )


def news(
    group: str | None = None,
    message_id: str | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    scheme: str = "news",
    fragment: str | None = None,
) -> NewsURL:
    return NewsURL(scheme=scheme, host=host, port=port, group=group, message_id=message_id, fragment=fragment)


def nntp(host: str, group: str, article: int | None = None, *, port: int = 119, scheme: str = "nntp") -> NntpURL:
    return NntpURL(scheme=scheme, host=host, port=port, group=group, article=article, fragment=None)


def telnet(host: str, *, user: str | None = None, password: str | None = None, port: int = 23) -> TelnetURL:
    return TelnetURL(scheme="telnet", user=user, password=password, host=host, port=port, fragment=None)


def wais(
    host: str,
    database: str,
    search: str | None = None,
    wtype: str | None = None,
    wpath: str | None = None,
    *,
    port: int = 210,
) -> WaisURL:
    return WaisURL(
        scheme="wais", host=host, port=port, database=database, search=search, wtype=wtype, wpath=wpath, fragment=None
    )


def file(host: str, path: str, *, fragment: str | None = None) -> FileURL:
    return FileURL(scheme="file", host=host, path=path, fragment=fragment)


def prospero(host: str, hsoname: str, fields: dict[str, str] | None = None, *, port: int = 1525) -> ProsperoURL:
    return ProsperoURL(scheme="prospero", host=host, port=port, hsoname=hsoname, fields=fields or {}, fragment=None)


def mailto(address: str, *, fragment: str | None = None) -> MailtoURL:
    return MailtoURL(scheme="mailto", address=address, fragment=fragment)


def generic(scheme: str, schemepart: str, **fields: object) -> GenericURL:
    values: dict[str, object] = {"user": None, "password": None, "host": None, "port": None, "path": None}
    values.update(fields)
    return GenericURL(scheme=scheme, schemepart=schemepart, fragment=None, **values)


# -- every example URL of RFC 1738 ------------------------------------------

RFC_EXAMPLES: list[tuple[str, URL]] = [
    # §3.1: empty versus absent user name and password
    ("ftp://@host.com/", ftp("host.com", user="")),
    ("ftp://host.com/", ftp("host.com")),
    ("ftp://foo:@host.com/", ftp("host.com", user="foo", password="")),
    # §3.2.2: the three motd URLs ("CWD /etc", "CWD etc", "CWD " then "CWD etc")
    ("ftp://myname@host.dom/%2Fetc/motd", ftp("host.dom", ("/etc",), "motd", user="myname")),
    ("ftp://myname@host.dom/etc/motd", ftp("host.dom", ("etc",), "motd", user="myname")),
    ("ftp://myname@host.dom//etc/motd", ftp("host.dom", ("", "etc"), "motd", user="myname")),
    # §3.4.7 and §3.4.8: Gopher+ attribute and alternate-view strings
    ("gopher://host.dom/0file%09%09!+ABSTRACT", gopher("host.dom", "0", "file", "", "!+ABSTRACT")),
    ("gopher://host.dom/0file%09%09!+ABSTRACT%20+SMELL", gopher("host.dom", "0", "file", "", "!+ABSTRACT +SMELL")),
    (
        "gopher://host.dom/0paper%09%09+application/postscript%20Es_ES",
        gopher("host.dom", "0", "paper", "", "+application/postscript Es_ES"),
    ),
    # §3.4.9: the ASK-form gopher+ string, with two answers
    (
        "gopher://host.dom/1form%09%09+%091%0D%0A+-1%0D%0Ared%0D%0Ablue%0D%0A.%0D%0A",
        gopher("host.dom", "1", "form", "", "+\t1\r\n+-1\r\nred\r\nblue\r\n.\r\n"),
    ),
    # §3.6
    ("news:*", news(group="*")),
    ("news:comp.infosystems.www.misc", news(group="comp.infosystems.www.misc")),
    # §3.10
    (
        "<URL:file://vms.host.edu/disk$user/my/notes/note12345.txt>",
        file("vms.host.edu", "disk$user/my/notes/note12345.txt"),
    ),
    # §3.11: the "/" after the host is not part of the hsoname
    ("<URL:prospero://host.dom//pros/name>", prospero("host.dom", "/pros/name")),
    # Appendix: URLs broken across lines inside <URL:...>
    ("<URL:ftp://info.cern.ch/pub/www/doc;\n      type=d>", ftp("info.cern.ch", ("pub", "www"), "doc", typecode="d")),
    ("<URL:ftp://ds.in\n      ternic.net/rfc>", ftp("ds.internic.net", (), "rfc")),
    (
        "<URL:http://ds.internic.\n      net/instructions/overview.html#WARNING>",
        http("ds.internic.net", "instructions/overview.html", fragment="WARNING"),
    ),
    # The references
    (
        "<URL:ftp://ds.internic.net/rfc/rfc1436.txt;type=a>",
        ftp("ds.internic.net", ("rfc",), "rfc1436.txt", typecode="a"),
    ),
    (
        "<URL:ftp://boombox.micro.umn.edu/pub/gopher/gopher_protocol\n       /Gopher+/Gopher+.txt>",
        ftp("boombox.micro.umn.edu", ("pub", "gopher", "gopher_protocol", "Gopher+"), "Gopher+.txt"),
    ),
    ("<URL:ftp://ds.internic.net/rfc/rfc1630.txt>", ftp("ds.internic.net", ("rfc",), "rfc1630.txt")),
    (
        "<URL:ftp://info.cern.ch/pub/www/doc/http-spec.txt.Z>",
        ftp("info.cern.ch", ("pub", "www", "doc"), "http-spec.txt.Z"),
    ),
    ("<URL:ftp://ds.internic.net/rfc/rfc1123.txt>", ftp("ds.internic.net", ("rfc",), "rfc1123.txt")),
    ("<URL:ftp://ds.internic.net/rfc/rfc822.txt>", ftp("ds.internic.net", ("rfc",), "rfc822.txt")),
    (
        "<URL:ftp://quake.think.com/pub/wais/doc/protspec.txt>",
        ftp("quake.think.com", ("pub", "wais", "doc"), "protspec.txt"),
    ),
    ("<URL:ftp://ds.internic.net/rfc/rfc1036.txt>", ftp("ds.internic.net", ("rfc",), "rfc1036.txt")),
    (
        "<URL:ftp://quake.think.com/pub/wais/doc/doc-ids.txt>",
        ftp("quake.think.com", ("pub", "wais", "doc"), "doc-ids.txt"),
    ),
    ("<URL:ftp://ds.internic.net/rfc/rfc977.txt>", ftp("ds.internic.net", ("rfc",), "rfc977.txt")),
    (
        "<URL:ftp://ds.internic.net/internet-drafts\n       /draft-ietf-uri-irl-fun-req-02.txt>",
        ftp("ds.internic.net", ("internet-drafts",), "draft-ietf-uri-irl-fun-req-02.txt"),
    ),
    ("<URL:ftp://ds.internic.net/rfc/rfc1034.txt>", ftp("ds.internic.net", ("rfc",), "rfc1034.txt")),
    (
        "<URL:ftp://prospero.isi.edu/pub/prospero/doc\n       /prospero-protocol.PS.Z>",
        ftp("prospero.isi.edu", ("pub", "prospero", "doc"), "prospero-protocol.PS.Z"),
    ),
    ("<URL:ftp://ds.internic.net/rfc/rfc959.txt>", ftp("ds.internic.net", ("rfc",), "rfc959.txt")),
    ("<URL:ftp://ds.internic.net/rfc/rfc1737.txt>", ftp("ds.internic.net", ("rfc",), "rfc1737.txt")),
    ("<URL:ftp://ds.internic.net/rfc/rfc1625.txt>", ftp("ds.internic.net", ("rfc",), "rfc1625.txt")),
    ("<URL:ftp://uu.psi.com/wp/nir.txt>", ftp("uu.psi.com", ("wp",), "nir.txt")),
]

# -- more valid URLs, scheme by scheme --------------------------------------

VALID: list[tuple[str, URL]] = [
    # wrappers and prefixes
    ("URL:ftp://host.com/a", ftp("host.com", (), "a")),
    ("url:ftp://host.com/a", ftp("host.com", (), "a")),
    ("<ftp://host.com/a>", ftp("host.com", (), "a")),
    ("  <URL: ftp://host.com/a >  ", ftp("host.com", (), "a")),
    ("\tftp://host.com/a\n", ftp("host.com", (), "a")),
    ("<URL:ftp://host.com/long-\n   name>", ftp("host.com", (), "long-name")),
    ("<URL:ftp://host.com/long -\r\n\t  name>", ftp("host.com", (), "long-name")),
    # case-insensitive schemes; hosts lower-cased
    ("FTP://Host.COM/Dir/File", ftp("host.com", ("Dir",), "File")),
    ("Http://EXAMPLE.org/A", http("example.org", "A")),
    ("GOPHER://h.org/", gopher("h.org")),
    ("NeWs:comp.misc", news(group="comp.misc")),
    # FTP
    ("ftp://host.com", ftp("host.com")),
    ("ftp://host.com/a/b/c.txt", ftp("host.com", ("a", "b"), "c.txt")),
    ("ftp://host.com/a/b/", ftp("host.com", ("a", "b"), "")),
    ("ftp://host.com/a%2Fb", ftp("host.com", (), "a/b")),
    ("ftp://host.com/dir%3Bx/a%3Bb", ftp("host.com", ("dir;x",), "a;b")),
    ("ftp://host.com/a%2fb%3bc;type=i", ftp("host.com", (), "a/b;c", typecode="i")),
    ("ftp://host.com/pub;type=d", ftp("host.com", (), "pub", typecode="d")),
    ("ftp://host.com/pub;type=D", ftp("host.com", (), "pub", typecode="d")),
    ("ftp://host.com/f;type=A", ftp("host.com", (), "f", typecode="a")),
    ("ftp://host.com/f;type=I", ftp("host.com", (), "f", typecode="i")),
    ("ftp://host.com/f;TYPE=a", ftp("host.com", (), "f", typecode="a")),
    ("ftp://host.com/;type=d", ftp("host.com", (), "", typecode="d")),
    ("ftp://u%40x:p%3Aw%2F@host.com/", ftp("host.com", user="u@x", password="p:w/")),
    ("ftp://user:pa;ss?&=@host.com/", ftp("host.com", user="user", password="pa;ss?&=")),
    ("ftp://host.com:2121/x", ftp("host.com", (), "x", port=2121)),
    ("ftp://host.com:21/x", ftp("host.com", (), "x")),
    ("ftp://host.com:00021/", ftp("host.com")),
    ("ftp://host.com:0/", ftp("host.com", port=0)),
    ("ftp://host.com:65535/", ftp("host.com", port=65535)),
    ("ftp://192.0.2.1/a", ftp("192.0.2.1", (), "a")),
    ("ftp://0.0.0.0/", ftp("0.0.0.0")),
    ("ftp://255.255.255.255/", ftp("255.255.255.255")),
    ("ftp://1.2.3.4.example/", ftp("1.2.3.4.example")),
    ("ftp://[::1]/a", ftp("::1", (), "a")),
    ("ftp://[2001:DB8:0:0::1]:8021/a", ftp("2001:db8::1", (), "a", port=8021)),
    ("ftp://a-b--c.x-y/", ftp("a-b--c.x-y")),
    ("ftp://3com.com/", ftp("3com.com")),
    ("ftp://localhost/", ftp("localhost")),
    ("ftp://h.com/%E2%82%AC", ftp("h.com", (), "\u20ac")),
    ("ftp://h.com/%FF%00", ftp("h.com", (), "\udcff\x00")),
    ("ftp://h.com/~user/x", ftp("h.com", ("~user",), "x")),
    ("ftp://h.com/a#frag", ftp("h.com", (), "a", fragment="frag")),
    ("ftp://h.com/a#", ftp("h.com", (), "a", fragment="")),
    ("ftps://h.com/a", ftp("h.com", (), "a", scheme="ftps", port=990)),
    # HTTP (path and search stay encoded)
    ("http://h.com", http("h.com")),
    ("http://h.com/", http("h.com")),
    ("http://h.com/a/b%20c;p?q=1&r=%2F", http("h.com", "a/b%20c;p", "q=1&r=%2F")),
    ("http://h.com?x", http("h.com", "", "x")),
    ("http://h.com/?", http("h.com", "", "")),
    ("http://h.com:8080/x", http("h.com", "x", port=8080)),
    ("https://h.com/x", http("h.com", "x", scheme="https", port=443)),
    ("http://user:secret@h.com/x", http("h.com", "x", user="user", password="secret")),
    ("http://us%3Aer:p%40ss@h.com/", http("h.com", user="us:er", password="p@ss")),
    ("http://user@h.com/", http("h.com", user="user")),
    ("http://h.com/a?b?c/d", http("h.com", "a", "b?c/d")),
    ("http://h.com/a#s/./x", http("h.com", "a", fragment="s/./x")),
    # Gopher
    ("gopher://h.org", gopher("h.org")),
    ("gopher://h.org/1", gopher("h.org")),
    ("gopher://h.org/11/pub", gopher("h.org", "1", "1/pub")),
    ("gopher://h.org/0/about.txt", gopher("h.org", "0", "/about.txt")),
    ("gopher://h.org/7/search%09gopher%20urls", gopher("h.org", "7", "/search", "gopher urls")),
    ("gopher://h.org/7/s%09", gopher("h.org", "7", "/s", "")),
    ("gopher://h.org/1/d%09%09+", gopher("h.org", "1", "/d", "", "+")),
    ("gopher://h.org/1/d%09%09?", gopher("h.org", "1", "/d", "", "?")),
    ("gopher://h.org/1/d%09%09$", gopher("h.org", "1", "/d", "", "$")),
    ("gopher://h.org/1/d%09q%09!", gopher("h.org", "1", "/d", "q", "!")),
    ("gopher://h.org/1/a%09b%09c%09d", gopher("h.org", "1", "/a", "b", "c\td")),
    ("gopher://h.org:7070/9/f?x;y=z", gopher("h.org", "9", "/f?x;y=z", port=7070)),
    ("gopher://h.org/%31sel", gopher("h.org", "1", "sel")),
    ("gopher://h.org/%23x", gopher("h.org", "#", "x")),
    ("gophers://h.org/0x", gopher("h.org", "0", "x", scheme="gophers")),
    # News and NNTP
    ("news:comp.lang.c++", news(group="comp.lang.c++")),
    ("news:alt.a_b-c.d", news(group="alt.a_b-c.d")),
    ("news:1234.5678@host.dom", news(message_id="1234.5678@host.dom")),
    ("news:%3Cid@host%3E", news(message_id="id@host")),
    ("news:a/b?c=d@h.example", news(message_id="a/b?c=d@h.example")),
    ("news:x%20y@h", news(message_id="x y@h")),
    ("news://news.h.org/comp.misc", news(group="comp.misc", host="news.h.org", port=119)),
    ("news://news.h.org:1119/x@y", news(message_id="x@y", host="news.h.org", port=1119)),
    ("snews:comp.misc", news(group="comp.misc", scheme="snews")),
    ("nntp://news.h.org/comp.misc", nntp("news.h.org", "comp.misc")),
    ("nntp://news.h.org/comp.misc/12345", nntp("news.h.org", "comp.misc", 12345)),
    ("nntp://news.h.org/comp.misc/0042", nntp("news.h.org", "comp.misc", 42)),
    ("nntp://news.h.org/comp.misc/", nntp("news.h.org", "comp.misc")),
    ("nntp://news.h.org:1119/a.b/1", nntp("news.h.org", "a.b", 1, port=1119)),
    ("nntps://news.h.org/a.b/9223372036854775807", nntp("news.h.org", "a.b", 2**63 - 1, scheme="nntps", port=563)),
    # Telnet (§3.8)
    ("telnet://h.org", telnet("h.org")),
    ("telnet://h.org/", telnet("h.org")),
    ("telnet://guest:pw@h.org:2323/", telnet("h.org", user="guest", password="pw", port=2323)),
    ("telnet://guest@h.org", telnet("h.org", user="guest")),
    ("telnet://%20x:%41@h.org/", telnet("h.org", user=" x", password="A")),
    # WAIS (§3.9): database, search, document
    ("wais://w.org/db", wais("w.org", "db")),
    ("wais://w.org:8210/db", wais("w.org", "db", port=8210)),
    ("wais://w.org/db?gopher+url%2Bsyntax", wais("w.org", "db", "gopher url+syntax")),
    ("wais://w.org/db?", wais("w.org", "db", "")),
    ("wais://w.org/db/TEXT/0%2012%20/src/db", wais("w.org", "db", None, "TEXT", "0%2012%20/src/db")),
    ("wais://w.org/d%20b/TEXT/", wais("w.org", "d b", None, "TEXT", "")),
    # File (§3.10)
    ("file:///etc/motd", file("", "etc/motd")),
    ("file://localhost/etc/motd", file("localhost", "etc/motd")),
    ("file://LOCALHOST/a%20b", file("localhost", "a b")),
    ("file:/tmp/x", file("", "tmp/x")),
    ("file:///", file("", "")),
    ("file:///dir/", file("", "dir/")),
    ("file:///a;b?c", file("", "a;b?c")),
    # Prospero (§3.11)
    ("prospero://p.org/pros/name", prospero("p.org", "pros/name")),
    ("prospero://p.org:1526//a/b%3Bc", prospero("p.org", "/a/b;c", port=1526)),
    (
        "prospero://p.org//a;OBJECT-VERSION=3;x%3Dy=%3Bv",
        prospero("p.org", "/a", {"OBJECT-VERSION": "3", "x=y": ";v"}),
    ),
    ("prospero://p.org//a;f=", prospero("p.org", "/a", {"f": ""})),
    ("prospero://p.org", prospero("p.org", "")),
    # Mailto (§3.5): the address decoded
    ("mailto:user@host.dom", mailto("user@host.dom")),
    ("mailto:a%25b@host.dom", mailto("a%b@host.dom")),
    ("mailto:%22a%20b%22@host.dom", mailto('"a b"@host.dom')),
    ("MAILTO:x@y#f", mailto("x@y", fragment="f")),
    # Unknown schemes parse as generic URLs, kept as written
    ("x-unknown:foo", generic("x-unknown", "foo")),
    (
        "x-test://u:p@h.org:99/a/b",
        generic("x-test", "//u:p@h.org:99/a/b", user="u", password="p", host="h.org", port=99, path="/a/b"),
    ),
    ("z39.50s://h.org", generic("z39.50s", "//h.org", host="h.org")),
    ("afs:/usr/x", generic("afs", "/usr/x")),
]

ALL_VALID = RFC_EXAMPLES + VALID


@pytest.mark.parametrize(("text", "expected"), ALL_VALID, ids=[repr(text) for text, _ in ALL_VALID])
def test_decomposition(text: str, expected: URL) -> None:
    url = parse_url(text)
    assert type(url) is type(expected)
    assert url == expected
    assert repr(url) == repr(expected)


@pytest.mark.parametrize(("text", "expected"), ALL_VALID, ids=[repr(text) for text, _ in ALL_VALID])
def test_canonical_text_round_trips(text: str, expected: URL) -> None:
    url = parse_url(text)
    assert parse_url(str(url)) == url
    assert str(parse_url(str(url))) == str(url)


@pytest.mark.parametrize(("text", "expected"), ALL_VALID, ids=[repr(text) for text, _ in ALL_VALID])
def test_fast_and_careful_routes_agree(text: str, expected: URL) -> None:
    assert parse_careful(text) == parse_url(text)
    assert parse_careful(str(expected)) == parse_url(str(expected)) == expected


CANONICAL = [
    ("ftp://@host.com/", "ftp://@host.com/"),
    ("ftp://foo:@host.com/", "ftp://foo:@host.com/"),
    ("ftp://host.com", "ftp://host.com/"),
    ("FTP://Host.COM:21/a%2fb;TYPE=I", "ftp://host.com/a%2Fb;type=i"),
    ("ftp://h.com/a%3Bb/%7Ex/%41", "ftp://h.com/a%3Bb/~x/A"),
    ("http://h.com?x", "http://h.com/?x"),
    ("http://us%3Aer:p%40ss@h.com:80/", "http://us%3Aer:p%40ss@h.com/"),
    ("gopher://h.org", "gopher://h.org/1"),
    ("gopher://h.org/%23x", "gopher://h.org/%23x"),
    ("gopher://h.org/7s%09a%20b", "gopher://h.org/7s%09a%20b"),
    ("news:%3Cid@host%3E", "news:id@host"),
    ("telnet://h.org:23", "telnet://h.org/"),
    ("wais://w.org/db?a+b%2Bc", "wais://w.org/db?a+b%2Bc"),
    ("file://localhost/a%20b", "file://localhost/a%20b"),
    ("prospero://p.org//a;k=v", "prospero://p.org//a;k=v"),
    ("mailto:a%25b@h", "mailto:a%25b@h"),
    ("ftp://[2001:db8::1]:2121/", "ftp://[2001:db8::1]:2121/"),
    ("<URL:http://ds.internic.\n net/x#WARNING>", "http://ds.internic.net/x#WARNING"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_text(text: str, canonical: str) -> None:
    assert str(parse_url(text)) == canonical


# -- errors: each names the part and its position in the text as given ------

ERRORS: list[tuple[str, str, int]] = [
    # raw characters that must be encoded
    ("ftp://h.com/a b", "character", 13),
    ("ftp://h.com/a\tb", "character", 13),
    ("ftp://h.com/a\x00b", "character", 13),
    ("ftp://h.com/a\x7fb", "character", 13),
    ("ftp://h.com/\u00e9", "character", 12),
    ("http://h.com/\u2028", "character", 13),
    ('http://h.com/"q"', "character", 13),
    ("http://h.com/<x>", "character", 13),
    ("URL:ftp://h.com/a b", "character", 17),
    ("<URL:ftp://h.com/a\x01>", "character", 18),
    ("<URL:ftp://h.com/\n  a b\x01>", "character", 23),
    ("ftp://h.com/a\nb", "character", 13),
    ("ftp://h.com/a#b#c", "fragment", 15),
    ("ftp://h.com/a%2", "escape", 13),
    ("ftp://h.com/a%zz", "escape", 13),
    ("ftp://h.com/%", "escape", 12),
    ("mailto:100%@h.com", "escape", 10),
    # wrappers
    ("<URL:ftp://h.com/", "wrapper", 0),
    ("  <ftp://h.com/", "wrapper", 2),
    ("<", "wrapper", 0),
    ("<URL:>", "scheme", 0),
    # schemes
    ("", "scheme", 0),
    ("   ", "scheme", 0),
    ("host.com/file", "scheme", 0),
    (":foo", "scheme", 0),
    ("ht_tp://h.com/", "scheme", 2),
    ("ftp:host.com", "host", 4),
    ("http:/h.com/", "host", 5),
    ("gopher:h", "host", 7),
    ("nntp:comp.misc", "host", 5),
    ("wais:db", "host", 5),
    ("telnet:h", "host", 7),
    ("prospero:x", "host", 9),
    # hosts
    ("ftp:///a", "host", 6),
    ("http://:80/", "host", 7),
    ("ftp://-a.com/", "host", 6),
    ("ftp://a-.com/", "host", 6),
    ("ftp://a.-b.com/", "host", 6),
    ("ftp://a.com-/", "host", 6),
    ("ftp://a.1com/", "host", 6),
    ("ftp://a.123/", "host", 6),
    ("ftp://host.com./", "host", 6),
    ("ftp://.host.com/", "host", 6),
    ("ftp://a..b/", "host", 6),
    ("ftp://a_b.com/", "host", 6),
    ("ftp://user@a_b.com/", "host", 11),
    ("ftp://256.1.1.1/", "host", 6),
    ("ftp://1.2.3.999/", "host", 6),
    ("ftp://1.2.3/", "host", 6),
    ("ftp://[::1/", "host", 6),
    ("ftp://[::g]/", "host", 6),
    ("ftp://[1.2.3.4]/", "host", 6),
    ("ftp://[fe80::1%25eth0]/", "host", 6),
    ("ftp://[::1]x/", "host", 11),
    ("ftp://u@v@h.com/", "user", 9),
    # ports: digits only, 0-65535, no sign, no spaces, no wrap-around, not empty
    ("ftp://h.com:/", "port", 12),
    ("ftp://h.com:", "port", 12),
    ("ftp://[::1]:/", "port", 12),
    ("ftp://h.com:65536/", "port", 12),
    ("ftp://h.com:99999/", "port", 12),
    ("ftp://h.com:4294967297/", "port", 12),
    ("ftp://h.com:18446744073709551637/", "port", 12),
    ("ftp://h.com:" + "1" * 5000 + "/", "port", 12),
    ("ftp://h.com:+21/", "port", 12),
    ("ftp://h.com:-1/", "port", 12),
    ("ftp://h.com:0x15/", "port", 12),
    ("ftp://h.com:2_1/", "port", 12),
    ("ftp://h.com:21a/", "port", 12),
    ("ftp://h.com: 21/", "character", 12),
    ("http://h.com:8o80/", "port", 13),
    ("ftp://h.com:21:22/", "host", 6),
    ("gopher://h.com:70000/", "port", 15),
    ("file://localhost:8/x", "port", 17),
    # FTP typecodes and reserved characters
    ("ftp://h.com/f;type=x", "typecode", 19),
    ("ftp://h.com/f;type=", "typecode", 19),
    ("ftp://h.com/f;type=ai", "typecode", 19),
    ("ftp://h.com/f;type=%61", "typecode", 19),
    ("ftp://h.com/d;type=d/f", "typecode", 19),
    ("ftp://h.com/a;b/c", "path", 13),
    ("ftp://h.com/a;mode=x", "path", 13),
    # Gopher
    ("gopher://u:p@h.org/1", "user", 9),
    ("gopher://h.org/%09sel", "gtype", 15),
    ("gopher://h.org/%20sel", "gtype", 15),
    ("gopher://h.org/%C3%A9", "gtype", 15),
    ("gopher://h.org/%7F", "gtype", 15),
    # News and NNTP
    ("news:", "group", 5),
    ("news:1comp", "group", 5),
    ("news:comp/misc", "group", 5),
    ("news:comp%2Emisc", "group", 5),
    ("news://h.org/", "group", 13),
    ("nntp://h.org", "group", 13),
    ("nntp://h.org/", "group", 13),
    ("nntp://h.org/1group/2", "group", 13),
    ("nntp://h.org/g/x", "article", 15),
    ("nntp://h.org/g/-1", "article", 15),
    ("nntp://h.org/g/+1", "article", 15),
    ("nntp://h.org/g/1/2", "article", 15),
    ("nntp://h.org/g/%31", "article", 15),
    ("nntp://h.org/g/9223372036854775808", "article", 15),
    ("nntp://h.org/g/" + "9" * 5000, "article", 15),
    ("nntp://u@h.org/g", "user", 7),
    # Telnet
    ("telnet://h.org/x", "path", 15),
    ("telnet://h.org//", "path", 15),
    # WAIS
    ("wais://w.org", "database", 12),
    ("wais://w.org/", "database", 12),
    ("wais://w.org?x", "database", 12),
    ("wais://w.org/?x", "database", 13),
    ("wais://w.org/db/TEXT", "wpath", 20),
    ("wais://w.org//TEXT/x", "database", 13),
    ("wais://u@w.org/db", "user", 7),
    # File
    ("file:x", "path", 5),
    ("file://u@h/x", "user", 7),
    ("file://a_b/x", "host", 7),
    # Prospero
    ("prospero://p.org//a;novalue", "field", 20),
    ("prospero://p.org//a;k=v;=v", "field", 24),
    ("prospero://p.org//a;", "field", 20),
    ("prospero://u@p.org/a", "user", 11),
    # Mailto
    ("mailto:", "address", 7),
    # generic URLs with an authority are checked too
    ("x-test://h.org:99999/", "port", 15),
]


@pytest.mark.parametrize(("text", "part", "position"), ERRORS, ids=[repr(text[:40]) for text, _, _ in ERRORS])
def test_error_names_part_and_position(text: str, part: str, position: int) -> None:
    with pytest.raises(URLError) as caught:
        parse_url(text)
    error = caught.value
    assert error.part == part
    assert error.position == position
    assert error.url == redact(text)  # the input, its password masked
    assert error.exit_code == 2
    assert str(error)


def test_error_messages_say_what_and_where() -> None:
    with pytest.raises(URLError) as caught:
        parse_url("URL:ftp://h.com/a b")
    assert str(caught.value) == "raw space at position 17"
    assert caught.value.hint == "percent-encode it as %20"

    with pytest.raises(URLError) as caught:
        parse_url("ftp://h.com/\u00e9")
    assert str(caught.value) == "raw non-ASCII character '\u00e9' at position 12"
    assert caught.value.hint == "percent-encode its UTF-8 octets"

    with pytest.raises(URLError) as caught:
        parse_url("ftp://h.com:65536/")
    assert str(caught.value) == "port 65536 is out of range (0-65535)"

    with pytest.raises(URLError) as caught:
        parse_url("ftp://h.com:" + "1" * 5000 + "/")
    assert str(caught.value) == "port 11111111111111111111... is out of range (0-65535)"

    with pytest.raises(URLError) as caught:
        parse_url("ftp://h.com/f;type=x")
    assert str(caught.value) == "typecode 'x' is not a, i or d"

    with pytest.raises(URLError) as caught:
        parse_url("ftp://h.com:/")
    assert str(caught.value) == "the port after ':' is empty"


# -- properties of the values ------------------------------------------------


def test_values_are_immutable_and_hashable() -> None:
    url = parse_url("ftp://h.com/a/b")
    with pytest.raises(AttributeError):
        url.host = "x"  # type: ignore[misc]
    assert type(url) is FtpURL
    assert hash(url) == hash(parse_url("FTP://H.COM/a/b"))
    assert len({url, parse_url("ftp://h.com:21/a/b"), parse_url("ftp://h.com/a/c")}) == 2
    assert hash(parse_url("prospero://p.org//a;k=v")) == hash(parse_url("prospero://p.org//a;k=v"))


def test_replace_builds_a_new_value() -> None:
    url = parse_url("ftp://h.com/a/b;type=i")
    other = url.replace(name="c", typecode=None)
    assert isinstance(other, FtpURL)
    assert str(other) == "ftp://h.com/a/c"
    assert str(url) == "ftp://h.com/a/b;type=i"


def test_ports_and_default_ports() -> None:
    assert DEFAULT_PORTS == {
        "ftp": 21,
        "ftps": 990,
        "http": 80,
        "https": 443,
        "gopher": 70,
        "gophers": 70,
        "news": 119,
        "nntp": 119,
        "nntps": 563,
        "snews": 563,
        "telnet": 23,
        "wais": 210,
        "prospero": 1525,
    }
    assert [parse_url(text).default_port for text in ("ftp://h/", "mailto:a@b", "file:///x", "x-y:z")] == [
        21,
        None,
        None,
        None,
    ]
    assert parse_url("file:///x").port is None
    assert parse_url("mailto:a@b").port is None
    assert parse_url("news:comp.misc").port is None


def test_to_bytes_gives_the_octets_of_the_url() -> None:
    url = parse_url("ftp://h.com/%FF%FEa%E2%82%AC%0D")
    assert isinstance(url, FtpURL)
    assert to_bytes(url.name) == b"\xff\xfea\xe2\x82\xac\r"


def test_unwrap() -> None:
    assert unwrap("<URL:ftp://a.b/c-\n   d>") == "ftp://a.b/c-d"
    assert unwrap("URL:http://a.b/") == "http://a.b/"
    assert unwrap(" <http://a.b/\n x> ") == "http://a.b/x"
    assert unwrap("http://a.b/") == "http://a.b/"


def test_unknown_scheme_has_no_handler() -> None:
    result = run_fetch("x-unknown:foo")
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.startswith(b"fetch: no handler for scheme 'x-unknown'")


def test_malformed_url_exits_2_naming_the_position() -> None:
    result = run_fetch("ftp://h.com/a b")
    assert result.returncode == 2
    assert result.stderr.startswith(b"fetch: raw space at position 13")


# -- joins: RFC 1808 §5 and the schemes fetcher follows links in ------------

RFC1808_BASE = "http://a/b/c/d;p?q#f"

RFC1808_NORMAL = [
    ("g:h", "g:h"),
    ("g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/"),
    ("/g", "http://a/g"),
    ("//g", "http://g/"),
    ("?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y"),
    ("g?y/./x", "http://a/b/c/g?y/./x"),
    ("#s", "http://a/b/c/d;p?q#s"),
    ("g#s", "http://a/b/c/g#s"),
    ("g#s/./x", "http://a/b/c/g#s/./x"),
    ("g?y#s", "http://a/b/c/g?y#s"),
    (";x", "http://a/b/c/d;x"),
    ("g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y#s"),
    (".", "http://a/b/c/"),
    ("./", "http://a/b/c/"),
    ("..", "http://a/b/"),
    ("../", "http://a/b/"),
    ("../g", "http://a/b/g"),
    ("../..", "http://a/"),
    ("../../", "http://a/"),
    ("../../g", "http://a/g"),
]

RFC1808_ABNORMAL = [
    ("", "http://a/b/c/d;p?q#f"),
    ("../../../g", "http://a/../g"),
    ("../../../../g", "http://a/../../g"),
    ("/./g", "http://a/./g"),
    ("/../g", "http://a/../g"),
    ("g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h"),
]


@pytest.mark.parametrize(("reference", "expected"), RFC1808_NORMAL + RFC1808_ABNORMAL)
def test_join_rfc1808(reference: str, expected: str) -> None:
    joined = join(RFC1808_BASE, reference)
    assert str(joined) == expected
    assert joined == parse_url(expected)
    assert join(parse_url(RFC1808_BASE), reference) == joined


@pytest.mark.parametrize("reference", ["http:g", "http:"])
def test_join_rfc1808_scheme_loophole_is_not_an_http_url(reference: str) -> None:
    # RFC 1808 resolves these to "http:g" and "http:", which RFC 1738 does not allow.
    with pytest.raises(URLError) as caught:
        join(RFC1808_BASE, reference)
    assert caught.value.part == "host"


@pytest.mark.parametrize(
    ("base", "reference", "expected"),
    [
        ("ftp://h.com/pub/dir/", "file.txt", "ftp://h.com/pub/dir/file.txt"),
        ("ftp://h.com/pub/dir/", "../up;type=i", "ftp://h.com/pub/up;type=i"),
        ("ftp://h.com/pub/dir;type=d", "other", "ftp://h.com/pub/other"),
        ("ftp://u:p@h.com/a/b", "/c", "ftp://u:p@h.com/c"),
        ("ftp://h.com/a/b", "//k.org/x", "ftp://k.org/x"),
        ("ftp://h.com", "x", "ftp://h.com/x"),
        ("gopher://h.org/1/pub/menu", "0about", "gopher://h.org/1/pub/0about"),
        ("gopher://h.org/1/pub/menu", "/0/about.txt", "gopher://h.org/0/about.txt"),
        ("gopher://h.org/1/pub/menu", "//k.org:7070/1/", "gopher://k.org:7070/1/"),
        ("gopher://h.org/1/pub/menu", "http://w.org/x", "http://w.org/x"),
        ("http://h.com/a/b", "<URL:c/d>", "http://h.com/a/c/d"),
        ("http://h.com/a/b", "HTTP://K.COM/", "http://k.com/"),
    ],
)
def test_join_other_bases(base: str, reference: str, expected: str) -> None:
    assert str(join(base, reference)) == expected


def test_join_checks_the_result() -> None:
    with pytest.raises(URLError) as caught:
        join("ftp://h.com/a/", "b c")
    assert caught.value.part == "character"

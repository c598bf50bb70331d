"""Properties of the parser over random components and random text.

URLs of every scheme are built from random components (any octets, each
percent-encoded when it must be and, at random, when it need not be) and
must parse back to exactly those components; the canonical text must parse
to an equal value; and any text at all either parses or raises URLError.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.errors import URLError
from fetcher.url import (
    DEFAULT_PORTS,
    URL,
    FileURL,
    FtpURL,
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
    to_bytes,
)
from fetcher.url.careful import parse_careful

PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALNUM = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UCHAR = ALNUM + b"$-_.+!*'(),"
SAFE_USER = UCHAR + b";?&="
SAFE_USER_HTTP = UCHAR + b";&="
SAFE_FSEGMENT = UCHAR + b"?:@&="
SAFE_HSEGMENT = UCHAR + b";:@&="
SAFE_SEARCH = UCHAR + b";:@&=/?"
SAFE_GOPHER = UCHAR + b";/?:@&="
SAFE_NEWS = UCHAR + b";/?:&="
SAFE_FIELD = UCHAR + b"?:@&"
SAFE_MAILTO = UCHAR + b";/?:@&="


@st.composite
def encoded(
    draw: st.DrawFn, safe: bytes, *, min_size: int = 0, max_size: int = 8, without: bytes = b""
) -> tuple[bytes, str]:
    """Random octets and one valid URL spelling of them."""
    octets = draw(st.binary(min_size=min_size, max_size=max_size))
    octets = bytes(octet for octet in octets if octet not in without).ljust(min_size, b"x")
    spelling = draw(st.integers(0, 4 ** len(octets) - 1))  # two bits per octet: raw, %XX or %xx
    text = []
    for octet in octets:
        spelling, choice = divmod(spelling, 4)
        if octet in safe and choice > 1:
            text.append(chr(octet))
        else:
            text.append(f"%{octet:02X}" if choice % 2 else f"%{octet:02x}")
    return octets, "".join(text)


ALNUM_TEXT = ALNUM.decode()
runs = st.text(alphabet=ALNUM_TEXT, min_size=1, max_size=4)


def label(first: str) -> st.SearchStrategy[str]:
    """Letter/digit runs joined by one or two hyphens; the first character from `first`."""
    return st.builds(
        lambda head, parts, hyphens: head + "".join(("-" * hyphens) + part for part in parts),
        st.sampled_from(first),
        st.lists(runs, max_size=2),
        st.integers(1, 2),
    )


hostnames = st.builds(
    lambda labels, top: ".".join([*labels, top]),
    st.lists(label(ALNUM_TEXT), max_size=3),
    label(ALNUM_TEXT[:52]),
)
ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda octets: ".".join(map(str, octets)))
ipv6 = st.ip_addresses(v=6).map(str)


@st.composite
def hosts(draw: st.DrawFn) -> tuple[str, str]:
    """(text in the URL, expected host field)."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        address = draw(ipv4)
        return address, address
    if kind == 1:
        address = draw(ipv6)
        return f"[{address.upper() if draw(st.booleans()) else address}]", address
    name = draw(hostnames)
    return name, name.lower()


@st.composite
def ports(draw: st.DrawFn) -> tuple[str, int | None]:
    port = draw(st.none() | st.integers(0, 65535))
    if port is None:
        return "", None
    zeros = "0" * draw(st.integers(0, 2))
    return f":{zeros}{port}", port


GROUPS = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(ALNUM_TEXT[:52]),
    st.text(alphabet=ALNUM_TEXT + "-.+_", max_size=12),
)
fragments = st.none() | st.text(alphabet=ALNUM_TEXT + "$-_.+!*'(),;/?:@&=", max_size=6)


def tail(fragment: str | None) -> str:
    return "" if fragment is None else "#" + fragment


@st.composite
def logins(draw: st.DrawFn, safe: bytes) -> tuple[str, bytes | None, bytes | None]:
    user = draw(st.none() | encoded(safe))
    password = draw(st.none() | encoded(safe)) if user is not None else None
    if user is None:
        return "", None, None
    text = user[1] + ("" if password is None else ":" + password[1]) + "@"
    return text, user[0], None if password is None else password[0]


def decoded(value: str | None) -> bytes | None:
    return None if value is None else to_bytes(value)


def check_round_trip(text: str, url: URL) -> None:
    assert parse_url(str(url)) == url
    assert parse_careful(text) == url


@PROPERTY
@given(logins(SAFE_USER), hosts(), ports(), st.lists(encoded(SAFE_FSEGMENT), max_size=4), encoded(SAFE_FSEGMENT),
       st.none() | st.sampled_from("aidAID"), fragments, st.sampled_from(["ftp", "FTP", "ftps"]))  # fmt: skip
def test_ftp_components(
    login: Any, host: Any, port: Any, cwd: Any, name: Any, typecode: Any, fragment: Any, scheme: str
) -> None:
    path = "/".join([segment for _, segment in cwd] + [name[1]])
    text = f"{scheme}://{login[0]}{host[0]}{port[0]}/{path}" + ("" if typecode is None else f";type={typecode}")
    text += tail(fragment)
    url = parse_url(text)
    assert isinstance(url, FtpURL)
    assert (decoded(url.user), decoded(url.password)) == (login[1], login[2])
    assert url.host == host[1]
    assert url.port == (DEFAULT_PORTS[scheme.lower()] if port[1] is None else port[1])
    assert [to_bytes(segment) for segment in url.cwd] == [octets for octets, _ in cwd]
    assert to_bytes(url.name) == name[0]
    assert url.typecode == (None if typecode is None else typecode.lower())
    assert url.fragment == fragment
    check_round_trip(text, url)


@PROPERTY
@given(logins(SAFE_USER_HTTP), hosts(), ports(), st.lists(encoded(SAFE_HSEGMENT), max_size=4),
       st.none() | encoded(SAFE_SEARCH), fragments, st.sampled_from(["http", "https", "HTTPS"]))  # fmt: skip
def test_http_components(login: Any, host: Any, port: Any, path: Any, search: Any, fragment: Any, scheme: str) -> None:
    path_text = "/".join(segment for _, segment in path)
    text = f"{scheme}://{login[0]}{host[0]}{port[0]}/{path_text}" + ("" if search is None else "?" + search[1])
    text += tail(fragment)
    url = parse_url(text)
    assert isinstance(url, HttpURL)
    assert (decoded(url.user), decoded(url.password)) == (login[1], login[2])
    assert url.host == host[1]
    assert url.port == (DEFAULT_PORTS[scheme.lower()] if port[1] is None else port[1])
    assert url.path == path_text  # sent as written
    assert url.search == (None if search is None else search[1])
    assert url.fragment == fragment
    check_round_trip(text, url)


@PROPERTY
@given(hosts(), ports(), st.characters(min_codepoint=0x21, max_codepoint=0x7E), encoded(SAFE_GOPHER, without=b"\t"),
       st.none() | encoded(SAFE_GOPHER, without=b"\t"), st.none() | encoded(SAFE_GOPHER), fragments)  # fmt: skip
def test_gopher_components(
    host: Any, port: Any, gtype: str, selector: Any, search: Any, plus: Any, fragment: Any
) -> None:
    if plus is not None and search is None:
        search = (b"", "")
    gtype_text = gtype if gtype.encode() in SAFE_GOPHER and gtype != "%" else f"%{ord(gtype):02X}"
    path = gtype_text + selector[1]
    if search is not None:
        path += "%09" + search[1]
    if plus is not None:
        path += "%09" + plus[1]
    text = f"gopher://{host[0]}{port[0]}/{path}{tail(fragment)}"
    url = parse_url(text)
    assert isinstance(url, GopherURL)
    assert url.host == host[1]
    assert url.port == (70 if port[1] is None else port[1])
    assert (url.gtype, to_bytes(url.selector)) == (gtype, selector[0])
    assert decoded(url.search) == (None if search is None else search[0])
    assert decoded(url.plus) == (None if plus is None else plus[0])
    assert url.fragment == fragment
    check_round_trip(text, url)


@PROPERTY
@given(GROUPS | st.just("*"), fragments)
def test_news_group(group: str, fragment: str | None) -> None:
    text = f"news:{group}{tail(fragment)}"
    url = parse_url(text)
    assert isinstance(url, NewsURL)
    assert (url.group, url.message_id, url.host, url.fragment) == (group, None, None, fragment)
    check_round_trip(text, url)


@PROPERTY
@given(encoded(SAFE_NEWS, min_size=1), encoded(SAFE_NEWS), fragments)
def test_news_message_id(unique: Any, domain: Any, fragment: Any) -> None:
    local = unique[1]
    if local.startswith("/"):
        local = "%2F" + local[1:]  # "news://" would be the host form
    text = f"news:{local}@{domain[1]}{tail(fragment)}"
    url = parse_url(text)
    assert isinstance(url, NewsURL)
    expected = unique[0] + b"@" + domain[0]
    if expected.startswith(b"<") and expected.endswith(b">"):
        expected = expected[1:-1]
    assert (url.group, decoded(url.message_id), url.fragment) == (None, expected, fragment)
    check_round_trip(text, url)


@PROPERTY
@given(hosts(), ports(), GROUPS, st.none() | st.integers(0, 2**63 - 1))
def test_nntp_components(host: Any, port: Any, group: str, article: int | None) -> None:
    text = f"nntp://{host[0]}{port[0]}/{group}" + ("" if article is None else f"/{article}")
    url = parse_url(text)
    assert isinstance(url, NntpURL)
    assert (url.host, url.port, url.group, url.article) == (
        host[1],
        119 if port[1] is None else port[1],
        group,
        article,
    )
    check_round_trip(text, url)


@PROPERTY
@given(logins(SAFE_USER), hosts(), ports(), st.booleans())
def test_telnet_components(login: Any, host: Any, port: Any, slash: bool) -> None:
    text = f"telnet://{login[0]}{host[0]}{port[0]}" + ("/" if slash else "")
    url = parse_url(text)
    assert isinstance(url, TelnetURL)
    assert (decoded(url.user), decoded(url.password)) == (login[1], login[2])
    assert (url.host, url.port) == (host[1], 23 if port[1] is None else port[1])
    check_round_trip(text, url)


@PROPERTY
@given(hosts(), ports(), encoded(UCHAR, min_size=1), st.integers(0, 2), encoded(UCHAR.replace(b"+", b"")),
       encoded(UCHAR), encoded(UCHAR))  # fmt: skip
def test_wais_components(host: Any, port: Any, database: Any, form: int, search: Any, wtype: Any, wpath: Any) -> None:
    text = f"wais://{host[0]}{port[0]}/{database[1]}"
    if form == 1:
        # a space in a search is written "+"; a literal "+" is encoded
        text += "?" + search[1].replace("%20", "+")
    elif form == 2:
        text += f"/{wtype[1]}/{wpath[1]}"
    url = parse_url(text)
    assert isinstance(url, WaisURL)
    assert (url.host, url.port) == (host[1], 210 if port[1] is None else port[1])
    assert to_bytes(url.database) == database[0]
    assert decoded(url.search) == (search[0] if form == 1 else None)
    assert decoded(url.wtype) == (wtype[0] if form == 2 else None)
    assert url.wpath == (wpath[1] if form == 2 else None)  # opaque, kept as written
    check_round_trip(text, url)


@PROPERTY
@given(st.sampled_from(["", "localhost", "LocalHost"]) | hostnames, st.lists(encoded(SAFE_FSEGMENT + b";"), max_size=4))
def test_file_components(host: str, segments: Any) -> None:
    text = f"file://{host}/" + "/".join(segment for _, segment in segments)
    url = parse_url(text)
    assert isinstance(url, FileURL)
    assert url.host == host.lower()
    assert to_bytes(url.path) == b"/".join(octets for octets, _ in segments)
    check_round_trip(text, url)


@PROPERTY
@given(hosts(), ports(), st.lists(encoded(SAFE_FSEGMENT), max_size=4),
       st.lists(st.tuples(encoded(SAFE_FIELD, min_size=1), encoded(SAFE_FIELD)), max_size=3))  # fmt: skip
def test_prospero_components(host: Any, port: Any, segments: Any, fields: Any) -> None:
    text = f"prospero://{host[0]}{port[0]}/" + "/".join(segment for _, segment in segments)
    expected: dict[bytes, bytes] = {}
    for (name, name_text), (value, value_text) in fields:
        text += f";{name_text}={value_text}"
        expected[name] = value
    url = parse_url(text)
    assert isinstance(url, ProsperoURL)
    assert (url.host, url.port) == (host[1], 1525 if port[1] is None else port[1])
    assert to_bytes(url.hsoname) == b"/".join(octets for octets, _ in segments)
    assert {to_bytes(name): to_bytes(value) for name, value in url.fields.items()} == expected
    check_round_trip(text, url)


@PROPERTY
@given(encoded(SAFE_MAILTO, min_size=1), fragments)
def test_mailto_components(address: Any, fragment: Any) -> None:
    text = f"mailto:{address[1]}{tail(fragment)}"
    url = parse_url(text)
    assert isinstance(url, MailtoURL)
    assert (to_bytes(url.address), url.fragment) == (address[0], fragment)
    check_round_trip(text, url)


# -- any text ------------------------------------------------------------------

URLISH = st.builds(
    lambda scheme, rest: scheme + rest,
    st.sampled_from(["", "ftp:", "http:", "gopher:", "news:", "nntp:", "telnet:", "wais:", "file:", "prospero:",
                     "mailto:", "x-y:", "<URL:", "URL:", "ftp://", "http://u:p@", "gopher://h:", "nntp://h/g/"]),
    st.text(alphabet="abcAZ019-._~%2F@:;/?#=&+[]<> \t\n\x00\u00e9", max_size=30),
)  # fmt: skip


def parses_or_refuses(text: str) -> URL | None:
    try:
        url = parse_url(text)
    except URLError as error:
        assert error.part
        assert isinstance(error.position, int | None)
        return None
    assert parse_careful(text) == url
    assert parse_url(str(url)) == url
    return url


@settings(max_examples=300, deadline=None)
@given(URLISH)
def test_urlish_text_parses_or_raises_url_error(text: str) -> None:
    parses_or_refuses(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_any_text_parses_or_raises_url_error(text: str) -> None:
    parses_or_refuses(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab./;?#:=%2F", max_size=12))
def test_join_gives_a_url_or_url_error(reference: str) -> None:
    for base in ("http://a/b/c/d;p?q#f", "ftp://h.com/pub/dir/", "gopher://h.org/1/menu"):
        try:
            url = join(base, reference)
        except URLError:
            continue
        assert parse_url(str(url)) == url

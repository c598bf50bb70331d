"""Where an HTTP redirect leads, or why it is not followed: one rule for the handler and the lane.

Pure functions of the request URL and the reply's status, reason and
Location: the handler (task path) and the pipelined lane (lane.py) both
read redirects through them, so both say the same about a redirect.
"""

from __future__ import annotations

from fetcher.errors import ProtocolError, URLError
from fetcher.text import escape
from fetcher.url import URL, HttpURL, join
from schemes.http import response as rules
from schemes.http.request import public


def redirect_target(url: HttpURL, status: int, location: str | None) -> URL:
    """Where a redirect leads, or the ProtocolError that says why it leads nowhere usable."""
    if location is None:
        raise ProtocolError(f"HTTP {status} redirect from {public(url)} without a Location header")
    try:
        return join(url, rules.location_reference(location))
    except URLError as error:
        shown = escape(rules.mask_userinfo(location))
        raise ProtocolError(f"HTTP {status} redirect to an unusable Location \"{shown}\": {error.message}",
                            url=str(public(url))) from None  # fmt: skip


def not_followed(url: HttpURL, status: int, reason: str, location: str | None) -> rules.RedirectNotFollowed:
    """The error for a redirect that is not to be followed: it says where the redirect points."""
    origin = str(public(url))
    what = rules.status_line(status, reason)
    target: str | None = None
    if location is None:
        shown = "without a Location header"
    else:
        try:
            target = str(join(url, rules.location_reference(location)))
        except URLError:
            shown = f'to an unusable Location "{escape(rules.mask_userinfo(location))}"'
        else:
            shown = f"to {escape(rules.mask_userinfo(target))}"
    return rules.RedirectNotFollowed(
        f"{what}: {origin} redirects {shown}; not followed (--no-location)",
        status=status,
        location=target,
        hint="fetch the target URL itself, or drop --no-location to follow redirects",
        url=origin,
    )

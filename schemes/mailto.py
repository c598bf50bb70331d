"""mailto: (RFC 1738 §3.5): nothing to retrieve; tell the user the address."""

from __future__ import annotations

from fetcher.handler import Advisory, BaseHandler, Resource, Session
from fetcher.url import URL, MailtoURL


class Handler(BaseHandler):
    scheme = "mailto"
    default_port = None

    async def open(self, url: URL, session: Session) -> Resource:
        assert isinstance(url, MailtoURL)
        advisory = Advisory(
            title=f"mailto: {url.address}",
            text="A mailto URL names a mailbox; there is nothing to retrieve. Send mail to the address with "
            "your mail program.",
            fields={"address": url.address},
        )
        return Resource(url, "advisory", advisory=advisory)

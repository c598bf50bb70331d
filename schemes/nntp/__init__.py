"""nntp:, nntps:, news: and snews: URLs (RFC 1738 §3.6, §3.7) over NNTP (RFC 977, RFC 3977).

`responses` and `overview` are the pure codec; `client` is the trio
conversation; `handler` turns URLs into resources.
"""

from fetcher.schemes.nntp.handler import Handler

__all__ = ["Handler"]

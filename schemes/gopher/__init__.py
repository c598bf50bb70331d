"""gopher: and gophers: URLs (RFC 1738 §3.4): RFC 1436 Gopher and Gopher+.

The pure parts: `request` (the request bytes), `menu` (menu lines into
entries), `text` (where a text ends), `plus` (Gopher+ headers, errors,
attribute blocks), `ask` (ASK forms), `types` (item types).  `stream`
moves the reply's bytes (look-ahead, a body to its end); `client` decides
which reader a reply goes to, and holds the `Handler`.
"""

from fetcher.schemes.gopher.client import Handler

__all__ = ["Handler"]

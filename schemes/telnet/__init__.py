"""telnet: URLs (RFC 1738 §3.8): an advisory, or with `--interactive` a real TELNET session.

`protocol` is the pure option negotiation (RFC 854, 855, 1143); `session`
moves bytes between the terminal and the socket; `handler` decides which.
"""

from fetcher.schemes.telnet.handler import Handler

__all__ = ["Handler"]

"""prospero: URLs (RFC 1738 §3.11): Prospero v5 over ARDP/UDP.

`ardp` (packet codec and delivery state machine) and `protocol` (the text
protocol) and `access` (access methods to URLs) are pure; `transport` moves
datagrams over trio; `handler` turns URLs into resources.
"""

from fetcher.schemes.prospero.handler import Handler

__all__ = ["Handler"]

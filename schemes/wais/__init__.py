"""wais: URLs (RFC 1738 §3.9): a native WAIS (Z39.50-1988 with the WAIS extensions) client.

`codec` is the pure wire format, `client` the trio association and the
library's `search` (with relevance feedback), `handler` turns URLs into
resources.
"""

from fetcher.schemes.wais.client import Hit, SearchResults, search
from fetcher.schemes.wais.codec import RelevantDocument
from fetcher.schemes.wais.handler import Handler

__all__ = ["Handler", "Hit", "RelevantDocument", "SearchResults", "search"]

"""http: and https: on h11 (issue 4): see handler.py for the flow, the other modules for the rules."""

from fetcher.schemes.http.handler import Handler

__all__ = ["Handler"]

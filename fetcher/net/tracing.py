"""The protocol trace and the password mask on every fetcher log line.

Protocol lines go to the trace logger `fetcher.trace` ("> " sent, "< "
received, "* " what happened to the connection); `fetcher.cli` shows it
with -v.
"""

from __future__ import annotations

import logging

trace = logging.getLogger("fetcher.trace")


class _Redact(logging.Filter):
    """Mask `scheme://user:password@` in every trace and log line (defence in depth:
    callers already log `url.redacted()`, but a server's Location or a line a
    handler echoes may carry someone's password)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from fetcher.url import redact

        message = record.getMessage()
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


for _name in ("fetcher", "fetcher.trace"):
    logging.getLogger(_name).addFilter(_Redact())

"""What a handler may ask about the retrieval it runs in: a bulk run or not, and its archive tap.

Both are per task (context variables), set by the core around a retrieval:
the bulk engine (fetcher/bulk) marks its worker tasks, and the client starts
a tap for a retrieval while a recorder is active (fetcher/archive/tap.py).
The archive room is never imported from here: while nothing records (every
run without --warc-file) it is not even loaded, and its imports (json among
them) stay out of a plain fetch's start-up.
"""

from __future__ import annotations

import sys
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fetcher.archive.tap import Tap

#: True in the worker tasks of `fetch_all` (set by fetcher/bulk; the low-speed rule is on by default
#: there, and a handler may spare per-file commands a single retrieval makes, as FTP's MDTM).
bulk_run: ContextVar[bool] = ContextVar("fetcher_bulk_run", default=False)


def in_bulk_run() -> bool:
    """True when this task retrieves one URL of a bulk run (`Client.fetch_all`)."""
    return bulk_run.get()


def start_tap(url: str, scheme: str, *, keeps_dialogue: bool = True) -> Tap | None:
    """The archive tap of a retrieval starting now, or None when nothing records.

    Only `fetcher.archive.tap.recording` makes something record, and it lives in that
    module: while the module is not even imported there is nothing to ask.
    `keeps_dialogue` is the handler's hook (see `fetcher.handler.base.Handler`).
    """
    module = sys.modules.get("fetcher.archive.tap")
    return module.start(url, scheme, keeps_dialogue=keeps_dialogue) if module is not None else None


def current_tap() -> Tap | None:
    """`fetcher.archive.tap.current()`, without importing it when nothing records (see `start_tap`)."""
    module = sys.modules.get("fetcher.archive.tap")
    return module.current() if module is not None else None

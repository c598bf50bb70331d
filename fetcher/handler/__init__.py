"""The handler contract: everything scheme code may use from the core, in one place.

A handler (`schemes.<name>`) imports from fetcher only this package,
`fetcher.url`, `fetcher.errors` and `fetcher.text` (import-linter checks it).
What it finds here:

* the shape and the hooks: `Handler` (what the registry loads), `BaseHandler`
  (the hooks with their defaults: names on disk, place in a tree, listing
  view, archive dialogue, help page), `Topic`;
* one retrieval: `Session` (settings, guarded `connect`, pool, credentials,
  `follow`), and `SessionHost`, what a Session reaches of the client;
* what a retrieval returns: `Resource`, `Entry`, `Advisory`, `Closer`;
* dialing and time: `Connection`, `current_budget`, `trace`, deadlines
  (`fail_after`, `move_on_after`, `move_on_at`, `TooSlow`), a guarded UDP
  endpoint (`open_udp`, `Endpoint`, `Address`), a terminal's bytes for telnet
  (`open_relay`, `InputReader`, `running_loop`), and `aio`, the network
  layer's calls for task groups, scopes and checkpoints;
* the guard: `guard` itself, `Policy`, `DEFAULT_POLICY`, `check_port`, `check_headers`;
* caps and types: `Limits`, `DEFAULT_LIMITS`, `guess_type`;
* the run it is in: `in_bulk_run`, the archive tap (`current_tap`, its type `Tap`);
* resuming: `Validators`, `seconds`, `valid_tag`;
* what the caller knows of one URL: `RequestNotes` (`session.notes`: -N's
  conditions, a mirror's `Confinement`), `NO_NOTES`;
* bulk lanes: `LaneItem`, `LaneWork`, `LaneWriter`, `LaneHandler`, `admits`,
  `sequential_key`, `run_sequential`, `deliver` (documents reach the disk
  through the writer the bulk room injects);
* `__version__` (the User-Agent).

Names are loaded on first use, as `fetcher`'s own: importing this package
costs nothing, and a scheme pays only for what it asks for (a file: fetch
never loads the lane protocol).  The modules beside this one hold what the
contract defines itself; the rest lives in its layer and is re-exported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# public name -> the module that defines it (loaded on first use: fetcher.lazy)
_EXPORTS = {
    "Handler": "fetcher.handler.base",
    "BaseHandler": "fetcher.handler.base",
    "Topic": "fetcher.handler.topic",
    "Session": "fetcher.handler.session",
    "SessionHost": "fetcher.handler.session",
    "Origin": "fetcher.handler.session",
    "in_bulk_run": "fetcher.handler.context",
    "bulk_run": "fetcher.handler.context",
    "current_tap": "fetcher.handler.context",
    "Tap": "fetcher.archive.tap",
    "start_tap": "fetcher.handler.context",
    "LaneItem": "fetcher.handler.lanes",
    "LaneWork": "fetcher.handler.lanes",
    "LaneWriter": "fetcher.handler.lanes",
    "LaneHandler": "fetcher.handler.lanes",
    "admits": "fetcher.handler.lanes",
    "sequential_key": "fetcher.handler.lanes",
    "run_sequential": "fetcher.handler.lanes",
    "deliver": "fetcher.handler.lanes",
    "Validators": "fetcher.handler.validators",
    "seconds": "fetcher.handler.validators",
    "valid_tag": "fetcher.handler.validators",
    "RequestNotes": "fetcher.handler.notes",
    "NO_NOTES": "fetcher.handler.notes",
    "Confinement": "fetcher.handler.notes",
    "Resource": "fetcher.resource",
    "Entry": "fetcher.resource",
    "Advisory": "fetcher.resource",
    "Closer": "fetcher.resource",
    "check_length": "fetcher.resource",
    "Connection": "fetcher.net.connection",
    "current_budget": "fetcher.net.budget",
    "trace": "fetcher.net.tracing",
    "fail_after": "fetcher.net.deadlines",
    "move_on_after": "fetcher.net.deadlines",
    "move_on_at": "fetcher.net.deadlines",
    "TooSlow": "fetcher.net.deadlines",
    "open_udp": "fetcher.net.udp",
    "Address": "fetcher.net.udp",
    "Endpoint": "fetcher.net.udp",
    "open_relay": "fetcher.net.relay",
    "InputReader": "fetcher.net.stdio",
    "running_loop": "fetcher.net.threads",
    "Policy": "fetcher.guard",
    "DEFAULT_POLICY": "fetcher.guard",
    "check_port": "fetcher.guard",
    "check_headers": "fetcher.guard",
    "Limits": "fetcher.settings",
    "DEFAULT_LIMITS": "fetcher.settings",
    "guess_type": "fetcher.mime",
    "__version__": "fetcher",
}
# public name -> a module re-exported whole
_MODULES = {
    "aio": "fetcher.net.aio",
    "guard": "fetcher.guard",
}

__all__ = sorted({*_EXPORTS, *_MODULES})

if TYPE_CHECKING:
    from fetcher import __version__ as __version__
    from fetcher import guard as guard
    from fetcher.archive.tap import Tap as Tap
    from fetcher.guard import DEFAULT_POLICY as DEFAULT_POLICY
    from fetcher.guard import Policy as Policy
    from fetcher.guard import check_headers as check_headers
    from fetcher.guard import check_port as check_port
    from fetcher.handler.base import BaseHandler as BaseHandler
    from fetcher.handler.base import Handler as Handler
    from fetcher.handler.context import bulk_run as bulk_run
    from fetcher.handler.context import current_tap as current_tap
    from fetcher.handler.context import in_bulk_run as in_bulk_run
    from fetcher.handler.context import start_tap as start_tap
    from fetcher.handler.lanes import LaneHandler as LaneHandler
    from fetcher.handler.lanes import LaneItem as LaneItem
    from fetcher.handler.lanes import LaneWork as LaneWork
    from fetcher.handler.lanes import LaneWriter as LaneWriter
    from fetcher.handler.lanes import admits as admits
    from fetcher.handler.lanes import deliver as deliver
    from fetcher.handler.lanes import run_sequential as run_sequential
    from fetcher.handler.lanes import sequential_key as sequential_key
    from fetcher.handler.notes import NO_NOTES as NO_NOTES
    from fetcher.handler.notes import Confinement as Confinement
    from fetcher.handler.notes import RequestNotes as RequestNotes
    from fetcher.handler.session import Origin as Origin
    from fetcher.handler.session import Session as Session
    from fetcher.handler.session import SessionHost as SessionHost
    from fetcher.handler.topic import Topic as Topic
    from fetcher.handler.validators import Validators as Validators
    from fetcher.handler.validators import seconds as seconds
    from fetcher.handler.validators import valid_tag as valid_tag
    from fetcher.mime import guess_type as guess_type
    from fetcher.net import aio as aio
    from fetcher.net.budget import current_budget as current_budget
    from fetcher.net.connection import Connection as Connection
    from fetcher.net.deadlines import TooSlow as TooSlow
    from fetcher.net.deadlines import fail_after as fail_after
    from fetcher.net.deadlines import move_on_after as move_on_after
    from fetcher.net.deadlines import move_on_at as move_on_at
    from fetcher.net.relay import open_relay as open_relay
    from fetcher.net.stdio import InputReader as InputReader
    from fetcher.net.threads import running_loop as running_loop
    from fetcher.net.tracing import trace as trace
    from fetcher.net.udp import Address as Address
    from fetcher.net.udp import Endpoint as Endpoint
    from fetcher.net.udp import open_udp as open_udp
    from fetcher.resource import Advisory as Advisory
    from fetcher.resource import Closer as Closer
    from fetcher.resource import Entry as Entry
    from fetcher.resource import Resource as Resource
    from fetcher.resource import check_length as check_length
    from fetcher.settings import DEFAULT_LIMITS as DEFAULT_LIMITS
    from fetcher.settings import Limits as Limits
else:
    # Hidden from type checkers, as in fetcher/__init__.py: they read the imports above.

    from fetcher.lazy import lazy_getattr as _lazy_getattr

    __getattr__ = _lazy_getattr(globals(), _EXPORTS, _MODULES)

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})

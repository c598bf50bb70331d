"""The network layer: the only room that opens sockets, runs TLS and speaks to the event loop.

Its modules, each one job:

* `aio`: the event loop's calls, trio's own on trio and anyio's on asyncio (the one place choosing);
  `threads`: the loop and other threads; `deadlines`: cancel scopes that end or fail a block;
* `connect`: `open_connection` (the guard's port check, the dial, TLS within the connect budget);
  `sockets`: plain non-blocking TCP sockets on trio; `tls`: the handshake and its errors;
* `stream`: the buffered, timed byte stream; `lines` and `zerocopy`: its line I/O and buffer-free reads;
  `connection`: `Connection`, what a handler holds; `relay`: its bytes as they come (telnet);
* `budget`: --max-time and the low-speed rule of one retrieval; `tracing`: the protocol trace;
* `udp`: the guarded UDP endpoint (Prospero); `stdio`: the local descriptors of an interactive session;
* `pool`: idle connections kept for reuse; `ratelimit`: --limit-rate.

The names of the former `fetcher.net` module stay reachable here, loaded on
first use (importing the package loads no socket, TLS or event-loop code).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# public name -> the submodule that defines it (the former fetcher.net module's names; fetcher.lazy)
_EXPORTS = {
    "Budget": ".budget",
    "current_budget": ".budget",
    "open_connection": ".connect",
    "dial": ".connect",
    "Connection": ".connection",
    "TooSlow": ".deadlines",
    "fail_at": ".deadlines",
    "fail_after": ".deadlines",
    "move_on_at": ".deadlines",
    "MAX_LINE": ".lines",
    "RECEIVE_SIZE": ".stream",
    "TLSError": ".tls",
    "trace": ".tracing",
}

if TYPE_CHECKING:
    from fetcher.net.budget import Budget as Budget
    from fetcher.net.budget import current_budget as current_budget
    from fetcher.net.connect import dial as dial
    from fetcher.net.connect import open_connection as open_connection
    from fetcher.net.connection import Connection as Connection
    from fetcher.net.deadlines import TooSlow as TooSlow
    from fetcher.net.deadlines import fail_after as fail_after
    from fetcher.net.deadlines import fail_at as fail_at
    from fetcher.net.deadlines import move_on_at as move_on_at
    from fetcher.net.lines import MAX_LINE as MAX_LINE
    from fetcher.net.stream import RECEIVE_SIZE as RECEIVE_SIZE
    from fetcher.net.tls import TLSError as TLSError
    from fetcher.net.tracing import trace as trace
else:
    from fetcher.lazy import lazy_getattr as _lazy_getattr

    __getattr__ = _lazy_getattr(globals(), _EXPORTS)

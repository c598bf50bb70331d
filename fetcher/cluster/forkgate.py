"""Forks of a local cluster's workers, held to the moments the run's trio thread holds no lock.

A local cluster forks its workers from this process, in dask's event-loop
thread, while the run's trio loop goes on reading and naming URLs (and,
should a worker die, the nanny forks its successor mid-run).  A child
inherits whatever locks the trio thread holds at that instant, among them
a module's import lock if it was importing: the child would hang on it.
"""

from __future__ import annotations

import os
import threading
import weakref


class ForkGate:
    """Forks from other threads (a local cluster's workers) wait until the trio thread waits for I/O.

    Between its steps, waiting for I/O, the trio thread holds no lock; a
    fork waits for such a moment (at most one step of a task) and the trio
    thread does not start the next step until the fork is done.  The loop
    calls `before_io_wait` and `after_io_wait` (`fetcher.net.threads.watch_io_waits`).
    """

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.state = threading.Condition()
        self.stepping = True  # made in the trio thread, in a step of a task
        self.forking = 0

    def before_io_wait(self, timeout: float) -> None:
        with self.state:
            self.stepping = False
            self.state.notify_all()

    def after_io_wait(self, timeout: float) -> None:
        with self.state:
            while self.forking:
                self.state.wait()
            self.stepping = True

    def before_fork(self) -> None:
        if threading.get_ident() == self.thread:
            return
        with self.state:
            self.forking += 1
            while self.stepping:
                self.state.wait()

    def after_fork(self) -> None:
        if threading.get_ident() == self.thread:
            return
        with self.state:
            self.forking -= 1
            self.state.notify_all()


#: The gates of the runs going on in this process (each registered by its run's trio loop).
GATES: weakref.WeakSet[ForkGate] = weakref.WeakSet()


def _before_fork() -> None:
    for gate in list(GATES):
        gate.before_fork()


def _after_fork_in_parent() -> None:
    for gate in list(GATES):
        gate.after_fork()


# A child (a worker) starts with no run of its own: it keeps none of this process's gates.
os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=GATES.clear)

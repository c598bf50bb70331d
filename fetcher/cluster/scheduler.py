"""The Dask side of a run: importing dask, reaching or starting a cluster, and leaving the process.

Everything here touches dask.distributed, which is imported on first use
(`import_dask`), never when this module is imported: `fetch` without
`--cluster` loads none of it (tests/test_startup.py).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import sys
import weakref
from collections.abc import Callable
from typing import Any

from fetcher.errors import UsageError

HINT = "give --cluster local, local:N or tcp://HOST:PORT (a running dask scheduler)"


def parse_target(text: str) -> tuple[str, int | str]:
    """`local` / `local:N` -> ("local", N); `tcp://HOST:PORT` (or any scheduler address) -> ("address", text)."""
    if text == "local" or text.startswith("local:"):
        count = text.partition(":")[2]
        if not count:
            return "local", os.cpu_count() or 1
        if not count.isdigit() or int(count) < 1:
            raise UsageError(f"--cluster {text}: the worker count must be a whole number of at least 1", hint=HINT)
        return "local", int(count)
    if "://" in text and text.split("://", 1)[1]:
        return "address", text
    raise UsageError(f"--cluster {text}: not a cluster", hint=HINT)


#: dask's setting for how a local cluster starts its worker processes.
_START_METHOD = "distributed.worker.multiprocessing-method"
_START_METHOD_ENV = "DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD"


#: A local cluster's background work, slowed or off: dask's defaults (a
#: profiler sampling every 10 ms, an event-loop tick every 20 ms, system and
#: memory monitors) cost 56 ms of CPU per second of an idle 2-worker cluster
#: on this machine; these, 6 ms.  Nothing here changes what a batch does.
_QUIET_LOCAL = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


def import_dask(lean: bool = False) -> Any:
    """dask.distributed (imported on first use); `lean`: without numpy, when nothing has imported it yet.

    distributed uses numpy, when it can import it, only to allocate the
    buffers of large messages; this module's messages are small.  Importing
    numpy (and starting OpenBLAS) is about a quarter of importing
    distributed: 0.14 s of CPU of the 0.4 s measured on this machine.  The
    CLI asks for `lean` (its process handles no arrays); a program using
    the library keeps whatever it imports.
    """
    try:
        import dask

        if "distributed" not in sys.modules and _START_METHOD_ENV not in os.environ:
            # A local cluster's workers are forked from this process, not spawned:
            # a spawned worker starts a fresh interpreter and imports dask and
            # fetcher again (measured: 5-6 s to start and stop a 2-worker
            # cluster on a loaded 2-core machine, 1.8 s forked).  The fork
            # happens before any transfer starts, and a forked worker leaves
            # through os._exit, so it never flushes this process's buffers
            # (the manifest).  DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD
            # set in the environment wins.
            dask.config.set({_START_METHOD: "fork"})
        if lean and "numpy" not in sys.modules and "distributed" not in sys.modules:
            sys.modules["numpy"] = None  # type: ignore[assignment]  # `import numpy` raises ImportError
            try:
                import distributed
            except ImportError:
                pass  # a distributed that needs numpy after all: imported again below, with it
            finally:
                if "numpy" in sys.modules and sys.modules["numpy"] is None:
                    del sys.modules["numpy"]
        import distributed
    except ImportError:
        raise UsageError(
            "--cluster needs dask.distributed, which is not installed",
            hint="pip install 'fetcher-rfc1738[cluster]'",
        ) from None
    return distributed


#: The Clients of the local clusters `connect` started, and their worker counts.
LOCAL: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def connect(target: str | Any) -> tuple[Any, Callable[[bool], None]]:
    """A Dask client for `target` (`local[:N]`, a scheduler address, or a `distributed.Client`) and its closer.

    Blocking (starting a local cluster takes seconds): call it in a thread.
    A client passed in is the caller's and is not closed.  The closer's
    argument says batches are still running (the run was interrupted): a
    local cluster's workers are then killed at once, not asked to finish.
    """
    distributed = import_dask()
    if isinstance(target, distributed.Client):
        return target, lambda busy: None
    kind, value = parse_target(str(target))
    if kind == "local":
        return _start_local(distributed, int(value))
    try:
        client = distributed.Client(str(value), timeout="10s")
    except OSError as error:
        raise UsageError(f"--cluster {value}: cannot reach the dask scheduler: {error}", hint=HINT) from None
    return client, lambda busy: client.close()


def _start_local(distributed: Any, workers: int) -> tuple[Any, Callable[[bool], None]]:
    """A local cluster of `workers` processes forked from this one, its Client, and its closer (see `connect`)."""
    # The workers are this run's: their notes on being stopped (Ctrl-C) are not the user's business.
    logging.getLogger("distributed").setLevel(logging.ERROR)
    import dask

    from fetcher.cluster.plugin import RunnerPlugin

    # The workers are forked from this process: the objects they inherit go to the
    # permanent generation first, so that the workers' collections leave the pages
    # they share with this process alone (a copy-on-write fault for each page written).
    # Measured on the 10,000-URL bench: 6.5k fewer page faults, about 0.5 s less CPU.
    # What dask reports of this installation (package versions, read from their
    # metadata; the processor, from `uname -p`) is known before the fork: every
    # worker would look it up again to introduce itself (20 ms of CPU for two).
    distributed.versions.get_versions()
    gc.collect()
    gc.freeze()
    try:
        with dask.config.set(_QUIET_LOCAL):
            cluster = distributed.LocalCluster(
                # dask serves status pages even without a dashboard; on a port of its own,
                # on loopback: None means 8787, and a warning on stderr when that is taken.
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address="127.0.0.1:0",
                memory_limit=0,  # fetcher streams: no memory manager polling every 100 ms
                # Each worker starts with the plugin: no round trip to every worker to
                # register it before the first batch (measured: 70 ms of a 0.45 s run).
                plugins=(RunnerPlugin(),),
            )
    finally:
        gc.unfreeze()
    # Batches' outcomes come straight from the worker that ran them, not through
    # the scheduler (which, in this process, would read and send every one again):
    # measured on the 10,000-URL bench, 0.17 s less CPU in this process.
    client = distributed.Client(cluster, direct_to_workers=True)
    LOCAL[client] = workers

    def close_local(busy: bool) -> None:
        if busy:
            # A batch reading a never-ending file does not stop for a cancel;
            # dask would wait 4 s per worker before it kills it.
            for pid in client.run(os.getpid, wait=True, on_error="return").values():
                if isinstance(pid, int):
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
        client.close()
        cluster.close()

    return client, close_local


def slots(dask: Any) -> int:
    """How many batches the workers run at once; each worker closes its kept Clients when it closes.

    A local cluster's workers started with the plugin (`connect`) and have one thread each.
    """
    if dask in LOCAL:
        return LOCAL[dask]
    from fetcher.cluster.plugin import RunnerPlugin

    dask.register_plugin(RunnerPlugin())
    info = dask.scheduler_info()
    return max(1, sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()))


def exit_now(code: int) -> None:
    """End the CLI's process with `code` once a cluster run is over, without the interpreter's teardown.

    With dask and its dependencies loaded, the teardown (module by module,
    then every object) took 0.1 s of each run here; the cluster is closed by
    then and the manifest written.  Returns (the ordinary exit follows) if
    the output cannot be flushed, so that the usual report of that happens.
    """
    try:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        return
    os._exit(code)

"""The direct path of a large plain download: socket to file with no bytes object per read.

Where the body's size is known and nothing transforms it (`Resource.direct`),
`fetcher.disk.save.save` hands it here: spliced socket -> pipe -> file inside
the kernel (Linux splice(2), `Resource.can_splice`, when no digest is asked),
and otherwise, or once the file takes spliced bytes too slowly, read into a
few reused buffers that a writer thread empties.  Either way what arrived
before a failure or a cancellation is in the `.part` file for -C.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from fetcher.disk.partfile import PartFile
from fetcher.errors import OutputError
from fetcher.net import aio

if TYPE_CHECKING:
    from fetcher.resource import Resource

#: The direct path's buffers: one being filled from the socket while the others wait for or are in the writer thread.
DIRECT_BUFFER = 1 << 20
DIRECT_BUFFERS = 3
#: Spliced bytes between two looks at how fast the file takes them, and the slowest pace kept (seconds a MiB).
DRAIN_WINDOW = 16 << 20
SLOW_DRAIN = 1e-3


async def receive_direct(resource: Resource, part: PartFile, on_chunk: Callable[[int], None] | None) -> int:
    """Read the body into preallocated buffers (`Resource.readinto`) while a writer task writes the full ones.

    No bytes object, list or generator step per read: the socket fills a
    buffer, a worker thread writes it with os.write, and the buffer comes
    back for the next read.  As in `fetcher.disk.save`'s streaming writer,
    whatever arrived before a failure or a cancellation is written to the
    `.part` file first.
    """
    # The loop's own channels and nursery (fetcher.net.aio: trio's on trio, anyio's on asyncio); the
    # channels are closed with `with`, never `async with`, so no close is a cancellation point.
    free_send, free_receive = aio.memory_channel(DIRECT_BUFFERS)
    full_send, full_receive = aio.memory_channel(DIRECT_BUFFERS)
    for _ in range(DIRECT_BUFFERS):
        free_send.send_nowait(memoryview(bytearray(DIRECT_BUFFER)))
    total = 0
    failure: BaseException | None = None
    broken: list[OutputError] = []

    async def writer() -> None:
        with aio.cancel_scope(shield=True):  # the disk always gets what arrived
            with full_receive:
                async for view, count in full_receive:
                    if not broken:
                        try:
                            await aio.run_sync(part.write_view, view, count)
                        except OutputError as error:  # disk full: stop receiving, report it
                            broken.append(error)
                    free_send.send_nowait(view)

    async with aio.open_nursery() as nursery:
        nursery.start_soon(writer)
        with full_send:
            filled = 0
            buffer: memoryview | None = None
            try:
                while not broken:
                    buffer, filled = await free_receive.receive(), 0
                    while filled < DIRECT_BUFFER:
                        count = await resource.readinto(buffer[filled:])
                        if not count:
                            break
                        filled += count
                        total += count
                        if on_chunk is not None:
                            on_chunk(count)
                    # Never blocks (as many places as buffers) and is no cancellation point: no buffer is lost.
                    full_send.send_nowait((buffer, filled))
                    buffer = None
                    if filled < DIRECT_BUFFER:
                        break  # the end of the body
            except BaseException as error:
                failure = error
            if buffer is not None and filled and not broken:
                full_send.send_nowait((buffer, filled))
    if broken:
        raise broken[0]
    if failure is not None:
        raise failure
    return total


async def splice_direct(resource: Resource, part: PartFile, on_chunk: Callable[[int], None] | None) -> tuple[int, bool]:
    """Move the body socket -> pipe -> file inside the kernel (Linux splice(2)): no copy through Python at all.

    Each step moves what the socket has (up to the pipe's size) into an
    empty pipe and then all of it into the `.part` file, so a failure or a
    cancellation between steps has lost nothing that arrived: the pipe is
    empty whenever the read can fail.  The file is written on the event loop
    (the pipe's bytes are already in the kernel; the write is a page-cache copy).

    That copy is not always cheap: a disk that throttles writers, or memory
    that must be faulted in page by page (seen on this project's VM, whose
    host takes freed memory back: ~3 ms per MiB instead of ~0.3).  So the
    pace is measured every DRAIN_WINDOW bytes, and below SLOW_DRAIN the rest
    of the body is left to `receive_direct` (a writer thread beside the
    reads), and the loop runs on.  Returns the bytes moved and whether the
    body ended here.
    """
    import fcntl  # Linux only, as splice(2)
    from time import perf_counter

    reader, writer = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        try:
            capacity = fcntl.fcntl(writer, getattr(fcntl, "F_SETPIPE_SZ", 1031), DIRECT_BUFFER)
        except OSError:  # over the user's pipe quota: the default size (64 KiB) still works
            capacity = fcntl.fcntl(writer, getattr(fcntl, "F_GETPIPE_SZ", 1032))
        total = 0
        window_bytes = 0
        window_seconds = 0.0
        while True:
            count = await resource.splice_into(writer, capacity)
            if not count:
                return total, True
            started = perf_counter()
            part.drain_pipe(reader, count)
            window_seconds += perf_counter() - started
            window_bytes += count
            total += count
            if on_chunk is not None:
                on_chunk(count)
            if window_bytes >= DRAIN_WINDOW:
                if window_seconds > SLOW_DRAIN * window_bytes / (1 << 20):
                    return total, False  # the pipe is empty: the reads go on where the splices stopped
                window_bytes, window_seconds = 0, 0.0
    finally:
        os.close(reader)
        os.close(writer)

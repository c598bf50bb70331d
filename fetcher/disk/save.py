"""Writing an open document to disk from the event loop: `NAME.part` first, renamed only when complete.

The file system work runs in a worker thread so the event loop keeps
receiving while the disk writes and SHA-256 hashes (both release the GIL):
a small document (the common case of bulk runs) costs one thread hop for
open + write + rename; a large one is written in batches, each batch
gathering whatever arrived while the previous one was being written; a
large plain download takes the direct path (fetcher.disk.direct).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fetcher.disk.names import partial_path, writable_target
from fetcher.disk.partfile import PartFile
from fetcher.disk.writer import SMALL_BODY, Download
from fetcher.errors import OutputError
from fetcher.net import aio
from fetcher.resource import Resource, check_length

#: Bodies up to this size are written on the event loop itself.
INLINE_BODY = 64 << 10


async def save(
    resource: Resource,
    target: Path,
    *,
    resumed: bool = False,
    on_chunk: Callable[[int], None] | None = None,
    digest: bool = True,
    in_place_ok: bool = False,
    in_place_always: bool = False,
) -> Download:
    """Write an open document to `target` through `target.part`.

    The body is appended to the `.part` file when the handler honoured the
    resume offset (`resource.offset` > 0), else the file is restarted.  The
    rename happens only after the whole body arrived and its length matches
    what the server announced, so a failure never leaves a complete-looking
    file; what did arrive stays in `.part` for a later resume.

    `.part` is created with O_EXCL|O_NOFOLLOW, so nothing planted there (a
    symlink, a FIFO) is ever written through.  A `target` that exists and
    is not a regular file (/dev/null, a FIFO, a terminal) is never renamed
    over: with `in_place_ok` (the user named it, as with -o) it is written
    where it is, else refused.  `in_place_always`: the user named a
    descriptor the shell opened (`-o /dev/stdout` onto a file), written where
    it is whatever it is.  Every failure to write is an `OutputError`.
    """
    start = resource.offset if resumed else 0
    in_place = None
    if writable_target(target, in_place_ok) == "special" or in_place_always:
        in_place, start = target, 0
    part = PartFile(partial_path(target), start, hashlib.sha256() if digest else None, in_place=in_place,
                     source=resource, resumed=resumed, user_named=in_place_ok)  # fmt: skip
    modified = resource.modified.timestamp() if resource.modified is not None else None
    written = start
    buffered: list[bytes] = []
    buffered_size = 0
    opened = False
    if resource.direct and in_place is None and resource.size is not None and resource.size - start > SMALL_BODY:
        # A large plain download: spliced, or straight into reused buffers (fetcher.disk.direct).
        from fetcher.disk import direct

        try:
            await aio.run_sync(part.open)
            opened = True
            ended = False
            if resource.can_splice and part.digest is None:
                moved, ended = await direct.splice_direct(resource, part, on_chunk)
                written += moved
            if not ended:
                written += await direct.receive_direct(resource, part, on_chunk)
            check_length(resource, written)
            await aio.run_sync(part.finish, target, modified)
            opened = False
            return _download(resource, target, written, part, start)
        finally:
            if opened:
                with aio.cancel_scope(shield=True):
                    await aio.run_sync(part.quiet_close)
    body = resource.__aiter__()
    try:
        # Small bodies: gather everything, then one thread hop does it all.
        async for chunk in body:
            buffered.append(chunk)
            buffered_size += len(chunk)
            if on_chunk is not None:
                on_chunk(len(chunk))
            if buffered_size > SMALL_BODY:
                break
        else:
            written += buffered_size
            check_length(resource, written)
            if buffered_size <= INLINE_BODY and not start:
                # A thread hop costs more than writing a few KiB (measured:
                # 2000 x 4 KiB bulk, 1.4 s with a hop per file).
                part.write_all(buffered, target, modified, True)
                await aio.checkpoint()
            else:
                await aio.run_sync(part.write_all, buffered, target, modified, True)
            return _download(resource, target, written, part, start)
        # Large bodies: a writer task drains batches while the loop receives.
        await aio.run_sync(part.open)
        opened = True
        written += await _stream(body, part, buffered, on_chunk)
        check_length(resource, written)
        await aio.run_sync(part.finish, target, modified)
        opened = False
        return _download(resource, target, written, part, start)
    except BaseException as error:
        if buffered and not opened and not isinstance(error, OutputError) and in_place is None:
            # Keep what arrived, for -C/--continue (unless the disk is what failed).
            with aio.cancel_scope(shield=True):
                try:
                    await aio.run_sync(part.write_all, buffered, target, modified, False)
                except OutputError:
                    pass
        raise
    finally:
        if opened:
            with aio.cancel_scope(shield=True):
                await aio.run_sync(part.quiet_close)


async def _stream(body: Any, part: PartFile, first: list[bytes], on_chunk: Callable[[int], None] | None) -> int:
    """Receive the rest of the body while a writer task writes earlier batches.

    When the transfer fails (or is cancelled), whatever arrived is still
    written to the `.part` file before the failure propagates, so -C resumes
    from the last byte received.
    """
    # The loop's own channel and nursery (fetcher.net.aio); the channel is closed with `with`, never
    # `async with`, so no close is a cancellation point.
    send, receive = aio.memory_channel(2)
    total = sum(len(chunk) for chunk in first)
    failure: BaseException | None = None
    broken: list[OutputError] = []

    async def writer() -> None:
        with aio.cancel_scope(shield=True):  # the disk always gets what arrived
            with receive:
                async for batch in receive:
                    if broken:
                        continue  # drain, so the receiving side never blocks
                    try:
                        await aio.run_sync(part.write, batch)
                    except OutputError as error:  # disk full: stop receiving, report it
                        broken.append(error)

    async with aio.open_nursery() as nursery:
        nursery.start_soon(writer)
        with send:
            batch: list[bytes] = first
            batch_size = total
            try:
                async for chunk in body:
                    batch.append(chunk)
                    batch_size += len(chunk)
                    total += len(chunk)
                    if on_chunk is not None:
                        on_chunk(len(chunk))
                    if batch_size >= SMALL_BODY:
                        await send.send(batch)
                        batch, batch_size = [], 0
                        if broken:
                            break
            except BaseException as error:
                failure = error
            with aio.cancel_scope(shield=True):
                if batch and not broken:
                    await send.send(batch)
    if broken:
        raise broken[0]
    if failure is not None:
        raise failure
    return total


def _download(resource: Resource, target: Path, written: int, part: PartFile, start: int) -> Download:
    return Download(
        url=resource.url,
        path=target,
        bytes=written,
        sha256=part.digest.hexdigest() if part.digest is not None else None,
        content_type=resource.content_type,
        resumed_from=start,
        filename=resource.filename,
        etag=resource.metadata.get("etag"),
        metadata=resource.metadata,
    )

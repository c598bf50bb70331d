"""What a handler returns: a document (async bytes), a listing, or an advisory."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, runtime_checkable

from fetcher.errors import ProtocolError, TooLarge
from fetcher.net import aio
from fetcher.net.budget import Budget, current_budget
from fetcher.url import URL

if TYPE_CHECKING:
    from datetime import datetime

    from fetcher.archive.tap import Tap
    from fetcher.net.ratelimit import RateLimiter

Kind = Literal["document", "listing", "advisory"]
T = TypeVar("T")


@dataclass
class Entry:
    """One row of a listing: an FTP name, a Gopher menu item, a news article..."""

    name: str
    url: str | None = None
    #: A short type word: "file", "directory", "text", "menu", "search",
    #: "binary", "info", "error", "article", "group", "link", ...
    type: str = "file"
    size: int | None = None
    description: str = ""
    #: Protocol-specific details (Gopher item type and selector, article
    #: number and date, WAIS score...), JSON-serialisable.
    extra: dict[str, Any] = field(default_factory=dict)
    #: Typed facts where the listing gives them (FTP MLSD/LIST): the
    #: modification time (aware, UTC; its precision is extra["precision"]),
    #: a link's target as the server wrote it, and the permissions as
    #: `ls -l` writes them (or the server's own notation).
    modified: datetime | None = None
    target: str | None = None
    mode: str | None = None
    #: A file name the server's data suggests for this entry when -r saves it
    #: (a WAIS document's file name or headline, a news article's
    #: NUMBER.eml); sanitized like every name, never a path.  Not in --json.
    filename: str | None = None
    #: The entry's bytes never change once published (a numbered news
    #: article): -r does not fetch it again when its file exists.
    immutable: bool = False

    def as_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "name": self.name,
            "url": self.url,
            "type": self.type,
            "size": self.size,
            "description": self.description,
        }
        # Only the facts a listing gave, so other schemes' rows keep their shape.
        if self.modified is not None:
            row["modified"] = self.modified.isoformat()
        if self.target is not None:
            row["target"] = self.target
        if self.mode is not None:
            row["mode"] = self.mode
        row.update(self.extra)
        return row


@dataclass
class Advisory:
    """Something to tell the user instead of bytes (telnet, mailto, a form)."""

    title: str
    text: str
    fields: dict[str, Any] = field(default_factory=dict)


Closer = Callable[[], Awaitable[None]]


@runtime_checkable
class DirectBody(Protocol):
    """A body that can also fill a caller's buffer (an FTP RETR in image mode, see `Resource.readinto`)."""

    @property
    def direct(self) -> bool: ...

    async def readinto(self, view: memoryview) -> int: ...

    @property
    def can_splice(self) -> bool: ...

    async def splice_into(self, pipe: int, count: int) -> int: ...


class _Counted:
    """A body handed on as it is, its bytes counted in `Resource.bytes_read`."""

    __slots__ = ("_body", "_resource")

    def __init__(self, resource: Resource, body: AsyncIterator[bytes]) -> None:
        self._resource = resource
        self._body = body

    def __aiter__(self) -> _Counted:
        return self

    async def __anext__(self) -> bytes:
        chunk = await self._body.__anext__()
        self._resource.bytes_read += len(chunk)
        return chunk


class Resource:
    """A retrieved resource.

    Documents are read by async iteration (`async for chunk in resource`) or
    `await resource.read()`; the body can be consumed once.  Listings carry
    `entries`; advisories carry `advisory`.  `aclose()` releases the
    connection (back to its pool when the body was read to the end).
    """

    def __init__(
        self,
        url: URL,
        kind: Kind,
        *,
        content_type: str | None = None,
        size: int | None = None,
        body: AsyncIterator[bytes] | None = None,
        entries: list[Entry] | None = None,
        advisory: Advisory | None = None,
        offset: int = 0,
        modified: datetime | None = None,
        filename: str | None = None,
        metadata: dict[str, Any] | None = None,
        closer: Closer | None = None,
    ) -> None:
        self.url = url
        self.kind = kind
        self.content_type = content_type
        #: Total size of the document in bytes, when the server said.
        self.size = size
        self.entries: list[Entry] = entries if entries is not None else []
        self.advisory = advisory
        #: Where the body starts in the whole document (non-zero when resumed).
        self.offset = offset
        self.modified = modified
        #: A file name the server suggested (never used unsanitized).
        self.filename = filename
        self.metadata: dict[str, Any] = metadata if metadata is not None else {}
        #: Limit set by the client (--max-size); exceeding it raises TooLarge.
        self.max_size: int | None = None
        #: Time rules of the retrieval (--max-time, low-speed), set by the client.
        self.budget: Budget | None = None
        self.bytes_read = 0
        self._body = body
        self._closer = closer
        self._closed = False
        #: The archive tap of this retrieval (fetcher.archive.tap), when something records.
        self.tap: Tap | None = None
        #: --limit-rate: the client's token bucket, shared by all its transfers (None: no limit).
        self.rate: RateLimiter | None = None

    def __repr__(self) -> str:
        return f"<Resource {self.kind} {self.url} type={self.content_type} size={self.size}>"

    def __aiter__(self) -> AsyncIterator[bytes]:
        body = self._body
        plain = self.budget is None and self.max_size is None and self.tap is None and self.rate is None
        if body is not None and plain:
            # Nothing to apply per chunk (a bulk lane reads under its own budget): hand the body
            # on with a count, without an async generator (trio registers and finalizes each one).
            self._body = None
            return _Counted(self, body)
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        if self._body is None:
            return
        body, self._body = self._body, None
        budget = self.budget
        tap = self.tap
        rate = self.rate
        while True:
            try:
                chunk = await _bounded(budget, body.__anext__)
            except StopAsyncIteration:
                if tap is not None:
                    tap.complete = True
                return
            self._account(len(chunk))
            if tap is not None:
                tap.payload(chunk)
            if rate is None:
                yield chunk
                continue
            # --limit-rate: handed on in slices of an eighth of a second's worth, each after
            # its wait (so concurrent transfers cannot each take a slice up front), smooth
            # whatever the read size; the next read waits for the last slice.
            step = rate.slice
            for start in range(0, len(chunk), step):
                piece = chunk[start : start + step] if len(chunk) > step else chunk
                await _pace(rate.delay(len(piece)), budget)
                yield piece

    @property
    def direct(self) -> bool:
        """True when `readinto` may be used instead of iteration.

        The handler's body fills a caller's buffer itself (a plain byte stream:
        no decoding, no TLS) and nothing needs to see each chunk (no archive
        tap, no --limit-rate); the body has not been iterated.
        """
        body = self._body
        return (
            isinstance(body, DirectBody)
            and body.direct
            and self.tap is None
            and self.rate is None
            and self.kind == "document"
        )

    async def readinto(self, view: memoryview) -> int:
        """Fill `view` with the next bytes of the body (only when `direct`); 0 at its end.

        The same rules as iteration: the read runs under this resource's time
        rules, and the bytes count against --max-size before the caller sees them.
        """
        return await self._direct_read(cast(DirectBody, self._body).readinto, view)  # the caller asked `direct` first

    @property
    def can_splice(self) -> bool:
        """True when `direct` and `splice_into` moves the body inside the kernel (Linux, plain TCP, trio)."""
        return self.direct and cast(DirectBody, self._body).can_splice

    async def splice_into(self, pipe: int, count: int) -> int:
        """Move up to `count` next bytes of the body into `pipe` (only when `can_splice`); 0 at its end.

        The same rules as `readinto`: past --max-size it raises before the caller takes the bytes from the pipe.
        """
        return await self._direct_read(cast(DirectBody, self._body).splice_into, pipe, count)

    async def _direct_read(self, read: Callable[..., Awaitable[int]], *args: Any) -> int:
        count = await _bounded(self.budget, read, *args)
        self._account(count)
        return count

    def _account(self, count: int) -> None:
        """Count `count` more bytes of the body: past --max-size, fail before the caller sees them."""
        self.bytes_read += count
        limit = self.max_size
        if limit is not None and self.bytes_read > limit:
            raise TooLarge(
                f"the body is larger than the limit of {limit} bytes",
                hint="raise --max-size if you expected this",
                url=str(self.url),
            )

    async def read(self) -> bytes:
        """The whole body in memory; use iteration for large documents."""
        parts = [chunk async for chunk in self]
        return b"".join(parts)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        body, self._body = self._body, None
        tap, self.tap = self.tap, None
        try:
            if body is not None and hasattr(body, "aclose"):
                await body.aclose()
            if self._closer is not None:
                await self._closer()
        finally:
            if tap is not None:
                await _settle_tap(tap, self)

    async def __aenter__(self) -> Resource:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def check_length(resource: Resource, written: int) -> None:
    """A body that ended short of (or past) the size its server announced is not complete."""
    if resource.size is not None and written != resource.size:
        raise ProtocolError(
            f"transfer ended at {written} of {resource.size} bytes",
            hint="run again with -C/--continue to resume",
        )


async def _bounded(budget: Budget | None, read: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`read(*args)` under a resource's time rules, for iteration and direct reads alike.

    Its budget is the current one while the read runs (even when the caller
    reads several resources in turn), and its deadline is a backstop for
    bodies that do not come through a `Connection`.
    """
    token = current_budget.set(budget) if budget is not None else None
    try:
        with aio.cancel_scope(deadline=budget.deadline if budget is not None else math.inf) as scope:
            result = await read(*args)
    finally:
        if token is not None:
            current_budget.reset(token)
    if scope.cancelled_caught:
        assert budget is not None
        raise budget.expired()
    return result


async def _pace(seconds: float, budget: Budget | None) -> None:
    """Wait before the next read (--limit-rate), still within --max-time."""
    if seconds <= 0:
        return
    with aio.cancel_scope(deadline=budget.deadline if budget is not None else math.inf) as scope:
        await aio.sleep(seconds)
    if scope.cancelled_caught:
        assert budget is not None
        raise budget.expired()


async def _settle_tap(tap: Tap, resource: Resource) -> None:
    """Archive a retrieval that completed (a document read to its end); forget one that did not."""
    if resource.kind != "document" or tap.complete:
        with aio.cancel_scope(shield=True):
            await tap.commit(resource)
    else:
        tap.discard()

"""The body of one RETR: read as chunks, or into the caller's buffer.

Either way the transfer ends the same: the data connection closed, the
final reply read (a refusal raises), and in image mode the byte count held
to what SIZE announced, so a cut transfer never looks complete.
`readinto` is the fast path of a plain (image mode, no TLS) download: the
sink reads straight into its own buffers, with no bytes object and no
generator step per read (issue 17: a 1 GiB RETR).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fetcher.errors import ProtocolError, TransientError
from fetcher.handler import Connection
from fetcher.schemes.ftp.control import Control, transient_from
from fetcher.schemes.ftp.data import AsciiDecoder
from fetcher.schemes.ftp.replies import Reply, error_for

if TYPE_CHECKING:
    from fetcher.handler import Validators


def resume_problem(
    wanted: int, code: str, size: int | None, modified: datetime | None, recorded: Validators | None
) -> str | None:
    """Why a RETR cannot continue a local part of `wanted` bytes with REST, or None when it can.

    FTP has no validator: SIZE and MDTM, asked before RETR, are compared with
    what they were when the part was begun (`recorded`), so a file changed on
    the server is fetched whole rather than spliced onto the old head.
    """
    from fetcher.handler import Validators, seconds

    if code != "I":
        return "an ASCII-mode transfer cannot resume (its byte counts differ between the two sides)"
    if size is None:
        return "the server does not tell the file's size (SIZE), so the part on disk cannot be checked"
    if recorded is not None:
        changed = recorded.changed(Validators(modified=seconds(modified), length=size))
        if changed is not None:
            return changed
    if wanted > size:
        return f"the local part ({wanted} bytes) is longer than the file on the server ({size} bytes)"
    return None


@dataclass(eq=False)
class RetrBody:
    """An async iterator of chunks that can also fill a buffer (`readinto`); read one way only."""

    control: Control
    data: Connection
    #: The RETR's reply when it was already final (no 1xx first); None: the final reply is read at the end.
    final: Reply | None
    name: str
    decoder: AsciiDecoder | None
    expected: int | None
    received: int = field(default=0, init=False)
    #: Iterated (then `readinto` may not be used); the data connection reached its end.
    _iterated: bool = field(default=False, init=False)
    _ended: bool = field(default=False, init=False)
    _done: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.control.transferring = True

    @property
    def direct(self) -> bool:
        """True when the bytes on the wire are the document (no ASCII decoding, no TLS): `readinto` may be used."""
        return self.decoder is None and not self.data.is_tls and not self._iterated

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        """The next chunk; after the last, the data connection closed and the final reply checked.

        A plain coroutine, not an async generator: a bulk run reads thousands
        of small bodies, and trio registers and finalizes every generator.
        """
        self._iterated = True
        decoder = self.decoder
        while not self._ended:
            try:
                chunk = await self.data.receive_some()
            except ProtocolError as error:
                self.control.healthy = False
                await self.data.aclose()
                raise transient_from(error, f"receiving {self.name!r}") from None
            except BaseException:
                await self.data.aclose()
                raise
            if not chunk:
                self._ended = True
                if decoder is not None and (tail := decoder.flush()):
                    return tail
                break
            self.received += len(chunk)
            if decoder is not None:
                chunk = decoder.feed(chunk)
                if not chunk:
                    continue
            return chunk
        if not self._done:
            self._done = True
            await self.data.aclose()
            await self._finish()
        raise StopAsyncIteration

    @property
    def can_splice(self) -> bool:
        """True when `splice_into` moves the bytes inside the kernel (see `Connection.can_splice`)."""
        return self.direct and self.data.can_splice

    async def readinto(self, view: memoryview) -> int:
        """Fill `view` with the next bytes; 0 once the transfer ended well (then it is complete)."""
        return await self._direct(self.data.receive_into, view)

    async def splice_into(self, pipe: int, count: int) -> int:
        """Move up to `count` next bytes into `pipe` (only when `can_splice`); 0 once the transfer ended well."""
        return await self._direct(self.data.splice_into, pipe, count)

    async def _direct(self, read: Callable[..., Awaitable[int]], *args: Any) -> int:
        if self._done:
            return 0
        try:
            count = await read(*args)
        except ProtocolError as error:
            self.control.healthy = False
            raise transient_from(error, f"receiving {self.name!r}") from None
        if count:
            self.received += count
            return count
        self._done = True
        await self.data.aclose()
        await self._finish()
        return 0

    async def aclose(self) -> None:
        await self.data.aclose()

    async def _finish(self) -> None:
        """After the last byte: the final reply must be a success, and all SIZE bytes there."""
        control = self.control
        reply = self.final if self.final is not None else await control.final_reply()
        control.transferring = False
        if not reply.ok:
            raise error_for(reply, f"retrieving {self.name!r}", hint="try again; -C/--continue resumes a saved file")
        if self.expected is not None and self.received != self.expected:
            raise TransientError(
                f"the transfer of {self.name!r} ended after {self.received} of {self.expected} bytes",
                hint="try again; -C/--continue resumes a saved file",
            )

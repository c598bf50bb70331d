"""The structured tap: what one retrieval said and heard, for a recorder (WARC).

Handlers already tell the trace logger every protocol line they send and
receive; this module makes that a structured stream a recorder can keep:

* `Tap.request` / `Tap.response`: bytes exactly as they crossed the wire, for
  protocols whose archive form is the exchange itself (HTTP);
* `Tap.listing`: a listing as the server sent it (before parsing), with a
  media type the handler names;
* the document payload, which passes through `Resource` iteration (the one
  place every payload passes), so handlers need not report it;
* the dialogue: every line on the `fetcher.trace` logger while the
  retrieval is current (already masked: "PASS ****", no URL passwords).

A `Tap` exists only while a recorder is active (`recording`); otherwise
`current()` is None and every call site is one attribute test.  Payloads are
spooled to a temporary file (a little in memory, the rest on disk), so a
large document never sits in memory; the recorder gets a `Capture` only when
the retrieval completed, and writes nothing for one that failed.

The tap knows no protocol and no archive format (its payloads go through
`fetcher.archive.spool`): `fetcher.archive.recorder` turns a `Capture` into
records.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from fetcher.archive.spool import Sink, Spool

if TYPE_CHECKING:
    from fetcher.resource import Resource

#: Most bytes of dialogue kept per retrieval (an endless listing traced line
#: by line must not grow without bound); past it the dialogue says so.
DIALOGUE_BYTES = 1 << 20


@dataclass
class Exchange:
    """One request and the bytes that answered it, as on the wire."""

    request: bytes
    response: Spool = field(default_factory=lambda: Spool(head=True))


@dataclass
class Capture:
    """A completed retrieval, handed to the recorder (see module docstring)."""

    url: str
    scheme: str
    kind: str
    content_type: str | None
    #: Wire exchanges (HTTP); when present they are the whole record.
    exchanges: list[Exchange]
    #: The payload (document bytes, or the listing as the server sent it).
    payload: Spool | None
    dialogue: list[str]
    #: Set when the retrieval was one hop of a redirect.
    hop: bool = False
    #: Why the last response is not whole (WARC-Truncated: "length", "disconnect"), if it is not.
    truncated: str | None = None

    def close(self) -> None:
        for exchange in self.exchanges:
            exchange.response.close()
        if self.payload is not None:
            self.payload.close()


class Recorder(Protocol):
    """Something that keeps captures (fetcher.archive.recorder.WarcRecorder)."""

    async def record(self, capture: Capture) -> None:
        """Keep a completed retrieval; the recorder closes the capture once written."""

    def sink(self, spool: Spool, url: str, early: bytes) -> Sink | None:
        """Take a large payload's bytes as they arrive (None: spool them to a temporary file)."""


class Tap:
    """One retrieval's structured trace (see module docstring)."""

    def __init__(self, recorder: Recorder, url: str, scheme: str, *, keeps_dialogue: bool = True) -> None:
        self.recorder = recorder
        self.url = url
        self.scheme = scheme
        #: Whether the trace lines are kept as the dialogue: the handler's hook says (HTTP's wire
        #: records say it all: its trace lines are not built for the archive).
        self.keeps_dialogue = keeps_dialogue
        self.exchanges: list[Exchange] = []
        self.dialogue: list[str] = []
        self._dialogue_bytes = 0
        self._payload: Spool | None = None
        self._listing: Spool | None = None
        self.listing_type: str | None = None
        self.complete = False
        #: Set by a handler when a failure is itself an answer worth archiving (an HTTP error page).
        self.answered = False
        #: Set by a handler that stopped reading a response early (see `Capture.truncated`).
        self.truncated: str | None = None
        self.closed = False

    def __repr__(self) -> str:
        return f"<Tap {self.url} exchanges={len(self.exchanges)} closed={self.closed}>"

    # -- what handlers report ------------------------------------------------

    def request(self, data: bytes) -> None:
        """A request as sent (secrets already masked by the handler); starts an exchange."""
        if not self.closed:
            self.exchanges.append(Exchange(bytes(data), Spool(head=True, owner=self)))

    def response(self, data: bytes) -> None:
        """Bytes received in answer to the last `request`, as they arrived."""
        if not self.closed and self.exchanges and data:
            self.exchanges[-1].response.write(data)

    def listing(self, data: bytes, content_type: str | None = None) -> None:
        """Listing bytes as the server sent them; `content_type` names their format."""
        if self.closed:
            return
        if self._listing is None:
            self._listing = Spool(owner=self)
        if content_type is not None:
            self.listing_type = content_type
        self._listing.write(data)

    def line(self, text: str) -> None:
        """One dialogue line ("> sent", "< received", "* note"), already masked."""
        if self.closed:
            return
        if self._dialogue_bytes > DIALOGUE_BYTES:
            return
        self._dialogue_bytes += len(text) + 2
        if self._dialogue_bytes > DIALOGUE_BYTES:
            text = f"* (dialogue cut at {DIALOGUE_BYTES} bytes)"
        self.dialogue.append(text)

    # -- what the core reports -----------------------------------------------

    def payload(self, data: bytes) -> None:
        """Document bytes as the Resource hands them out (not kept when the wire exchange is the record)."""
        if self.closed or self.exchanges:
            return
        if self._payload is None:
            self._payload = Spool(owner=self)
        self._payload.write(data)

    async def commit(self, resource: Resource | None = None, *, hop: bool = False) -> None:
        """Hand what was captured to the recorder (once); a hop is a redirect answered by another URL."""
        if self.closed:
            return
        self.closed = True
        kind = resource.kind if resource is not None else "redirect"
        content_type = resource.content_type if resource is not None else None
        payload: Spool | None = None
        if not self.exchanges:
            if kind in ("listing", "advisory") and self._listing is not None:
                payload, self._listing = self._listing, None
                content_type = self.listing_type or content_type
            elif kind == "listing":
                if resource is not None:
                    payload = _entries_spool(resource)
                    content_type = "application/x-fetcher-listing+jsonl"
            elif kind == "document":
                payload, self._payload = self._payload, None
                if payload is None:
                    payload = Spool()
            elif kind == "advisory" and resource is not None and resource.advisory is not None:
                payload = Spool()
                payload.write(resource.advisory.text.encode("utf-8"))
                content_type = "text/plain; charset=utf-8"
        # Wire exchanges are the dialogue themselves: no second copy from the trace.
        dialogue = [] if self.exchanges else self.dialogue
        capture = Capture(self.url, self.scheme, kind, content_type, self.exchanges, payload, dialogue, hop,
                          self.truncated)  # fmt: skip
        self.exchanges = []
        self._drop()
        try:
            await self.recorder.record(capture)  # the recorder closes it once written
        except BaseException:
            capture.close()
            raise

    def discard(self) -> None:
        """The retrieval failed: nothing of it is archived."""
        if self.closed:
            return
        self.closed = True
        for exchange in self.exchanges:
            exchange.response.close()
        self.exchanges = []
        self._drop()

    def _drop(self) -> None:
        for spool in (self._payload, self._listing):
            if spool is not None:
                spool.close()
        self._payload = self._listing = None


def _entries_spool(resource: Resource) -> Spool:
    """A listing no server sent as bytes (a local directory, WAIS hits, a Prospero directory): one JSON row a line."""
    spool = Spool()
    for entry in resource.entries:
        spool.write(json.dumps(entry.as_dict(), ensure_ascii=False, default=str).encode("utf-8") + b"\n")
    return spool


_recorder: ContextVar[Recorder | None] = ContextVar("fetcher_recorder", default=None)
_tap: ContextVar[Tap | None] = ContextVar("fetcher_tap", default=None)


def current() -> Tap | None:
    """The tap of the retrieval this task is running, or None when nothing records."""
    tap = _tap.get()
    return tap if tap is not None and not tap.closed else None


def active_recorder() -> Recorder | None:
    return _recorder.get()


def start(url: str, scheme: str, *, keeps_dialogue: bool = True) -> Tap | None:
    """A new tap for a retrieval starting in this task (None when nothing records).

    `keeps_dialogue`: the handler's hook (`fetcher.handler.Handler.keeps_dialogue`).
    """
    recorder = _recorder.get()
    if recorder is None:
        return None
    tap = Tap(recorder, url, scheme, keeps_dialogue=keeps_dialogue)
    _tap.set(tap)
    return tap


class _TraceToTap(logging.Handler):
    """Every trace line goes to the current tap as dialogue (after the logger's masking filter)."""

    def emit(self, record: logging.LogRecord) -> None:
        tap = current()
        if tap is not None:
            try:
                tap.line(record.getMessage())
            except Exception:  # pragma: no cover - a malformed log call must not break a retrieval
                self.handleError(record)


@contextmanager
def recording(recorder: Recorder) -> Iterator[None]:
    """Make `recorder` keep every retrieval started inside (a Client reads it per retrieval)."""
    trace = logging.getLogger("fetcher.trace")
    handler = _TraceToTap(logging.DEBUG)
    trace.addHandler(handler)
    enabled = trace.isEnabledFor

    def enabled_for_tap(level: int) -> bool:
        # The trace is built only where it is kept: on -v, or for a retrieval
        # whose dialogue goes to the archive (not HTTP's, whose wire records
        # say it all: formatting its heads line by line doubled a bulk run's cost).
        if enabled(level):
            return True
        tap = current()
        return tap is not None and tap.keeps_dialogue and not tap.exchanges

    trace.isEnabledFor = enabled_for_tap  # type: ignore[method-assign]
    token = _recorder.set(recorder)
    try:
        yield
    finally:
        _recorder.reset(token)
        trace.removeHandler(handler)
        del trace.isEnabledFor

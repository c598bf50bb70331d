"""What a retrieval comes back as (`Fetched`, `Outcome`), and the context of a bulk run's tasks.

`Client.fetch` returns a `Fetched`; `fetch_all` yields an `Outcome` per URL.
They live in the bulk room, below the client, so that the engine
(batch.py, lanes.py) never imports the client at run time: the client
stands above bulk and hands itself in.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fetcher.errors import FetchError
from fetcher.resource import Advisory, Entry, Resource
from fetcher.url import URL, redact

if TYPE_CHECKING:
    from fetcher.disk.writer import Download
    from fetcher.handler.session import Origin

#: The origin -u credentials belong to inside `fetch_all` (its first URL):
#: set per worker task, read when a top-level retrieval starts (`Client._session`).
bulk_user_origin: ContextVar[Origin | None] = ContextVar("fetcher_bulk_user_origin", default=None)


@dataclass
class Fetched:
    """A whole retrieval in memory: what `Client.fetch` returns."""

    url: URL
    kind: str
    content: bytes = b""
    entries: list[Entry] = field(default_factory=list)
    advisory: Advisory | None = None
    content_type: str | None = None
    size: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    @classmethod
    def without_body(cls, resource: Resource) -> Fetched:
        """A listing or advisory saved nowhere (`retrieve`, bulk lanes): its facts, no content or size."""
        return cls(
            url=resource.url,
            kind=resource.kind,
            entries=resource.entries,
            advisory=resource.advisory,
            content_type=resource.content_type,
            metadata=resource.metadata,
        )

    @classmethod
    def with_body(cls, resource: Resource, content: bytes) -> Fetched:
        """`resource` read into memory (`Client.fetch`): its facts, `content` (b"" but for a document) and its size."""
        fetched = cls.without_body(resource)
        fetched.content = content
        fetched.size = resource.size
        return fetched


@dataclass
class Outcome:
    """One URL of `fetch_all`: a result or an error, never both."""

    url: str
    result: Fetched | Download | None = None
    error: FetchError | None = None
    attempts: int = 1
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    def __repr__(self) -> str:
        state = "ok" if self.error is None else f"error={self.error!r}"
        return f"Outcome(url={redact(self.url)!r}, {state}, attempts={self.attempts}, seconds={self.seconds:.3f})"

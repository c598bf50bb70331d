"""The manifest of a bulk run: one JSON object per URL, written and flushed as each finishes.

`job_record` builds the object every outcome of a run is told as (the
manifest's line, -w's fields, the run's tally); `Manifest` appends it to
--manifest FILE, with no password of any URL in any text field.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from fetcher.disk.names import output_error
from fetcher.text import mask_secrets

if TYPE_CHECKING:
    from fetcher.cli.jobs import Job
    from fetcher.errors import FetchError


class Manifest:
    """One JSON object per URL, written and flushed as each finishes."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._sink: IO[str] | None = None
        if path:
            try:
                self._sink = open(path, "a+", encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
                end = self._sink.tell()
                if end > 0:
                    # A run cut short may have left half a line: end it, so the next record stays whole.
                    self._sink.seek(end - 1)
                    if self._sink.buffer.read(1) != b"\n":
                        self._sink.write("\n")
            except OSError as error:
                raise output_error(error, path) from None

    def write(self, record: dict[str, Any]) -> None:
        if self._sink is not None:
            import json  # --manifest only: a run without one never loads it (issue 17)

            try:
                self._sink.write(json.dumps(masked(record), ensure_ascii=True) + "\n")
                self._sink.flush()
            except OSError as error:
                raise output_error(error, self.path or "manifest") from None

    def close(self) -> None:
        if self._sink is not None:
            try:
                self._sink.close()
            except OSError:
                pass  # already reported by write()


def masked(record: dict[str, Any]) -> dict[str, Any]:
    """The record as the manifest shows it: no password of any URL in any text field."""
    return {key: mask_secrets(value) if isinstance(value, str) else value for key, value in record.items()}


def job_record(job: Job, status: str, *, error: FetchError | None = None, **values: Any) -> dict[str, Any]:
    """A job's record: its URL, status, exit code and error, then what `values` add (bytes, path, reason...)."""
    made: dict[str, Any] = {
        "url": str(job.url) if job.url is not None else job.text,
        "status": status,
        "exit_code": error.exit_code if error is not None else 0,
        "error": error.message if error is not None else None,
        "bytes": None,
        "sha256": None,
        "path": None,
        "content_type": None,
        "attempts": 0,
        "seconds": 0.0,
    }
    if job.line is not None:
        made["line"] = job.line
    if job.parent is not None:
        made["parent"] = job.parent
        made["depth"] = job.depth
    made.update(values)
    return made

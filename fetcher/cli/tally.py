"""One tally of a bulk run: every URL's outcome counted once, and the line the run ends with.

A plain run says how many URLs were retrieved, failed, skipped and
interrupted; a mirror (-r) says the same records as new, updated and
unchanged files (a listing counts as a file only when it changed), with
the skipped and interrupted ones together.  Both lines are read off the
one tally the run keeps (fetcher.cli.run), so they cannot disagree.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Tally:
    """The counts of one run (see the module docstring)."""

    ok: int = 0
    failed: int = 0
    skipped: int = 0
    interrupted: int = 0
    #: Bytes of the documents saved.
    bytes: int = 0
    #: The saved ones (and changed listings), by what became of the local copy (-r).
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    started: float = field(default_factory=time.monotonic)

    def count(self, status: str, size: int | None, *, change: str | None = None, listed: bool = False) -> None:
        """One URL's outcome: its status, the bytes saved, and for a mirror its `change`
        ("new", "updated", "unchanged"; `listed`: a listing or advisory, a file only when it has one)."""
        if status == "ok":
            self.ok += 1
            self.bytes += size or 0
            if change == "unchanged":
                self.unchanged += 1
            elif change == "updated":
                self.updated += 1
            elif change is not None or not listed:
                self.new += 1
        elif status == "failed":
            self.failed += 1
        elif status == "interrupted":
            self.interrupted += 1
        else:
            self.skipped += 1

    def line(self, *, mirror: bool = False) -> str:
        """The run's last line on stderr: a mirror's, or a plain run's."""
        seconds = time.monotonic() - self.started
        if mirror:
            return (
                f"fetch: mirror: {self.new} new, {self.updated} updated, {self.unchanged} unchanged, "
                f"{self.skipped + self.interrupted} skipped, {self.failed} failed; "
                f"{self.bytes} bytes in {seconds:.2f} s\n"
            )
        parts = [f"{self.ok} retrieved", f"{self.failed} failed"]
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        if self.interrupted:
            parts.append(f"{self.interrupted} interrupted")
        return f"fetch: {', '.join(parts)}; {self.bytes} bytes in {seconds:.2f} s\n"


def interrupted_line(parts: int, manifest: str | None) -> str:
    """What Ctrl-C left and how to go on: `.part` files only when there are some, the manifest by its name."""
    again = f"--skip-done {manifest}" if manifest else "--manifest FILE next time, then --skip-done FILE,"
    if not parts:
        return f"fetch: interrupted; rerun with {again} to retrieve the rest\n"
    kept = "1 .part file" if parts == 1 else f"{parts} .part files"
    return f"fetch: interrupted; {kept} kept, rerun with -C {again} to resume\n"

"""warcio, loaded without fsspec: what the archive room does around every import of warcio.

warcio imports fsspec when it is installed (the --cluster extra), for file
opening fetcher never asks of it: a fifth of the time --warc-file adds to a
start.  `fsspec_hidden` hides it while warcio loads, unless something loaded
it before; whoever imports it later gets it as usual.  (A module of its own
so that both the record writer and the CDX reader can use it without one
importing the other.)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def fsspec_hidden() -> Iterator[None]:
    """Inside: `import fsspec` fails (as if it were not installed), unless it was imported before."""
    hide = "fsspec" not in sys.modules
    if hide:
        sys.modules["fsspec"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if hide:
            del sys.modules["fsspec"]

"""The content type a file name suggests, the same for every scheme and every moment of a run.

Python's own table answers first: it is the same on every machine and is
there at import, while `mimetypes.guess_type` first reads the system's
tables (/etc/mime.types: 2,000 lines, about 1.5 ms of a 100 ms fetch).  The
system's tables answer the rest.  Python's table is copied here at import,
because reading the system's tables replaces `mimetypes.types_map` with a
merged one (where, on Debian, `.xml` turns from text/xml to
application/xml): a name's type must not depend on what a run did before.
"""

from __future__ import annotations

import mimetypes
import posixpath

_OWN = dict(mimetypes.types_map)
_OWN_LOOSE = dict(mimetypes.common_types)


def guess_type(name: str, *, strict: bool = True) -> str | None:
    """The type `name`'s extension suggests (`strict=False`: the common non-standard types too), or None."""
    extension = posixpath.splitext(name)[1]
    if not extension:
        return None  # the tables know extensions only
    for table in (_OWN,) if strict else (_OWN, _OWN_LOOSE):
        known = table.get(extension) or table.get(extension.lower())
        if known:
            return known
    return mimetypes.guess_type(name, strict=strict)[0]

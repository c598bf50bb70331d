"""ftp:// and ftps:// URLs (RFC 1738 §3.2) over RFC 959, with FTPS (RFC 4217).

`replies` and `data` are the pure codec (replies, command lines, NLST names,
ASCII line ends); `listing` (with `listed`, `mlsd` and `dialects`) reads
MLSD and LIST listings; `control` is the trio conversation on the control
connection; `login` logs in and names the pool key; `operate` runs one URL
(CWDs, typecodes, RETR) and `directory` lists; `handler` takes connections
from the pool and gives them back; `lane` keeps one for a bulk run's URLs.
"""

from fetcher.schemes.ftp.handler import Handler

__all__ = ["Handler"]

"""ftp:// and ftps:// URLs (RFC 1738 §3.2) over RFC 959, with FTPS (RFC 4217).

`replies` and `data` are the pure codec (replies, command lines, NLST names,
ASCII line ends); `control` is the trio conversation on the control
connection; `handler` turns URLs into resources and pools connections.
"""

from schemes.ftp.handler import Handler

__all__ = ["Handler"]

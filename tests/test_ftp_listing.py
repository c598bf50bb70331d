"""The pure listing parser (schemes/ftp/listing.py) on what real servers send, and fuzzed.

The vsftpd 3.0.3, pyftpdlib 2.2.0, Pure-FTPd 1.0.50, ProFTPD 1.3.8 and GNU
inetutils 2.4 ftpd listings below were captured byte for byte (the Debian
bookworm packages, run privately on 127.0.0.1, LIST and MLSD over ftplib)
from one tree made for the purpose on 2026-11-24 at 02:36 UTC:

    big.bin                123456 bytes, 2019-03-03 04:05:06 UTC
    dir with space/        mode 0700
    future.txt             empty, setuid, 2027-06-01 00:00:00 UTC
    link-to-readme         symlink to readme.txt, 2025-01-02 03:04:05 UTC
    linkdir                symlink to subdir
    name with  spaces.txt  1 byte (two spaces inside the name)
    null-device            character device 1,3
    pipe                   FIFO
    readme.txt             6 bytes, 2026-10-01 12:34:56 UTC
    subdir/

The DOS/IIS, EPLF, VMS and NetWare samples are written from the formats'
documentation (IIS's MS-DOS directory style, D. J. Bernstein's EPLF page,
the OpenVMS DIRECTORY/FULL layout as VMS FTP servers send it, and the
NetWare FTP server's listing as documented by ftpparse and curl), not
captured: no such server runs here.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fetcher.errors import LimitExceeded
from fetcher.schemes.ftp.dialects import parse_list_line
from fetcher.schemes.ftp.listed import Listed
from fetcher.schemes.ftp.listing import parse_list, parse_mlsd
from fetcher.schemes.ftp.mlsd import parse_mlsd_line
from fetcher.url import FtpURL

#: When the listings were captured: "Mon DD HH:MM" dates are read relative to it.
NOW = datetime(2026, 11, 24, 2, 37, tzinfo=UTC)
BIG = 10**9


def lines(*rows: str, end: str = "\r\n") -> bytes:
    return "".join(row + end for row in rows).encode()


def facts(entries: list[Listed]) -> dict[str, tuple[object, ...]]:
    """name -> (type, size, modified ISO or None, precision, target, mode)."""
    return {
        entry.name: (
            entry.type,
            entry.size,
            entry.modified.isoformat() if entry.modified else None,
            entry.precision,
            entry.target,
            entry.mode,
        )
        for entry in entries
    }


def parse(data: bytes) -> list[Listed]:
    return parse_list(data, now=NOW, max_entries=BIG, max_bytes=BIG)


# What every Unix-style LIST above says about the tree (the common part).
UNIX_COMMON = {
    "big.bin": ("file", 123456, "2019-03-03T00:00:00+00:00", "day", None, "-rw-r--r--"),
    "dir with space": ("directory", 4096, "2026-11-24T02:36:00+00:00", "minute", None, "drwx------"),
    "link-to-readme": ("link", 10, "2025-01-02T00:00:00+00:00", "day", "readme.txt", "lrwxrwxrwx"),
    "linkdir": ("link", 6, "2026-11-24T02:36:00+00:00", "minute", "subdir", "lrwxrwxrwx"),
    "name with  spaces.txt": ("file", 1, "2026-11-24T02:36:00+00:00", "minute", None, "-rw-r--r--"),
    "readme.txt": ("file", 6, "2026-10-01T12:34:00+00:00", "minute", None, "-rw-r--r--"),
    "subdir": ("directory", 4096, "2026-11-24T02:36:00+00:00", "minute", None, "drwxr-xr-x"),
}
# The servers other than vsftpd print a future date as "Jun  1 00:00" (time form,
# no year); it reads as the latest such date not after now, last June.
FUTURE_AS_TIME = ("file", 0, "2026-06-01T00:00:00+00:00", "minute", None, "-rwsr-xr-x")
OTHER_DEVICE = ("other", 0, "2026-11-24T02:36:00+00:00", "minute", None, "crw-r--r--")
OTHER_PIPE = ("other", 0, "2026-11-24T02:36:00+00:00", "minute", None, "prw-r--r--")

VSFTPD_LIST = lines(
    "-rw-r--r--    1 0        0          123456 Mar 03  2019 big.bin",
    "drwx------    2 0        0            4096 Nov 24 02:36 dir with space",
    "-rwsr-xr-x    1 0        0               0 Jun 01  2027 future.txt",
    "lrwxrwxrwx    1 0        0              10 Jan 02  2025 link-to-readme -> readme.txt",
    "lrwxrwxrwx    1 0        0               6 Nov 24 02:36 linkdir -> subdir",
    "-rw-r--r--    1 0        0               1 Nov 24 02:36 name with  spaces.txt",
    "crw-r--r--    1 0        0               0 Nov 24 02:36 null-device",
    "prw-r--r--    1 0        0               0 Nov 24 02:36 pipe",
    "-rw-r--r--    1 0        0               6 Oct 01 12:34 readme.txt",
    "drwxr-xr-x    2 0        0            4096 Nov 24 02:36 subdir",
)

PYFTPDLIB_LIST = lines(
    "-rw-r--r--   1 root     root       123456 Mar 03  2019 big.bin",
    "drwx------   2 root     root         4096 Nov 24 02:36 dir with space",
    "-rwsr-xr-x   1 root     root            0 Jun 01 00:00 future.txt",
    "lrwxrwxrwx   1 root     root           10 Jan 02  2025 link-to-readme -> readme.txt",
    "lrwxrwxrwx   1 root     root            6 Nov 24 02:36 linkdir -> subdir",
    "-rw-r--r--   1 root     root            1 Nov 24 02:36 name with  spaces.txt",
    "crw-r--r--   1 root     root            0 Nov 24 02:36 null-device",
    "prw-r--r--   1 root     root            0 Nov 24 02:36 pipe",
    "-rw-r--r--   1 root     root            6 Oct 01 12:34 readme.txt",
    "drwxr-xr-x   2 root     root         4096 Nov 24 02:36 subdir",
)

# Pure-FTPd leaves devices and FIFOs out of LIST (and keeps "." and ".." with -a).
PUREFTPD_LIST_A = lines(
    "drwxr-xr-x    4 root       root             4096 Nov 24 02:36 .",
    "drwxr-xr-x    5 root       root             4096 Nov 24 02:36 ..",
    "-rw-r--r--    1 root       root           123456 Mar  3  2019 big.bin",
    "drwx------    2 root       root             4096 Nov 24 02:36 dir with space",
    "-rwsr-xr-x    1 root       root                0 Jun  1 00:00 future.txt",
    "lrwxrwxrwx    1 root       root               10 Jan  2  2025 link-to-readme -> readme.txt",
    "lrwxrwxrwx    1 root       root                6 Nov 24 02:36 linkdir -> subdir",
    "-rw-r--r--    1 root       root                1 Nov 24 02:36 name with  spaces.txt",
    "-rw-r--r--    1 root       root                6 Oct  1 12:34 readme.txt",
    "drwxr-xr-x    2 root       root             4096 Nov 24 02:36 subdir",
)

PROFTPD_LIST = lines(
    "-rw-r--r--   1 root     root       123456 Mar  3  2019 big.bin",
    "drwx------   2 root     root         4096 Nov 24 02:36 dir with space",
    "-rwsr-xr-x   1 root     root            0 Jun  1 00:00 future.txt",
    "lrwxrwxrwx   1 root     root           10 Jan  2  2025 link-to-readme -> readme.txt",
    "lrwxrwxrwx   1 root     root            6 Nov 24 02:36 linkdir -> subdir",
    "-rw-r--r--   1 root     root            1 Nov 24 02:36 name with  spaces.txt",
    "crw-r--r--   1 root     root            0 Nov 24 02:36 null-device",
    "prw-r--r--   1 root     root            0 Nov 24 02:36 pipe",
    "-rw-r--r--   1 root     root            6 Oct  1 12:34 readme.txt",
    "drwxr-xr-x   2 root     root         4096 Nov 24 02:36 subdir",
)

# GNU inetutils ftpd runs /bin/ls: LF line ends, a "total" line, device numbers.
INETUTILS_LIST_A = lines(
    "total 148",
    "drwxr-xr-x  4 root  root      4096 Nov 24 02:36 .",
    "drwxr-xr-x  5 root  root      4096 Nov 24 02:36 ..",
    "-rw-r--r--  1 root  root    123456 Mar  3  2019 big.bin",
    "drwx------  2 root  root      4096 Nov 24 02:36 dir with space",
    "-rwsr-xr-x  1 root  root         0 Jun  1 00:00 future.txt",
    "lrwxrwxrwx  1 root  root        10 Jan  2  2025 link-to-readme -> readme.txt",
    "lrwxrwxrwx  1 root  root         6 Nov 24 02:36 linkdir -> subdir",
    "-rw-r--r--  1 root  root         1 Nov 24 02:36 name with  spaces.txt",
    "crw-r--r--  1 root  root    1,   3 Nov 24 02:36 null-device",
    "prw-r--r--  1 root  root         0 Nov 24 02:36 pipe",
    "-rw-r--r--  1 root  root         6 Oct  1 12:34 readme.txt",
    "drwxr-xr-x  2 root  root      4096 Nov 24 02:36 subdir",
    end="\n",
)


def test_vsftpd_list() -> None:
    found = facts(parse(VSFTPD_LIST))
    assert found == {
        **UNIX_COMMON,
        # vsftpd prints the year for a future date, so there is nothing to guess.
        "future.txt": ("file", 0, "2027-06-01T00:00:00+00:00", "day", None, "-rwsr-xr-x"),
        "null-device": OTHER_DEVICE,
        "pipe": OTHER_PIPE,
    }
    first = parse(VSFTPD_LIST)[0]
    assert first.extra == {"links": 1, "owner": "0", "group": "0"}


def test_pyftpdlib_and_proftpd_list() -> None:
    expected = {**UNIX_COMMON, "future.txt": FUTURE_AS_TIME, "null-device": OTHER_DEVICE, "pipe": OTHER_PIPE}
    assert facts(parse(PYFTPDLIB_LIST)) == expected
    assert facts(parse(PROFTPD_LIST)) == expected
    assert parse(PROFTPD_LIST)[0].extra == {"links": 1, "owner": "root", "group": "root"}


def test_pureftpd_list_skips_dot_entries() -> None:
    entries = parse(PUREFTPD_LIST_A)
    assert [entry.name for entry in entries][:2] == ["big.bin", "dir with space"]
    assert facts(entries) == {**UNIX_COMMON, "future.txt": FUTURE_AS_TIME}


def test_inetutils_list_total_line_and_device_numbers() -> None:
    entries = parse(INETUTILS_LIST_A)
    assert facts(entries) == {
        **UNIX_COMMON,
        "future.txt": FUTURE_AS_TIME,
        "null-device": ("other", None, "2026-11-24T02:36:00+00:00", "minute", None, "crw-r--r--"),
        "pipe": OTHER_PIPE,
    }
    device = next(entry for entry in entries if entry.name == "null-device")
    assert device.extra["device"] == "1,3"


# -- MLSD ---------------------------------------------------------------------------

PYFTPDLIB_MLSD = lines(
    "modify=20261001123456;perm=r;size=6;type=file;unique=fe00g20c434; readme.txt",
    "modify=20261124023618;perm=r;size=0;type=file;unique=fe00g20c494; pipe",
    "modify=20261124023618;perm=el;size=4096;type=dir;unique=fe00g20c424; dir with space",
    "modify=20261124023618;perm=el;size=4096;type=dir;unique=fe00g20c412; subdir",
    "modify=20261124023618;perm=r;size=0;type=file;unique=fe00g20c484; null-device",
    "modify=20261124023618;perm=r;size=1;type=file;unique=fe00g20c454; name with  spaces.txt",
    "modify=20261001123456;perm=r;size=6;type=file;unique=fe00g20c434; link-to-readme",
    "modify=20261124023618;perm=el;size=4096;type=dir;unique=fe00g20c412; linkdir",
    "modify=20190303040506;perm=r;size=123456;type=file;unique=fe00g20c444; big.bin",
    "modify=20270601000000;perm=r;size=0;type=file;unique=fe00g20c727; future.txt",
)

PUREFTPD_MLSD = lines(
    "type=file;size=6;modify=20261001123456;UNIX.mode=0644;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c434; readme.txt",
    "type=unknown;size=0;modify=20261124023618;UNIX.mode=0644;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c494; pipe",
    "type=cdir;sizd=4096;modify=20261124023623;UNIX.mode=0755;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c402; .",
    "type=dir;sizd=4096;modify=20261124023618;UNIX.mode=0700;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c424; dir with space",
    "type=dir;sizd=4096;modify=20261124023618;UNIX.mode=0755;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c412; subdir",
    "type=unknown;size=0;modify=20261124023618;UNIX.mode=0644;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c484; null-device",
    "type=file;size=1;modify=20261124023618;UNIX.mode=0644;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c454; name with  spaces.txt",  # noqa: E501
    "type=pdir;sizd=4096;modify=20261124023646;UNIX.mode=0755;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c3f2; ..",
    "type=OS.unix=slink:;size=10;modify=20250102030405;UNIX.mode=0777;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c464; link-to-readme",  # noqa: E501
    "type=OS.unix=slink:;size=6;modify=20261124023618;UNIX.mode=0777;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c474; linkdir",
    "type=file;size=123456;modify=20190303040506;UNIX.mode=0644;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c444; big.bin",
    "type=file;size=0;modify=20270601000000;UNIX.mode=04755;UNIX.uid=0;UNIX.gid=0;unique=fe00g20c727; future.txt",
)  # fmt: skip

PROFTPD_MLSD_START = lines(
    "modify=20261001123456;perm=adfr;size=6;type=file;unique=FE00U20C434;UNIX.group=0;UNIX.groupname=fetchuser;"
    "UNIX.mode=0644;UNIX.owner=0;UNIX.ownername=fetchuser; readme.txt",
    "modify=20261124023623;perm=fle;type=cdir;unique=FE00U20C402;UNIX.group=0;UNIX.groupname=fetchuser;"
    "UNIX.mode=0755;UNIX.owner=0;UNIX.ownername=fetchuser; .",
    "modify=20261124023618;perm=;type=dir;unique=FE00U20C424;UNIX.group=0;UNIX.groupname=fetchuser;"
    "UNIX.mode=0700;UNIX.owner=0;UNIX.ownername=fetchuser; dir with space",
    "modify=20250102030405;perm=adfr;size=10;type=OS.unix=symlink;unique=FE00U20C434;UNIX.group=0;"
    "UNIX.groupname=fetchuser;UNIX.mode=0777;UNIX.owner=0;UNIX.ownername=fetchuser; link-to-readme",
)


def mlsd(data: bytes) -> list[Listed]:
    return parse_mlsd(data, max_entries=BIG, max_bytes=BIG)


def test_pyftpdlib_mlsd_follows_links_and_gives_seconds() -> None:
    found = facts(mlsd(PYFTPDLIB_MLSD))
    assert found["readme.txt"] == ("file", 6, "2026-10-01T12:34:56+00:00", "second", None, None)
    assert found["big.bin"] == ("file", 123456, "2019-03-03T04:05:06+00:00", "second", None, None)
    assert found["future.txt"] == ("file", 0, "2027-06-01T00:00:00+00:00", "second", None, None)
    # pyftpdlib describes what a link points to, so the links look like their targets.
    assert found["linkdir"][0] == "directory"
    assert len(found) == 10
    assert mlsd(PYFTPDLIB_MLSD)[2].extra == {"perm": "el", "unique": "fe00g20c424"}


def test_pureftpd_mlsd() -> None:
    found = facts(mlsd(PUREFTPD_MLSD))
    assert found == {
        "readme.txt": ("file", 6, "2026-10-01T12:34:56+00:00", "second", None, "-rw-r--r--"),
        "pipe": ("other", 0, "2026-11-24T02:36:18+00:00", "second", None, "?rw-r--r--"),
        "dir with space": ("directory", None, "2026-11-24T02:36:18+00:00", "second", None, "drwx------"),
        "subdir": ("directory", None, "2026-11-24T02:36:18+00:00", "second", None, "drwxr-xr-x"),
        "null-device": ("other", 0, "2026-11-24T02:36:18+00:00", "second", None, "?rw-r--r--"),
        "name with  spaces.txt": ("file", 1, "2026-11-24T02:36:18+00:00", "second", None, "-rw-r--r--"),
        # "OS.unix=slink:" with the target left out.
        "link-to-readme": ("link", 10, "2025-01-02T03:04:05+00:00", "second", None, "lrwxrwxrwx"),
        "linkdir": ("link", 6, "2026-11-24T02:36:18+00:00", "second", None, "lrwxrwxrwx"),
        "big.bin": ("file", 123456, "2019-03-03T04:05:06+00:00", "second", None, "-rw-r--r--"),
        "future.txt": ("file", 0, "2027-06-01T00:00:00+00:00", "second", None, "-rwsr-xr-x"),
    }


def test_proftpd_mlsd_symlink_and_owner_names() -> None:
    entries = mlsd(PROFTPD_MLSD_START)
    assert facts(entries) == {
        "readme.txt": ("file", 6, "2026-10-01T12:34:56+00:00", "second", None, "-rw-r--r--"),
        "dir with space": ("directory", None, "2026-11-24T02:36:18+00:00", "second", None, "drwx------"),
        "link-to-readme": ("link", 10, "2025-01-02T03:04:05+00:00", "second", None, "lrwxrwxrwx"),
    }
    assert entries[0].extra["unix.ownername"] == "fetchuser"
    assert entries[1].extra["perm"] == ""


def test_mlsd_line_details() -> None:
    link = parse_mlsd_line("type=OS.unix=slink:/srv/ftp/target dir;modify=20200229235959.123; alias")
    assert link is not None
    assert (link.name, link.type, link.target) == ("alias", "link", "/srv/ftp/target dir")
    assert link.modified == datetime(2020, 2, 29, 23, 59, 59, 123000, tzinfo=UTC)
    assert link.precision == "microsecond"
    # Fact names are case-insensitive; a name may hold spaces and ";".
    upper = parse_mlsd_line("Type=DIR;Size=12;Modify=19991231000000; a; b ")
    assert upper is not None and (upper.name, upper.type, upper.size) == ("a; b ", "directory", 12)
    # No facts at all: RFC 3659 still puts the space before the name.
    bare = parse_mlsd_line(" lonely")
    assert bare is not None and (bare.name, bare.type, bare.size, bare.modified) == ("lonely", "unknown", None, None)
    # Impossible dates and sizes are dropped, not guessed.
    bad = parse_mlsd_line("type=file;size=-1;modify=20211332000000; x")
    assert bad is not None and (bad.size, bad.modified, bad.precision) == (None, None, None)
    assert parse_mlsd_line("type=cdir; /home") is None and parse_mlsd_line("type=pdir; ..") is None


# -- written from documentation ----------------------------------------------------------


def test_dos_iis_listing() -> None:
    data = lines(
        "01-16-02  11:14AM       <DIR>          epsgroup",
        "06-05-03  03:19PM                 1973 readme.txt",
        "12-31-99  12:00AM              1,234 midnight.bin",
        "07-04-2025  23:05            5 iis-24-hour.txt",
        "10-10-70  12:30PM       <DIR>          Program Files",
    )
    assert facts(parse(data)) == {
        "epsgroup": ("directory", None, "2002-01-16T11:14:00+00:00", "minute", None, None),
        "readme.txt": ("file", 1973, "2003-06-05T15:19:00+00:00", "minute", None, None),
        "midnight.bin": ("file", 1234, "1999-12-31T00:00:00+00:00", "minute", None, None),
        "iis-24-hour.txt": ("file", 5, "2025-07-04T23:05:00+00:00", "minute", None, None),
        "Program Files": ("directory", None, "1970-10-10T12:30:00+00:00", "minute", None, None),
    }


def test_eplf_listing() -> None:
    # The examples of https://cr.yp.to/ftp/list/eplf.html, plus a mode fact.
    data = lines(
        "+i8388621.29609,m824255902,/,\tdev",
        "+i8388621.44468,m839956783,r,s10376,\tRFCEPLF",
        "+i8388621.48594,m824253270,r,s612,up644,\tmotd",
        "+m824255902,\tno type given",
    )
    entries = parse(data)
    assert facts(entries) == {
        "dev": ("directory", None, "1996-02-13T23:58:22+00:00", "second", None, None),
        "RFCEPLF": ("file", 10376, "1996-08-13T17:19:43+00:00", "second", None, None),
        "motd": ("file", 612, "1996-02-13T23:14:30+00:00", "second", None, "-rw-r--r--"),
        "no type given": ("unknown", None, "1996-02-13T23:58:22+00:00", "second", None, None),
    }
    assert entries[0].extra == {"unique": "8388621.29609"}


def test_vms_listing() -> None:
    data = lines(
        "",
        "Directory DISK$ANON:[ANONYMOUS]",
        "",
        "000README.TXT;3           2/3          5-JUN-2003 14:20:41  [SYSTEM]  (RWED,RWED,RE,RE)",
        "PUB.DIR;1                 1/3         12-JAN-2001 10:15     [ANON,FTP] (RWE,RWE,RE,RE)",
        "A_RATHER_LONG_FILE_NAME_THAT_WRAPS.DAT;12",
        "                        120/120       29-FEB-2024 23:59:59  [SYSTEM]  (RWED,RWED,,)",
        "",
        "Total of 3 files, 123/126 blocks.",
    )
    entries = parse(data)
    assert facts(entries) == {
        "000README.TXT": ("file", None, "2003-06-05T14:20:41+00:00", "second", None, "(RWED,RWED,RE,RE)"),
        "PUB": ("directory", None, "2001-01-12T10:15:00+00:00", "minute", None, "(RWE,RWE,RE,RE)"),
        "A_RATHER_LONG_FILE_NAME_THAT_WRAPS.DAT": (
            "file", None, "2024-02-29T23:59:59+00:00", "second", None, "(RWED,RWED,,)"),
    }  # fmt: skip
    assert entries[0].extra == {"version": 3, "blocks": 2, "owner": "SYSTEM"}
    assert entries[1].extra["owner"] == "ANON,FTP"


def test_netware_listing() -> None:
    data = lines(
        "total 0",
        "d [RWCEAFMS] Supervisor                      512 Jan 16 18:53 login",
        "- [RWCEAFMS] Supervisor                   123456 Mar  3  2019 big.zip",
        "- [R----F--] rhesus                          214 Sep 20 08:31 readme file.txt",
    )
    assert facts(parse(data)) == {
        "login": ("directory", 512, "2026-01-16T18:53:00+00:00", "minute", None, "[RWCEAFMS]"),
        "big.zip": ("file", 123456, "2019-03-03T00:00:00+00:00", "day", None, "[RWCEAFMS]"),
        "readme file.txt": ("file", 214, "2026-09-20T08:31:00+00:00", "minute", None, "[R----F--]"),
    }


def test_unix_variants() -> None:
    data = lines(
        # No group column (ls -o), an ACL marker, sticky bit, block device, socket.
        "-rw-r--r--  1 owner     42 Feb 29 10:00 no-group",
        "drwxrwxrwt+ 9 root root 4096 Nov 24 23:59 tmp",
        "brw-rw----  1 root disk 8, 0 Nov 20 08:00 sda",
        "srwxrwxrwx  1 root root    0 Jan  1  1970 socket",
        # ls --time-style=long-iso.
        "-rw-r--r-- 1 1000 1000 7 2024-05-06 07:08 iso name",
        # A link whose name holds an arrow text only in the target.
        "lrwxrwxrwx 1 u g 9 Nov 23 00:00 l -> a -> b",
    )
    found = facts(parse(data))
    # Feb 29 exists in 2024 only: the latest one not after now.
    assert found["no-group"] == ("file", 42, "2024-02-29T10:00:00+00:00", "minute", None, "-rw-r--r--")
    # 23:59 today is after now, but within a day: a server clock a little ahead.
    assert found["tmp"] == ("directory", 4096, "2026-11-24T23:59:00+00:00", "minute", None, "drwxrwxrwt")
    assert found["sda"] == ("other", None, "2026-11-20T08:00:00+00:00", "minute", None, "brw-rw----")
    assert found["socket"] == ("other", 0, "1970-01-01T00:00:00+00:00", "day", None, "srwxrwxrwx")
    assert found["iso name"] == ("file", 7, "2024-05-06T07:08:00+00:00", "minute", None, "-rw-r--r--")
    assert found["l"] == ("link", 9, "2026-11-23T00:00:00+00:00", "minute", "a -> b", "lrwxrwxrwx")
    assert parse(data)[0].extra == {"links": 1, "owner": "owner"}


def test_year_inference_six_month_rule() -> None:
    # In January, a December date belongs to last year; a date up to a day ahead stays this year.
    january = datetime(2027, 1, 10, 12, 0, tzinfo=UTC)
    dec = parse_list_line("-rw-r--r-- 1 a b 1 Dec 31 23:00 f", january)
    assert dec.modified == datetime(2026, 12, 31, 23, 0, tzinfo=UTC)
    soon = parse_list_line("-rw-r--r-- 1 a b 1 Jan 11 11:00 f", january)
    assert soon.modified == datetime(2027, 1, 11, 11, 0, tzinfo=UTC)
    later = parse_list_line("-rw-r--r-- 1 a b 1 Jan 12 11:00 f", january)
    assert later.modified == datetime(2026, 1, 12, 11, 0, tzinfo=UTC)


def test_unparseable_lines_are_names_of_unknown_type() -> None:
    data = lines("this is not a listing", "-rw-r--r-- 1 a b NaN Jan 1 2020 f", "\x1b[31mred")
    assert [(entry.name, entry.type, entry.size) for entry in parse(data)] == [
        ("this is not a listing", "unknown", None),
        ("-rw-r--r-- 1 a b NaN Jan 1 2020 f", "unknown", None),
        ("\x1b[31mred", "unknown", None),
    ]


def test_unsafe_names_are_dropped() -> None:
    data = lines(
        "-rw-r--r-- 1 a b 1 Jan  1  2020 ../../etc/passwd",
        "-rw-r--r-- 1 a b 1 Jan  1  2020 /abs",
        "-rw-r--r-- 1 a b 1 Jan  1  2020 nul\x00byte",
        "drwxr-xr-x 1 a b 1 Jan  1  2020 .",
        "drwxr-xr-x 1 a b 1 Jan  1  2020 ..",
        "-rw-r--r-- 1 a b 1 Jan  1  2020 kept",
    )
    assert [entry.name for entry in parse(data)] == ["kept"]
    assert [entry.name for entry in mlsd(lines("type=file; a/b", "type=dir; ..", "type=file; ok"))] == ["ok"]


def test_names_are_kept_byte_exact() -> None:
    data = b"-rw-r--r-- 1 a b 1 Jan  1  2020 caf\xc3\xa9 \xff\r\n"
    (entry,) = parse(data)
    assert entry.name == "caf\u00e9 \udcff"
    assert entry.name.encode("utf-8", "surrogateescape") == b"caf\xc3\xa9 \xff"


def test_caps() -> None:
    data = lines(*(f"-rw-r--r-- 1 a b 1 Jan  1  2020 f{i}" for i in range(5)))
    assert len(parse_list(data, now=NOW, max_entries=5, max_bytes=len(data))) == 5
    with pytest.raises(LimitExceeded) as entries:
        parse_list(data, now=NOW, max_entries=4, max_bytes=BIG)
    assert entries.value.limit_name == "listing_entries"
    with pytest.raises(LimitExceeded) as size:
        parse_mlsd(data, max_entries=BIG, max_bytes=len(data) - 1)
    assert size.value.limit_name == "listing_bytes"
    # "." and ".." and headers do not count.
    dots = lines("total 2", "drwxr-xr-x 1 a b 1 Jan  1  2020 .", "drwxr-xr-x 1 a b 1 Jan  1  2020 ..", "x")
    assert len(parse_list(dots, now=NOW, max_entries=1, max_bytes=BIG)) == 1


def test_long_hostile_lines_stay_fast() -> None:
    # A line of spaces or digits must not make the dialect patterns backtrack for long.
    for filler in (" ", "1", "1 ", "a "):
        data = ("-rw-r--r--" + filler * 4000 + "\r\n").encode() * 50
        entries = parse_list(data, now=NOW, max_entries=BIG, max_bytes=BIG)
        assert len(entries) == 50 and entries[0].type == "unknown"


# -- fuzzing -------------------------------------------------------------------------------

_pieces = st.sampled_from([
    "-rw-r--r--", "drwxr-xr-x", "lrwxrwxrwx", "crw-r--r--", " ", "  ", "1", "0", "root", "1, 3", "Jan", "Feb",
    "29", "31", "12:34", "2019", "->", "name", "\r\n", "\n", "\t", "+", "i1", "m999999999999", "s5", "/", "r,",
    "up777", "<DIR>", "01-16-02", "11:14AM", "13:99PM", ";1", "5-JUN-2003", "[RWCEAFMS]", "d", "(RWED,,)",
    "type=", "file", "dir", "cdir", "OS.unix=slink:", "modify=", "20201231235960", ".5", "size=", "unix.mode=",
    "9999", "; ", ".", "..", "\x00", "\udcff", "total 3", "Directory X",
])  # fmt: skip
_listing_text = st.one_of(st.text(max_size=400), st.lists(_pieces, max_size=60).map("".join))
_now = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(9998, 1, 1), timezones=st.just(UTC))


@settings(max_examples=300, deadline=None)
@given(text=_listing_text, now=_now, max_entries=st.integers(0, 20), max_bytes=st.integers(0, 600))
def test_fuzz_any_text_gives_entries_or_limit(text: str, now: datetime, max_entries: int, max_bytes: int) -> None:
    data = text.encode("utf-8", "surrogateescape")
    for run in (
        lambda: parse_list(data, now=now, max_entries=max_entries, max_bytes=max_bytes),
        lambda: parse_mlsd(data, max_entries=max_entries, max_bytes=max_bytes),
    ):
        try:
            entries = run()
        except LimitExceeded as error:
            assert error.limit_name in ("listing_entries", "listing_bytes")
            continue
        assert len(entries) <= max_entries
        for entry in entries:
            assert entry.name not in ("", ".", "..") and "/" not in entry.name and "\x00" not in entry.name
            assert entry.type in ("file", "directory", "link", "other", "unknown")
            assert entry.size is None or entry.size >= 0
            assert entry.modified is None or (entry.modified.tzinfo is UTC and entry.precision is not None)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=400))
def test_fuzz_any_bytes(data: bytes) -> None:
    for entry in parse_list(data, now=NOW, max_entries=BIG, max_bytes=BIG) + parse_mlsd(
        data, max_entries=BIG, max_bytes=BIG
    ):
        assert entry.name.encode("utf-8", "surrogateescape") in data


def test_entries_are_charged_for_the_memory_they_hold() -> None:
    from fetcher.schemes.ftp.listing import fact_entries
    from fetcher.url import parse_url

    url = parse_url("ftp://127.0.0.1/pub/")
    assert isinstance(url, FtpURL)
    # 200 names of 400 bytes that are not UTF-8: 80 kB listed, far more held.
    data = b"".join(b"type=file;size=1; " + b"\xff" * 400 + b"%d\r\n" % i for i in range(200))
    listed = parse_mlsd(data, max_entries=BIG, max_bytes=BIG)
    assert len(listed) == 200
    entries = fact_entries(url, ("pub",), listed, max_bytes=10**7)
    assert entries[0].url == "ftp://127.0.0.1/pub/" + "%FF" * 400 + "0"
    with pytest.raises(LimitExceeded) as held:
        fact_entries(url, ("pub",), listed, max_bytes=len(data) * 2)
    assert held.value.limit_name == "listing_bytes"
    # A directory's URL ends in "/", so opening it lists it without the RETR guess.
    (sub,) = fact_entries(url, ("pub",), mlsd(lines("type=dir; sub")), max_bytes=BIG)
    assert (sub.url, sub.type) == ("ftp://127.0.0.1/pub/sub/", "directory")


def test_a_vms_name_alone_at_the_end_and_a_flood_of_empty_lines() -> None:
    assert [(e.name, e.type) for e in parse(lines("ORPHAN.TXT;1"))] == [("ORPHAN.TXT;1", "unknown")]
    assert parse(b"\n" * 1_000_000) == []

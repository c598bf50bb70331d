"""Sizes and rates as fetch shows them: binary units (KiB, MiB, GiB), the units its options read.

`--limit-rate 4M`, `--max-size 64M` and `--warc-max-size 1G` count in powers
of 1024, as curl's do; a progress bar that showed the rate in powers of
1000 would print a 4 MiB/s limit as "4.2 MB/s", a rate the user never asked
for.  So every size and rate on screen is binary too.
"""

from __future__ import annotations

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def binary(count: float) -> str:
    """`count` bytes as `512 B`, `300.0 KiB`, `4.0 MiB`: one decimal from KiB on."""
    if count < 1024:
        return f"{int(count)} B"
    value = float(count)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:,.1f} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def binary_rate(per_second: float | None) -> str:
    """A transfer rate, `4.0 MiB/s` (`-- B/s` while none is known yet)."""
    return "-- B/s" if per_second is None else f"{binary(per_second)}/s"

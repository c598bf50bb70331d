"""Fetch many URLs concurrently with the library and report each as it finishes.

    python3 examples/bulk.py urls.txt out/

urls.txt is read like `fetch -i`: one URL per line, blank lines and `#`
comments skipped, `<URL:...>` wrappers may span a few lines; a bad line is
reported with its number and the others are still fetched.  Copy and adapt: the
same Client pools connections across URLs, limits work per host, retries
transient failures and writes each file atomically; every name is sanitized
and stays inside out/.  Exits 1 if any URL failed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from fetcher import URL, Client, URLError, parse_url
from fetcher.cli.inputs import BadLine, read_url_lines
from fetcher.cli.layout import Layout
from fetcher.text import safe_text


def plan(url_file: Path, out_dir: Path) -> tuple[dict[str, Path], int]:
    """Each distinct URL and the file it goes to (named up front, so names never depend on timing)."""
    layout = Layout(out_dir, "flat")
    names: dict[str, Path] = {}
    bad = 0
    with url_file.open(encoding="utf-8", errors="surrogateescape") as lines:
        for text, number in read_url_lines(lines):  # bounded: no line or wrapper is held past its cap
            if isinstance(text, BadLine):  # an over-long line, or a file with no line ends
                bad += 1
                print(f"BAD   {url_file}:{number}: {text.problem}", file=sys.stderr)
                continue
            try:
                url = parse_url(text)
            except URLError as error:
                bad += 1
                print(f"BAD   {url_file}:{number}: {safe_text(str(error))}", file=sys.stderr)
                continue
            if str(url) not in names:
                names[str(url)] = layout.document(url)
    return names, bad


async def main(url_file: str, out_dir: str) -> int:
    directory = Path(out_dir)
    names, failures = plan(Path(url_file), directory)
    directory.mkdir(parents=True, exist_ok=True)

    def destination(url: URL) -> Path:
        return names[str(url)]

    async with Client(jobs=8, per_host=2, retries=2) as client:
        async with client.fetch_all(list(names), destination=destination) as outcomes:
            async for outcome in outcomes:
                if outcome.ok:
                    print(f"ok    {safe_text(outcome.url)}  ({outcome.seconds:.2f} s, {outcome.attempts} attempt(s))")
                else:
                    failures += 1
                    print(f"FAIL  {safe_text(outcome.url)}: {safe_text(str(outcome.error))}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 examples/bulk.py URL_FILE OUT_DIR")
    sys.exit(trio.run(main, sys.argv[1], sys.argv[2]))

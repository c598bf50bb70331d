"""Fetch many URLs concurrently with the library and report each as it finishes.

    python3 examples/bulk.py urls.txt out/

Copy and adapt: the same Client pools connections across URLs, limits work
per host, retries transient failures and writes each file atomically.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

from fetcher import Client, parse_url
from fetcher.render import remote_name


async def main(url_file: str, out_dir: str) -> int:
    urls = [line.strip() for line in Path(url_file).read_text().splitlines() if line.strip()]
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    names: dict[str, Path] = {}
    for text in urls:  # assign names up front, so they do not depend on timing
        name = remote_name(parse_url(text))
        candidate, counter = directory / name, 0
        while candidate in names.values():
            counter += 1
            candidate = directory / f"{name}.{counter}"
        names[str(parse_url(text))] = candidate
    failures = 0
    async with Client(jobs=8, per_host=2, retries=2) as client:
        async with client.fetch_all(urls, destination=lambda url: names[str(url)]) as outcomes:
            async for outcome in outcomes:
                if outcome.ok:
                    print(f"ok    {outcome.url}  ({outcome.seconds:.2f} s, {outcome.attempts} attempt(s))")
                else:
                    failures += 1
                    print(f"FAIL  {outcome.url}: {outcome.error}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 examples/bulk.py URL_FILE OUT_DIR")
    sys.exit(trio.run(main, sys.argv[1], sys.argv[2]))

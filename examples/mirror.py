"""Mirror a listing (an FTP directory, a Gopher menu, a local directory) breadth-first.

    python3 examples/mirror.py ftp://127.0.0.1:2121/pub/ out/ --depth 3

Stays on the starting origin (scheme, host and port: another port is
another server), visits each URL once, and saves
documents under out/ with names that cannot escape it.  The `fetch -r`
command does the same with more options; this is the library version.
"""

from __future__ import annotations

import argparse
from collections import deque
from pathlib import Path

import trio

from fetcher import Client, FetchError, parse_url
from fetcher.cli.render import tree_parts
from fetcher.disk.save import save


async def mirror(start: str, out: Path, depth: int) -> None:
    root = parse_url(start)
    queue = deque([(root, 0)])
    seen = {str(root)}
    async with Client() as client:
        while queue:
            url, level = queue.popleft()
            try:
                async with client.open(url) as resource:
                    if resource.kind == "document":
                        target = out.joinpath(*tree_parts(url))
                        target.parent.mkdir(parents=True, exist_ok=True)
                        await save(resource, target)
                        print(f"saved {target}")
                        continue
                    entries = resource.entries
            except FetchError as error:
                print(f"skip  {url}: {error}")
                continue
            if level >= depth:
                continue
            for entry in entries:
                if not entry.url:
                    continue
                child = parse_url(entry.url)
                if child.origin != root.origin or str(child) in seen:
                    continue
                seen.add(str(child))
                queue.append((child, level + 1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--depth", type=int, default=3)
    args = parser.parse_args()
    trio.run(mirror, args.url, args.out, args.depth)

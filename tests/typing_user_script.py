"""A user's script: imports only public names of `fetcher`, written as a user would.

tests/test_typing.py type-checks it with `mypy --strict` and runs it:

    python tests/typing_user_script.py DIR

It writes two files in DIR and fetches them through `file:` URLs with the
blocking API, the async API, and a bulk call, then prints what it got.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trio

import fetcher
from fetcher import Client, Download, Entry, Fetched, FileURL, Outcome, Settings, errors, fetch, fetch_sync, parse_url


def blocking(directory: Path) -> list[str]:
    lines: list[str] = []
    result: Fetched = fetch_sync(f"file://{directory}/hello.txt", settings=Settings(timeout=5.0), max_size=1 << 20)
    lines.append(f"fetch_sync: {result.kind} {result.content!r}")
    saved: Download = fetcher.download_sync(f"file://{directory}/hello.txt", directory / "copy.txt", resume=True)
    lines.append(f"download_sync: {saved.bytes} bytes to {saved.path.name}")
    outcomes: list[Outcome] = fetcher.fetch_all_sync(
        [f"file://{directory}/hello.txt", f"file://{directory}/absent.txt"], jobs=2
    )
    for outcome in sorted(outcomes, key=lambda item: item.url):
        status = "ok" if outcome.ok else f"error {type(outcome.error).__name__}"
        lines.append(f"fetch_all_sync: {Path(outcome.url).name} {status}")
    try:
        fetch_sync(f"file://{directory}/absent.txt")
    except errors.NotFound as error:
        code: int = error.exit_code
        lines.append(f"NotFound: exit code {code}")
    return lines


async def asynchronous(directory: Path) -> list[str]:
    lines: list[str] = []
    url = parse_url(f"file://{directory}/")
    if isinstance(url, FileURL):
        lines.append(f"parse_url: FileURL path ends {url.path.rstrip('/').rsplit('/', 1)[-1]!r}")
    async with Client(Settings(timeout=5.0, max_size=1 << 20)) as client:
        async with client.open(url) as listing:
            entries: list[Entry] = listing.entries
            names = sorted(entry.name for entry in entries)
            lines.append(f"listing: {', '.join(names)}")
        document = await client.fetch(f"file://{directory}/hello.txt")
        lines.append(f"Client.fetch: {document.text.strip()}")
        async with client.fetch_all([f"file://{directory}/hello.txt"]) as results:
            async for outcome in results:
                if isinstance(outcome.result, Fetched):
                    lines.append(f"Client.fetch_all: {outcome.result.size} bytes")
    one_off = await fetch(f"file://{directory}/hello.txt")
    lines.append(f"fetch: {len(one_off.content)} bytes")
    try:
        await fetch("nosuchscheme://x/")
    except fetcher.FetchError as error:
        lines.append(f"FetchError: exit code {error.exit_code}")
    return lines


def main(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "hello.txt").write_bytes(b"Hello, typed world!\n")
    for line in [*blocking(directory), *trio.run(asynchronous, directory)]:
        print(line)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

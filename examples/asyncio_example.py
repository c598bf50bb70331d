"""fetcher inside an asyncio program: the same library, no trio loop needed.

    python3 examples/asyncio_example.py OUT_DIR URL [URL...]

Fetches every URL concurrently with `Client.fetch_all` on asyncio's own
loop, prints one line per URL in input order, then
downloads the first document into OUT_DIR with `Client.download` under an
`asyncio.wait_for` bound: a timeout from asyncio cancels the transfer
cleanly.  Exits 1 if any URL failed.

fetcher runs on anyio, so `asyncio.run(...)`, `trio.run(...)` and
`anyio.run(..., backend="asyncio")` all work; the `fetch` command line
itself always uses trio.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import fetcher
from fetcher.cli.layout import Layout
from fetcher.text import safe_text


async def main(out_dir: Path, urls: list[str]) -> int:
    failed = 0
    async with fetcher.Client(timeout=20) as client:
        results: dict[str, fetcher.Outcome] = {}
        async with client.fetch_all(urls, jobs=4) as outcomes:
            async for outcome in outcomes:
                results[outcome.url] = outcome
        first_document: str | None = None
        for url in urls:
            outcome = results[url]
            if isinstance(outcome.result, fetcher.Fetched):
                result = outcome.result
                if result.kind == "document":
                    first_document = first_document or url
                    print(f"{safe_text(url)}: {len(result.content)} bytes ({result.content_type or 'no type'})")
                else:
                    print(f"{safe_text(url)}: a {result.kind} of {len(result.entries)} entries")
            else:
                failed += 1
                print(f"FAIL  {safe_text(url)}: {safe_text(str(outcome.error))}", file=sys.stderr)
        if first_document is not None:
            target = Layout(out_dir, "flat").document(fetcher.parse_url(first_document))
            out_dir.mkdir(parents=True, exist_ok=True)
            saved = await asyncio.wait_for(client.download(first_document, target), timeout=60)
            print(f"saved {safe_text(first_document)} as {saved.path.name} ({saved.bytes} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python3 examples/asyncio_example.py OUT_DIR URL [URL...]")
    sys.exit(asyncio.run(main(Path(sys.argv[1]), sys.argv[2:])))

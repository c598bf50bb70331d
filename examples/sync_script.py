"""fetcher without async: the blocking calls, for plain scripts and notebooks.

    python3 examples/sync_script.py OUT_DIR URL [URL...]

Shows the first URL (a document's first lines, or a listing's entries),
saves every document among the URLs under OUT_DIR with one concurrent
`fetch_all_sync` call, then saves the first document again with
`download_sync(..., resume=True)` after planting a cut-short `.part` file,
which it continues where the protocol allows (FTP REST, HTTP Range, local
files).  Exits 1 if any URL failed.

Each call runs its own event loop: right here where no loop is running,
on a worker thread of its own inside a running one (a Jupyter cell, whose
loop waits meanwhile; `await fetcher.fetch(...)` there does not block it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import fetcher
from fetcher.cli.layout import Layout
from fetcher.text import safe_text


def show(url: str) -> None:
    result = fetcher.fetch_sync(url, timeout=20)
    if result.kind == "listing":
        print(f"{safe_text(url)}: a listing of {len(result.entries)} entries")
        for entry in result.entries[:10]:
            print(f"  {entry.type:<10} {safe_text(entry.name)}")
    elif result.kind == "document":
        lines = result.text.splitlines()
        print(f"{safe_text(url)}: {len(result.content)} bytes ({result.content_type or 'no type'})")
        for line in lines[:5]:
            print(f"  | {safe_text(line)}")
    elif result.advisory is not None:
        print(f"{safe_text(url)}: {safe_text(result.advisory.title)}")


def main(out_dir: Path, urls: list[str]) -> int:
    failed = 0
    try:
        show(urls[0])
    except fetcher.FetchError as error:
        print(f"{safe_text(urls[0])}: {safe_text(str(error))} (exit code {error.exit_code})", file=sys.stderr)

    layout = Layout(out_dir, "flat")  # sanitized names that stay inside out_dir, as `fetch -d` gives
    targets: dict[str, Path] = {}
    for text in urls:
        try:
            url = fetcher.parse_url(text)
        except fetcher.URLError as error:
            failed += 1
            print(f"BAD   {safe_text(text)}: {safe_text(str(error))}", file=sys.stderr)
            continue
        if str(url) not in targets:
            targets[str(url)] = layout.document(url)
    out_dir.mkdir(parents=True, exist_ok=True)
    outcomes = fetcher.fetch_all_sync(list(targets), destination=lambda url: targets[str(url)], jobs=4, retries=1)

    by_url = {outcome.url: outcome for outcome in outcomes}
    for name in targets:  # report in input order (outcomes come in completion order)
        outcome = by_url[name]
        if isinstance(outcome.result, fetcher.Download):
            print(f"saved {safe_text(name)} as {outcome.result.path.name} ({outcome.result.bytes} bytes)")
        elif outcome.result is not None:
            print(f"{outcome.result.kind} {safe_text(name)} (not saved)")
        else:
            failed += 1
            print(f"FAIL  {safe_text(name)}: {safe_text(str(outcome.error))}", file=sys.stderr)

    documents = [name for name in targets if isinstance(by_url[name].result, fetcher.Download)]
    if documents:
        again = out_dir / "again.bin"
        again.with_name("again.bin.part").write_bytes(targets[documents[0]].read_bytes()[:10])  # as if cut short
        saved = fetcher.download_sync(documents[0], again, resume=True)
        print(f"download_sync: {saved.bytes} bytes to {again.name}, resumed from byte {saved.resumed_from}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python3 examples/sync_script.py OUT_DIR URL [URL...]")
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))

"""Parse rate of `fetcher.parse_url` next to `urllib.parse.urlsplit`.

    python bench/parse.py [--count 100000] [--rounds 7] [--profile]

Both parsers get the same list of distinct URLs of every RFC 1738 scheme.
`urlsplit` keeps an `lru_cache` of 128 entries; with distinct URLs every call
misses it, so the figure is urlsplit's real parsing cost plus a cache miss.
The uncached function (`urlsplit.__wrapped__`) is timed too, as the stricter
comparison.  The two do different work: urlsplit only cuts the text at
":", "//", "?" and "#", while parse_url checks every character, validates the
host and port, splits and percent-decodes each scheme's fields and builds a
typed value.

Rounds alternate (parse_url, urlsplit, uncached urlsplit, ...) so a noisy
machine slows all alike; the best round of each is reported.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fetcher.url import parse_url

_WORDS = [
    "pub", "doc", "rfc", "www", "gopher", "misc", "files", "archive", "src", "index",
    "readme", "notes", "data", "mirror", "users", "images", "lib", "test", "tmp", "info",
]  # fmt: skip
_TLDS = ["com", "org", "net", "edu", "de", "test"]


def _host(rng: random.Random, n: int) -> str:
    if rng.random() < 0.1:
        return f"10.{n % 256}.{(n // 256) % 256}.{rng.randrange(1, 255)}"
    return f"{rng.choice(_WORDS)}{n}.{rng.choice(_WORDS)}.{rng.choice(_TLDS)}"


def _path(rng: random.Random, n: int, depth: int) -> str:
    parts = [rng.choice(_WORDS) for _ in range(depth)]
    parts.append(f"{rng.choice(_WORDS)}-{n}.txt")
    if rng.random() < 0.15:
        parts[-1] = parts[-1].replace("-", "%20")
    return "/".join(parts)


def make_urls(count: int, seed: int = 1738) -> list[str]:
    """`count` distinct URLs: about half http(s), the rest spread over the other schemes."""
    rng = random.Random(seed)
    urls: list[str] = []
    for n in range(count):
        host = _host(rng, n)
        port = f":{rng.randrange(1024, 65535)}" if rng.random() < 0.2 else ""
        kind = rng.random()
        if kind < 0.40:
            query = f"?q={rng.choice(_WORDS)}&n={n}" if rng.random() < 0.4 else ""
            scheme = "https" if rng.random() < 0.5 else "http"
            url = f"{scheme}://{host}{port}/{_path(rng, n, rng.randrange(0, 4))}{query}"
        elif kind < 0.60:
            login = "" if rng.random() < 0.7 else f"user{n}:secret@"
            typecode = rng.choice(["", "", ";type=i", ";type=a", ";type=d"])
            url = f"ftp://{login}{host}{port}/{_path(rng, n, rng.randrange(0, 4))}{typecode}"
        elif kind < 0.72:
            gtype = rng.choice("0179h")
            search = f"%09{rng.choice(_WORDS)}" if gtype == "7" else ""
            url = f"gopher://{host}{port}/{gtype}/{_path(rng, n, rng.randrange(0, 3))}{search}"
        elif kind < 0.77:
            if rng.random() < 0.6:
                url = f"news:comp.{rng.choice(_WORDS)}.n{n}"
            else:
                url = f"news:{n}.{rng.random():.6f}@{host}"
        elif kind < 0.82:
            url = f"nntp://{host}{port}/comp.{rng.choice(_WORDS)}/{n}"
        elif kind < 0.85:
            url = f"telnet://guest{n}@{host}{port}/"
        elif kind < 0.89:
            form = rng.random()
            if form < 0.4:
                url = f"wais://{host}{port}/db{n}?{rng.choice(_WORDS)}+{rng.choice(_WORDS)}"
            elif form < 0.7:
                url = f"wais://{host}{port}/db{n}/TEXT/0-{n}-%2Fsrc%2Fdb"
            else:
                url = f"wais://{host}{port}/db{n}"
        elif kind < 0.94:
            url = f"file:///{_path(rng, n, rng.randrange(1, 5))}"
        elif kind < 0.97:
            url = f"prospero://{host}{port}//pros/{_path(rng, n, 1)};OBJECT-VERSION={n}"
        else:
            url = f"mailto:user{n}@{host}"
        urls.append(url)
    assert len(set(urls)) == count, "URLs must be distinct to defeat urlsplit's cache"
    return urls


def _time(function: Callable[[str], object], urls: list[str]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        for url in urls:
            function(url)
        return time.perf_counter() - start
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="profile parse_url (cProfile) instead of timing")
    args = parser.parse_args(argv)

    urls = make_urls(args.count)
    schemes = sorted({url.split(":", 1)[0] for url in urls})
    for url in urls:  # every URL must be one parse_url accepts, or the figure means nothing
        parse_url(url)

    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for url in urls:
            parse_url(url)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
        return 0

    split = urllib.parse.urlsplit
    uncached = getattr(split, "__wrapped__", split)
    contenders: dict[str, Callable[[str], object]] = {
        "fetcher.url.parse_url": parse_url,
        "urllib.parse.urlsplit": split,
        "urlsplit.__wrapped__ (no cache)": uncached,
    }
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(args.rounds):
        for name, function in contenders.items():
            best[name] = min(best[name], _time(function, urls))
    info = split.cache_info() if hasattr(split, "cache_info") else None

    print(f"{len(urls)} distinct URLs, schemes: {', '.join(schemes)}; best of {args.rounds} rounds")
    for name, seconds in best.items():
        print(f"  {name:34} {len(urls) / seconds:>12,.0f} URLs/s  ({seconds * 1e9 / len(urls):7.0f} ns/URL)")
    if info is not None:
        print(f"  urlsplit lru_cache: {info.hits} hits, {info.misses} misses (distinct URLs defeat it)")
    ours = best["fetcher.url.parse_url"]
    print(f"ratio parse_url / urlsplit:            {best['urllib.parse.urlsplit'] / ours:.2f} x")
    print(f"ratio parse_url / uncached urlsplit:   {best['urlsplit.__wrapped__ (no cache)'] / ours:.2f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

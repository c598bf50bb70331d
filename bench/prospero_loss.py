"""How ARDP delivery behaves under simulated loss (run by hand, not in CI).

    python -m bench.prospero_loss [--runs 50] [--loss 0.1] [--timeout 0.1] [--retries 3]

Each run fetches a 73,500-octet PROSPERO-CONTENTS object (59 packets, four
server windows) from the in-repo test server, which drops datagrams at
random in both directions.  Prints the completion rate, time per run and
the client's retransmissions.  Timers are scaled down (default base timeout
0.1 s instead of 4 s) so the run takes seconds; the retry count is the
real default.
"""

from __future__ import annotations

import argparse
import statistics
import time

import trio

from fetcher.errors import FetchError
from fetcher.schemes.prospero import ardp, protocol, transport
from tests.servers.prospero import Faults, Object, serve_prospero

TEXT = b"".join(b"line %05d of the prospero contents, it's quoted\n" % n for n in range(1500))


async def one(port: int, timers: ardp.Timers) -> tuple[bool, float, int, int]:
    from fetcher.guard import DEFAULT_POLICY

    message = protocol.object_info_request("bench", "/f", ["CONTENTS"])
    decoder = protocol.ContentsDecoder()
    started = time.monotonic()
    data = b""
    receiver = None
    try:
        async with transport.open_exchange("127.0.0.1", port, message, timers=timers, policy=DEFAULT_POLICY) as ex:
            receiver = ex.receiver
            async for chunk in ex:
                data += decoder.feed(chunk)
    except FetchError:
        pass
    elapsed = time.monotonic() - started
    assert receiver is not None
    return data == TEXT, elapsed, receiver.retransmissions, receiver.duplicates


async def main(args: argparse.Namespace) -> None:
    timers = ardp.Timers(timeout=args.timeout, retries=args.retries, ceiling=30.0)
    results = []
    for run in range(args.runs):
        faults = Faults(loss=args.loss, seed=run)
        async with serve_prospero({"/f": Object([], contents=TEXT)}, faults) as server:
            results.append((*await one(server.port, timers), server.dropped))
    done = [r for r in results if r[0]]
    times = [r[1] for r in done]
    print(f"loss {args.loss:.0%} both ways, {args.runs} runs, base timeout {args.timeout} s, {args.retries} retries")
    print(f"completed {len(done)}/{args.runs} ({len(done) / args.runs:.0%})")
    if times:
        print(
            f"time per completed run: median {statistics.median(times):.2f} s, "
            f"mean {statistics.mean(times):.2f} s, max {max(times):.2f} s"
        )
    print(f"client retransmissions per run: mean {statistics.mean(r[2] for r in results):.1f}, "
          f"max {max(r[2] for r in results)}")  # fmt: skip
    print(f"duplicates received per run: mean {statistics.mean(r[3] for r in results):.1f}")
    print(f"server datagrams dropped per run: mean {statistics.mean(r[4] for r in results):.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--loss", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=0.1)
    parser.add_argument("--retries", type=int, default=3)
    trio.run(main, parser.parse_args())

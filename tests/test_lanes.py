"""Lanes (fetcher/lanes.py) share job and per-host slots with the task path without deadlock.

A mirror is the hard case: the lane's next URLs come from a listing that
runs on the task path, on the same host, while the lane's workers wait idle
holding the host's slots.
"""

from __future__ import annotations

from pathlib import Path

import trio

from fetcher import Client
from tests.interop.ftp_servers import pyftpd


async def test_a_task_path_url_of_the_host_gets_a_slot_from_idle_lane_workers(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pub").mkdir(parents=True)
    for index in range(6):
        (root / "pub" / f"f{index}.txt").write_bytes(b"x" * index)
    out = tmp_path / "out"
    out.mkdir()
    with pyftpd(root) as server:
        send, receive = trio.open_memory_channel[str](100)
        base = f"{server.url}/pub"
        async with Client() as client:
            results = []
            def destination(url: object) -> Path:
                return out / str(url).rsplit("/", 1)[1]

            with trio.fail_after(20):
                async with client.fetch_all(receive, jobs=4, per_host=2, destination=destination) as outcomes:
                    # Two files take the lane (its workers then idle, holding both host slots) ...
                    send.send_nowait(f"{base}/f0.txt")
                    send.send_nowait(f"{base}/f1.txt")
                    async for outcome in outcomes:
                        results.append(outcome)
                        if len(results) == 2:
                            # ... then a directory (the task path) on the same host, then more files.
                            send.send_nowait(f"{base}/")
                        if len(results) == 3:
                            for index in range(2, 6):
                                send.send_nowait(f"{base}/f{index}.txt")
                        if len(results) == 7:
                            send.close()
    assert all(outcome.ok for outcome in results), [o for o in results if not o.ok]
    assert sorted(path.name for path in out.iterdir()) == [f"f{index}.txt" for index in range(6)]

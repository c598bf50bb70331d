"""`Client.fetch_all` can be abandoned safely (issue 15, "The library").

Every way of leaving the block (break, an enclosing move_on_after, a cancelled
nursery, an exception in the loop body) must end the remaining work without
TrioInternalError, leave no task behind, and close every socket: the hostile
server holds each connection open until the client hangs up, and records it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from fetcher import Client
from tests.hostile.core_servers import HostileServer, hostile, http_held


def urls(tmp_path: Path, server: HostileServer, held: int = 3) -> list[str]:
    (tmp_path / "quick.txt").write_bytes(b"quick\n")
    return [f"file://{tmp_path}/quick.txt"] + [f"http://127.0.0.1:{server.port}/held{n}" for n in range(held)]


def child_nurseries() -> int:
    return len(trio.lowlevel.current_task().child_nurseries)


async def wait_connections(server: HostileServer, count: int) -> None:
    with trio.fail_after(5):
        while len(server.connections) < count:
            await trio.sleep(0.01)


async def test_break_after_the_first_outcome(tmp_path: Path) -> None:
    async with hostile(http_held()) as server, Client(timeout=5) as client:
        before = child_nurseries()
        seen = []
        async with client.fetch_all(urls(tmp_path, server), jobs=4, per_host=4) as results:
            async for outcome in results:
                seen.append(outcome)
                await wait_connections(server, 3)
                break
        assert child_nurseries() == before
        assert [o.ok for o in seen] == [True] and seen[0].url.endswith("quick.txt")
        assert await server.all_closed()
        assert len(server.connections) == 3


async def test_move_on_after_around_the_loop(tmp_path: Path) -> None:
    async with hostile(http_held()) as server, Client(timeout=5) as client:
        before = child_nurseries()
        seen = []
        with trio.move_on_after(0.5) as scope:
            async with client.fetch_all(urls(tmp_path, server), jobs=4, per_host=4) as results:
                async for outcome in results:
                    seen.append(outcome)
        assert scope.cancelled_caught
        assert len(seen) == 1 and child_nurseries() == before
        assert len(server.connections) == 3 and await server.all_closed()


async def test_cancelled_nursery(tmp_path: Path) -> None:
    seen = []
    async with hostile(http_held()) as server, Client(timeout=5) as client:
        before = child_nurseries()

        async def consume() -> None:
            async with client.fetch_all(urls(tmp_path, server), jobs=4, per_host=4) as results:
                async for outcome in results:
                    seen.append(outcome)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            await wait_connections(server, 3)
            nursery.cancel_scope.cancel()
        assert len(seen) == 1 and child_nurseries() == before
        assert await server.all_closed()


async def test_an_exception_in_the_loop_body_comes_out_as_itself(tmp_path: Path) -> None:
    class Stop(Exception):
        pass

    async with hostile(http_held()) as server, Client(timeout=5) as client:
        before = child_nurseries()
        with pytest.raises(Stop):  # not an ExceptionGroup, not TrioInternalError
            async with client.fetch_all(urls(tmp_path, server), jobs=4, per_host=4) as results:
                async for _ in results:
                    await wait_connections(server, 3)
                    raise Stop
        assert child_nurseries() == before
        assert await server.all_closed()


async def test_reading_to_the_end_and_the_old_spelling(tmp_path: Path) -> None:
    names = [f"file://{tmp_path}/f{n}" for n in range(5)]
    for n in range(5):
        (tmp_path / f"f{n}").write_bytes(b"%d" % n)
    async with Client() as client:
        async with client.fetch_all(iter(names), jobs=2) as results:
            got = sorted([o.url async for o in results])
        assert got == names
        with pytest.raises(TypeError, match=r"async with client\.fetch_all"):
            async for _ in client.fetch_all(names):  # type: ignore[attr-defined]
                pass

"""fetcher.net.aio: trio's own calls on trio, anyio's elsewhere, the same behaviour on both (issue 17)."""

from __future__ import annotations

import asyncio
import threading

import anyio
import pytest
import trio

from fetcher.net import aio


async def _exercise() -> dict[str, object]:
    seen: dict[str, object] = {}
    start = aio.current_time()
    with aio.cancel_scope(deadline=start + 0.05) as scope:
        await aio.sleep(30)
    seen["deadline_caught"] = scope.cancelled_caught
    seen["waited"] = aio.current_time() - start
    with aio.cancel_scope() as outer:
        outer.cancel()
        with aio.cancel_scope(shield=True):
            await aio.checkpoint()  # shielded: the outer cancel does not reach it
            seen["shielded_ran"] = True
        await aio.checkpoint()
        seen["after_cancel_ran"] = True  # not reached: the outer scope is cancelled
    seen["outer_caught"] = outer.cancelled_caught
    seen["thread"] = await aio.run_sync(lambda a, b: (a + b, threading.current_thread().name), 2, 3)
    seen["scope_type"] = type(scope).__module__.split(".")[0]
    return seen


@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_the_same_behaviour_on_both_loops(loop: str) -> None:
    seen = trio.run(_exercise) if loop == "trio" else asyncio.run(_exercise())
    assert seen["deadline_caught"] is True
    assert 0.04 <= float(seen["waited"]) < 25  # type: ignore[arg-type]
    assert seen["shielded_ran"] is True
    assert "after_cancel_ran" not in seen
    assert seen["outer_caught"] is True
    assert seen["thread"] != (5, threading.current_thread().name)
    assert seen["thread"][0] == 5  # type: ignore[index]
    # trio's own scope on trio (no anyio backend), anyio's on asyncio.
    assert seen["scope_type"] == ("trio" if loop == "trio" else "anyio")
    assert aio.on_trio() is False  # outside any loop


def test_anyio_run_on_trio_takes_trio_calls() -> None:
    seen = anyio.run(_exercise, backend="trio")
    assert seen["scope_type"] == "trio" and seen["deadline_caught"] is True


async def _take_turns(lock: aio.Lock) -> tuple[list[str], str]:
    """Two tasks want the lock; the second asks while the first holds it and gets it only after."""
    order: list[str] = []
    held = aio.event()

    async def first() -> None:
        async with lock:
            order.append("first in")
            held.set()
            for _ in range(5):
                await aio.checkpoint()  # the second task runs meanwhile and waits
            order.append("first out")

    async def second() -> None:
        await held.wait()
        order.append("second asks")
        async with lock:
            order.append("second in")

    async with aio.open_nursery() as nursery:
        nursery.start_soon(first)
        nursery.start_soon(second)
    return order, type(lock._lock).__module__.split(".")[0]


def test_a_lock_made_outside_any_loop_serves_either_loop() -> None:
    # The WARC recorder is built before the loop starts: its lock is made on first use, by the
    # library then running (trio's own on trio, no anyio), and made again for a later run on the other.
    lock = aio.Lock()
    expected = ["first in", "second asks", "first out", "second in"]
    assert trio.run(_take_turns, lock) == (expected, "trio")
    assert not lock.locked()
    assert asyncio.run(_take_turns(lock)) == (expected, "anyio")
    assert trio.run(_take_turns, lock) == (expected, "trio")

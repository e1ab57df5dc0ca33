"""The burst pause of Python's automatic collection (goalsui.scheduler.heap.BurstPause)."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from goalsui.scheduler import heap
from goalsui.scheduler.heap import PAUSE_AT, BurstPause


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    """Each test starts with automatic collection on and leaves it as it found it."""
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


async def next_turn_of_the_loop() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def test_a_burst_pauses_collection_until_it_is_recorded() -> None:
    loop = asyncio.get_running_loop()
    pause = BurstPause()
    pause.launched(loop, PAUSE_AT - 1)
    assert gc.isenabled()  # a handful of runs is no burst
    pause.launched(loop, PAUSE_AT)
    assert not gc.isenabled() and pause.active
    pause.recorded(loop, PAUSE_AT + 5)  # some of the burst recorded, most still in flight
    assert not gc.isenabled()
    pause.recorded(loop, PAUSE_AT - 1)
    assert not gc.isenabled()  # resumes once the loop is done with the last reports
    await next_turn_of_the_loop()
    assert gc.isenabled() and not pause.active


async def test_the_pause_ends_after_its_longest_time_and_a_burst_in_flight_keeps_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heap, "PAUSE_MAX", 0.01)
    loop = asyncio.get_running_loop()
    pause = BurstPause()
    pause.launched(loop, PAUSE_AT)
    assert not gc.isenabled()
    for _ in range(200):
        if gc.isenabled():
            break
        await asyncio.sleep(0.01)
    assert gc.isenabled()
    pause.launched(loop, PAUSE_AT * 2)  # the same burst, still in flight: not paused again
    assert gc.isenabled()
    pause.recorded(loop, 0)
    pause.launched(loop, PAUSE_AT)  # a new burst pauses again
    assert not gc.isenabled()
    pause.end()  # the scheduler stops
    assert gc.isenabled()


async def test_a_collector_the_host_turned_off_stays_off() -> None:
    loop = asyncio.get_running_loop()
    gc.disable()
    pause = BurstPause()
    pause.launched(loop, PAUSE_AT * 3)
    assert not pause.active
    pause.recorded(loop, 0)
    pause.end()
    await next_turn_of_the_loop()
    assert not gc.isenabled()

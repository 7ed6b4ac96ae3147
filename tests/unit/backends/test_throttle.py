"""The retrieval throttle's per-minute window and its running/waiting queue, on a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any

import pytest

from graph.backends.throttle import MAX_RUNNING, MAX_WAITING, WINDOW_SEC, RetrievalThrottle
from graph.core.contract import RetrievalError, RetrievalErrorCode

WAIT = 5.0
"""Seconds before a test that would hang (a queue that never refuses) fails instead."""


def run(body: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(body, WAIT))


def test_the_documented_limits() -> None:
    assert (MAX_RUNNING, MAX_WAITING, WINDOW_SEC) == (2, 5, 60.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def admit_once(throttle: RetrievalThrottle) -> None:
    async with throttle.admit():
        pass


def refused(throttle: RetrievalThrottle) -> RetrievalError:
    with pytest.raises(RetrievalError) as error:
        run(admit_once(throttle))
    return error.value


def test_the_per_minute_budget_slides_with_the_window() -> None:
    clock, limit = Clock(), 3
    throttle = RetrievalThrottle(limit, clock)
    start = clock.now
    for step in range(limit):  # one start every 10 s
        clock.now = start + 10 * step
        run(admit_once(throttle))
    clock.now = start + 25
    error = refused(throttle)
    assert error.code is RetrievalErrorCode.RATE_LIMIT_EXCEEDED
    assert error.details["retryAfterSec"] == int(WINDOW_SEC - 25) + 1
    assert "429_AGENT_THROTTLED" in error.message and f"at most {limit}" in error.message
    clock.now = start + WINDOW_SEC - 0.001  # the first start is still inside the window
    assert refused(throttle).code is RetrievalErrorCode.RATE_LIMIT_EXCEEDED
    clock.now = start + WINDOW_SEC  # now it has left: exactly one start is free again
    run(admit_once(throttle))
    assert refused(throttle).code is RetrievalErrorCode.RATE_LIMIT_EXCEEDED
    clock.now = start + WINDOW_SEC + 10  # the second start leaves too
    run(admit_once(throttle))


def test_refused_requests_do_not_use_up_the_budget() -> None:
    clock = Clock()
    throttle = RetrievalThrottle(1, clock)
    run(admit_once(throttle))
    start = clock.now
    for second in range(1, 30):
        clock.now = start + second
        refused(throttle)
    clock.now = start + WINDOW_SEC
    run(admit_once(throttle))


def test_no_budget_means_no_rate_limit() -> None:
    throttle = RetrievalThrottle(None, Clock())
    for _ in range(100):
        run(admit_once(throttle))


def test_two_run_the_next_wait_and_beyond_the_queue_is_queue_full() -> None:
    clock = Clock()

    async def body() -> None:
        throttle = RetrievalThrottle(MAX_RUNNING + MAX_WAITING + 1, clock)
        release = asyncio.Event()
        running: list[int] = []
        peak = 0

        async def retrieval() -> None:
            nonlocal peak
            async with throttle.admit():
                running.append(1)
                peak = max(peak, len(running))
                await release.wait()
                running.pop()

        tasks = [asyncio.create_task(retrieval()) for _ in range(MAX_RUNNING + MAX_WAITING)]
        await asyncio.sleep(0.01)
        assert len(running) == MAX_RUNNING  # the others wait for a slot
        with pytest.raises(RetrievalError) as full:
            await admit_once(throttle)
        # The queue is judged before the rate: the budget still has one start left.
        assert full.value.code is RetrievalErrorCode.QUEUE_FULL
        assert full.value.details["retryAfterSec"] == 1
        release.set()
        await asyncio.gather(*tasks)
        assert peak == MAX_RUNNING
        await admit_once(throttle)  # the queue is free again, and the refused call took no budget
        with pytest.raises(RetrievalError) as over:
            await admit_once(throttle)
        assert over.value.code is RetrievalErrorCode.RATE_LIMIT_EXCEEDED

    run(body())


def test_a_failing_retrieval_gives_its_place_back() -> None:
    async def body() -> None:
        throttle = RetrievalThrottle(None, Clock())
        for _ in range(MAX_RUNNING + MAX_WAITING + 1):
            with pytest.raises(ValueError):
                async with throttle.admit():
                    raise ValueError("retrieval failed")
        async with AsyncExitStack() as stack:
            for _ in range(MAX_RUNNING):
                await stack.enter_async_context(throttle.admit())

    run(body())

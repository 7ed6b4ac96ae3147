"""Retrieval throttling: 2 running, 5 waiting, and a per-minute start budget.

Agents can loop on retrieval; the limits keep one agent from starving the editor.
The per-minute budget comes from the workspace settings (clamped to 1-30); only
the operator can switch it off, with `--rate-limit-per-minute 0` on the command line.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from graph.core.contract import RetrievalError, RetrievalErrorCode

MAX_RUNNING = 2
MAX_WAITING = 5
WINDOW_SEC = 60.0


class RetrievalThrottle:
    def __init__(self, per_minute: int | None, clock: Callable[[], float] = time.monotonic) -> None:
        """clock: seconds on a monotonic scale (injectable so the windows are tested without sleeping)."""
        self.per_minute = per_minute
        self._clock = clock
        self._slots = asyncio.Semaphore(MAX_RUNNING)
        self._admitted = 0
        self._starts: deque[float] = deque()

    def close(self) -> None:
        """Nothing held outside this process (the team backend's throttle holds a connection)."""

    @asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        """Admission is decided synchronously, before any await, so a burst is judged in order."""
        if self._admitted >= MAX_RUNNING + MAX_WAITING:
            raise RetrievalError(
                RetrievalErrorCode.QUEUE_FULL,
                f"429_AGENT_THROTTLED: {MAX_RUNNING} retrievals running and {MAX_WAITING} waiting; retry shortly",
                retryAfterSec=1,
            )
        now = self._clock()
        while self._starts and now - self._starts[0] >= WINDOW_SEC:
            self._starts.popleft()
        if self.per_minute is not None and len(self._starts) >= self.per_minute:
            retry_after = max(1, int(WINDOW_SEC - (now - self._starts[0])) + 1)
            raise RetrievalError(
                RetrievalErrorCode.RATE_LIMIT_EXCEEDED,
                f"429_AGENT_THROTTLED: at most {self.per_minute} retrievals per minute; retry in {retry_after}s",
                retryAfterSec=retry_after,
            )
        self._starts.append(now)
        self._admitted += 1
        try:
            async with self._slots:
                yield
        finally:
            self._admitted -= 1

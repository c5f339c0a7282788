"""Concurrent requests as the throughput benchmarks make them: every text asked with at most N
in flight, each answer timed from its caller's side."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


async def in_flight(ask: Callable[[str], Awaitable[T]], texts: Sequence[str], n: int) -> tuple[float, list[tuple[float, T]]]:
    """`ask` of every text, at most `n` at once: the wall time, and each answer with its latency
    (in the texts' order)."""
    gate = asyncio.Semaphore(n)

    async def timed(text: str) -> tuple[float, T]:
        async with gate:
            started = time.perf_counter()
            answer = await ask(text)
            return time.perf_counter() - started, answer

    started = time.perf_counter()
    done = await asyncio.gather(*(timed(t) for t in texts))
    return time.perf_counter() - started, list(done)

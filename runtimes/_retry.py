"""Retrying an async call with exponential backoff (asyncio only)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    retries: int,
    backoff: float,
    retryable: Callable[[Exception], bool],
) -> T:
    """`await attempt()`, tried again up to `retries` times while it fails with an error
    `retryable` accepts, sleeping backoff, 2·backoff, 4·backoff... between tries. The last
    error is raised as is."""
    tried = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            if tried >= retries or not retryable(exc):
                raise
            await asyncio.sleep(backoff * 2**tried)
            tried += 1

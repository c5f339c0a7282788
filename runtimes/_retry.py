"""Retrying an async call with exponential backoff (asyncio only)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

logger = logging.getLogger("runtimes")

T = TypeVar("T")


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    retries: int,
    backoff: float,
    retryable: Callable[[Exception], bool],
    what: str = "request",
) -> T:
    """`await attempt()`, tried again up to `retries` times while it fails with an error
    `retryable` accepts, sleeping backoff, 2·backoff, 4·backoff... between tries. The last
    error is raised as is. Each retry is a WARNING record naming `what` and the error."""
    tried = 0
    while True:
        try:
            return await attempt()
        except Exception as exc:
            if tried >= retries or not retryable(exc):
                raise
            delay = backoff * 2**tried
            tried += 1
            logger.warning(
                "%s failed (%s: %s); retry %d of %d in %.2f s", what, type(exc).__name__, exc, tried, retries, delay
            )
            await asyncio.sleep(delay)

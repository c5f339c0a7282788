"""Running a coroutine (or iterating an async iterator) from code without an event loop, without
waiting for abandoned threads.

`asyncio.run` ends by joining its default executor's threads, so a sync tool that hangs past its
timeout would hold up the caller until it ends by itself. Here each worker job gets its own
daemon thread, and nothing joins them: the caller gets its answer at the timeout, and the
thread runs on (it cannot be stopped) until its function returns or the process exits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class _DaemonThreads(concurrent.futures.ThreadPoolExecutor):
    """An executor that runs each job in a new daemon thread and never waits for one.

    (A `ThreadPoolExecutor` subclass because asyncio takes no other kind as a default executor.)
    """

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # the future carries whatever the job raised
                future.set_exception(exc)
            else:
                future.set_result(result)

        threading.Thread(target=work, name="agentkit-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to join: the threads are the jobs' own."""


def _new_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    loop.set_default_executor(_DaemonThreads())
    return loop


def run_to_end(work: Coroutine[Any, Any, T]) -> T:
    """`work`'s result (or exception) on a fresh event loop, returned as soon as `work` is
    done (as `asyncio.run`, less the wait for worker threads)."""
    with asyncio.Runner(loop_factory=_new_loop) as runner:
        return runner.run(work)


def iterate_to_end(start: Callable[[], AsyncIterator[T]], name: str) -> Iterator[T]:
    """The items of the async iterator `start()` makes, for code without an event loop: each
    item is awaited on a private loop kept for the iteration, so the stream's work goes on
    from one item to the next; leaving early closes the stream. `name` is for the error raised
    inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(f"{name}_sync was called inside a running event loop; use `async for ... in {name}(...)`")
    return _iterate(start)


def _iterate(start: Callable[[], AsyncIterator[T]]) -> Iterator[T]:
    with asyncio.Runner(loop_factory=_new_loop) as runner:
        items = start()
        loop, context = runner.get_loop(), contextvars.copy_context()  # one context, as `runner.run` keeps

        async def step() -> T:
            return await items.__anext__()

        try:
            while True:
                try:  # the loop run as is: `runner.run` sets and restores a SIGINT handler per item,
                    # which costs more than a small item (a partial value, a piece of text) itself
                    item = loop.run_until_complete(loop.create_task(step(), context=context))
                except StopAsyncIteration:
                    return
                yield item
        finally:
            close = getattr(items, "aclose", None)
            if close is not None:
                loop.run_until_complete(loop.create_task(close(), context=context))

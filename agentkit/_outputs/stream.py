"""`stream_extract(T, text)`: an extraction whose value is handed over as it grows (sync), and
`astream_extract`, its async twin: the bare name is sync, the `a` prefix async, as `extract`.

For one release `stream_extract(...)` also iterates with `async for` (its async spelling until
then), with a `DeprecationWarning`; `stream_extract_sync`, its old sync spelling, is kept as a
deprecated alias.
"""

from __future__ import annotations

import asyncio
import functools
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from runtimes import Runtime, Usage

from .._errors import OutputValidationError, callback_failures
from .._sync import iterate_to_end
from .extract import check_ending, open_stream, runtime_errors
from .grounding import GroundedMode
from .partial import NO_VALUE, Partials


async def astream_extract(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
    validation_context: Any = None,
    grounded: GroundedMode = "auto",
) -> AsyncIterator[Any]:
    """`aextract`, yielding the value as it is written: first partial values, then the whole `T`.

    A partial value is the JSON value written so far with only what is certain in it: every
    object and list open so far, every string, number and literal that is complete (a string
    once closed, a number once what follows ends it), never half of one; so each is a
    prefix-consistent view of the final value, and each differs from the one before. The
    grammar holds the answer to `T`'s shape at every token, so the prefix always reads. The
    last item is the validated `T` (an instance of it, where the others are dicts, lists and
    scalars; `validation_context` reaches its pydantic validators as `info.context`). Errors
    as `extract`'s; there are no corrections here (an answer that fails validation raises
    `OutputValidationError`, after its partials were shown). `grounded` as `extract`'s."""
    spec, rt, messages, pieces = open_stream(output_type, text, runtime=runtime, instructions=instructions,
                                             max_tokens=max_tokens, temperature=temperature, seed=seed,
                                             grounded=grounded)
    partials = Partials()
    try:
        while True:
            with runtime_errors(rt, messages, max_tokens):
                try:
                    piece = await pieces.__anext__()
                except StopAsyncIteration:
                    break
            value = partials.add(piece)
            if value is not NO_VALUE:
                yield value
    finally:
        await pieces.aclose()
    generation = pieces.generation
    assert generation is not None
    check_ending(generation, messages, max_tokens, Usage())
    answered = messages + [{"role": "assistant", "content": generation.text}]
    context = functools.partial(dict, messages=answered, usage=generation.usage)
    with callback_failures("output_type", context, passes=(OutputValidationError,)):
        value = spec.validate(generation.text, validation_context=validation_context, messages=answered,
                              usage=generation.usage)
    yield value


class ValueStream(Iterator[Any]):
    """The values of a stream made by `start()`, iterated with `for` (each awaited on a
    private event loop, as `iterate_to_end` does); for one release also with `async for`,
    which warns that the async spelling is now `async_name`."""

    def __init__(self, start: Callable[[], AsyncIterator[Any]], name: str, async_name: str):
        self._start = start
        self._name = name
        self._async_name = async_name
        self._values: Iterator[Any] | None = None

    def __iter__(self) -> ValueStream:
        return self

    def __next__(self) -> Any:
        if self._values is None:
            self._values = sync_values(self._start, self._name, self._async_name)
        return next(self._values)

    def close(self) -> None:
        """Stop early: the stream under it is closed (as leaving a `for` loop does)."""
        close = getattr(self._values, "close", None)
        if close is not None:
            close()

    def __aiter__(self) -> AsyncIterator[Any]:
        warnings.warn(
            f"`async for` over {self._name}(...) is deprecated: {self._name} is sync now (`for value in "
            f"{self._name}(...)`); in async code write `async for value in {self._async_name}(...)`",
            DeprecationWarning,
            stacklevel=2,
        )
        return self._start()


def sync_values(start: Callable[[], AsyncIterator[Any]], name: str, async_name: str) -> Iterator[Any]:
    """`iterate_to_end(start)`, refused inside a running event loop with the async spelling named."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return iterate_to_end(start, name)
    raise RuntimeError(f"{name} was called inside a running event loop; use `async for ... in {async_name}(...)`")


def stream_extract(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
    validation_context: Any = None,
    grounded: GroundedMode = "auto",
) -> ValueStream:
    """`astream_extract` for code without an event loop: an iterator of the same values,
    partial values and then the validated `T`. Leaving the loop early closes the stream.

    (For one release, `async for` over it still works, with a `DeprecationWarning`: use
    `astream_extract`.)"""
    return ValueStream(
        lambda: astream_extract(output_type, text, runtime=runtime, instructions=instructions, max_tokens=max_tokens,
                                temperature=temperature, seed=seed, validation_context=validation_context,
                                grounded=grounded),
        "stream_extract",
        "astream_extract",
    )


def stream_extract_sync(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
    validation_context: Any = None,
) -> Iterator[Any]:
    """Deprecated: `stream_extract` is sync now, and gives the same values."""
    warnings.warn("stream_extract_sync is deprecated: stream_extract is sync now and gives the same values",
                  DeprecationWarning, stacklevel=2)
    return sync_values(
        lambda: astream_extract(output_type, text, runtime=runtime, instructions=instructions, max_tokens=max_tokens,
                                temperature=temperature, seed=seed, validation_context=validation_context),
        "stream_extract_sync",
        "astream_extract",
    )

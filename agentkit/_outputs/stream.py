"""`stream_extract(T, text)`: an extraction whose value is yielded as it grows, and its sync twin."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from runtimes import Runtime, Usage

from .extract import check_ending, extraction_messages, output_spec, runtime_errors
from .._inputs import check_generation_settings, check_runtime, check_text
from .partial import NO_VALUE, Partials
from .._runtime import resolve_runtime
from .._sync import iterate_to_end

async def stream_extract(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
) -> AsyncIterator[Any]:
    """`extract`, yielding the value as it is written: first partial values, then the whole `T`.

    A partial value is the JSON value written so far with only what is certain in it: every
    object and list open so far, every string, number and literal that is complete (a string
    once closed, a number once what follows ends it), never half of one; so each is a
    prefix-consistent view of the final value, and each differs from the one before. The
    grammar holds the answer to `T`'s shape at every token, so the prefix always reads. The
    last item is the validated `T` (an instance of it, where the others are dicts, lists and
    scalars). Errors as `extract`'s; there are no corrections here (an answer that fails
    validation raises `OutputValidationError`, after its partials were shown)."""
    check_text("text", text, optional=False)
    check_text("instructions", instructions)
    check_generation_settings(max_tokens=max_tokens, temperature=temperature, seed=seed)
    check_runtime(runtime)
    spec = output_spec(output_type)
    rt = resolve_runtime(runtime)
    messages = extraction_messages(spec, text, instructions)
    with runtime_errors(rt, messages, max_tokens):
        pieces = rt.stream(messages, grammar=spec.grammar_for(rt, max_tokens), max_tokens=max_tokens,
                           temperature=temperature, seed=seed)
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
    usage = Usage()
    check_ending(generation, messages, max_tokens, usage)
    answered = messages + [{"role": "assistant", "content": generation.text}]
    yield spec.validate(generation.text, messages=answered, usage=generation.usage)


def stream_extract_sync(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Iterator[Any]:
    """`stream_extract` for code without an event loop: a plain iterator of the same values."""
    return iterate_to_end(
        lambda: stream_extract(output_type, text, runtime=runtime, instructions=instructions, max_tokens=max_tokens,
                               temperature=temperature, seed=seed),
        "stream_extract",
    )

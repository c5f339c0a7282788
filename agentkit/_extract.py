"""`extract(T, text)`: one constrained generation whose output validates into `T`."""

from __future__ import annotations

import asyncio
import functools
from typing import Any, TypeVar, overload

from grammar import GrammarError
from runtimes import GrammarIgnored, Runtime, RuntimeFailure, TokenBudgetExceeded

from ._errors import IncompleteOutput, ModelRequestFailed, UnexpectedModelOutput, safe_str
from ._inputs import check_generation_settings, check_runtime, check_text
from ._output import OutputSpec
from ._runtime import budget_reached, resolve_runtime

T = TypeVar("T")

DEFAULT_INSTRUCTIONS = (
    "Extract the information in the user's text. Use only what the text states; "
    "do not invent values."
)


@functools.lru_cache(maxsize=128)
def _spec(output_type: Any) -> OutputSpec[Any]:
    return OutputSpec(output_type)


def output_spec(output_type: Any) -> OutputSpec[Any]:
    """The (cached) schema, grammar and validator of an output type."""
    try:
        return _spec(output_type)
    except TypeError:  # an unhashable type expression: build it afresh
        return OutputSpec(output_type)


# A class gives its instances; a type expression that is no class (`int | None`,
# `Annotated[...]`) gives what type checkers cannot name from it.
@overload
async def aextract(
    output_type: type[T],
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
) -> T: ...


@overload
async def aextract(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Any: ...


async def aextract(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Any:
    """`text`'s content as a `T` (a pydantic model, dataclass, TypedDict, `list[...]` ...).

    One generation, held by `T`'s grammar, so the answer always has `T`'s shape; it is then
    validated (constraints the grammar cannot enforce are checked here). Raises
    `IncompleteOutput` when `max_tokens` runs out before the model finishes (never a half
    object) and `OutputValidationError` when the value breaks a constraint checked after
    decoding, or nests deeper than agentkit reads; `ModelRequestFailed` for whatever the
    runtime raised. A bad argument is an `InvalidArgument` naming it.
    """
    check_text("text", text, optional=False)
    check_text("instructions", instructions)
    check_generation_settings(max_tokens=max_tokens, temperature=temperature, seed=seed)
    check_runtime(runtime)
    spec = output_spec(output_type)
    rt = resolve_runtime(runtime)
    messages = [
        {"role": "system", "content": f"{instructions or DEFAULT_INSTRUCTIONS}\n\n{spec.instructions()}"},
        {"role": "user", "content": text},
    ]
    try:
        generation = await rt.generate(
            messages, grammar=spec.grammar, max_tokens=max_tokens, temperature=temperature, seed=seed
        )
    except TokenBudgetExceeded as exc:
        raise IncompleteOutput(
            f"max_tokens={max_tokens} ran out before the output was complete", text=exc.text, messages=messages
        ) from exc
    except GrammarIgnored as exc:
        raise UnexpectedModelOutput(
            f"runtime {rt.name!r} returned text the grammar rejects", text=exc.text, messages=messages
        ) from exc
    except (RuntimeFailure, GrammarError) as exc:
        raise ModelRequestFailed(f"runtime {rt.name!r} failed: {exc}", messages=messages) from exc
    except Exception as exc:  # a runtime's own bug, or a dependency's error: still no message lost
        raise ModelRequestFailed(
            f"runtime {rt.name!r} raised {type(exc).__name__}: {safe_str(exc)}", messages=messages
        ) from exc
    if generation.finish_reason == "cancelled":
        raise asyncio.CancelledError("the runtime cancelled the generation")
    if budget_reached(generation):
        raise IncompleteOutput(
            f"max_tokens={max_tokens} ran out before the model finished the output; raise max_tokens",
            text=generation.text,
            messages=messages,
            usage=generation.usage,
        )
    answered = messages + [{"role": "assistant", "content": generation.text}]
    return spec.validate(generation.text, messages=answered, usage=generation.usage)


@overload
def extract(
    output_type: type[T],
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
) -> T: ...


@overload
def extract(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Any: ...


def extract(
    output_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
) -> Any:
    """`aextract` for code without an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(
            aextract(
                output_type, text, runtime=runtime, instructions=instructions, max_tokens=max_tokens,
                temperature=temperature, seed=seed,
            )
        )
    raise RuntimeError("extract was called inside a running event loop; use `await aextract(...)`")

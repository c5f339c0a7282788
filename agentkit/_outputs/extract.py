"""`extract(T, text)`: one constrained generation whose output validates into `T`."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import Iterator
from typing import Any, Literal, TypeVar, overload

from grammar import Grammar, GrammarError
from runtimes import Generation, GrammarIgnored, Runtime, RuntimeFailure, TextStream, TokenBudgetExceeded, Usage, checks

from .confidence import Extraction, field_confidences, no_scores_reason
from .._errors import (
    IncompleteOutput,
    InvalidArgument,
    ModelRequestFailed,
    ModelRetry,
    OutputValidationError,
    UnexpectedModelOutput,
    callback_failures,
    safe_str,
)
from .events import RetryRecord
from .grounding import (NULL_ONLY, FieldGrounding, GroundedMode, check_mode, cut_values, dates_inside, empty_lists,
                        grounded_grammar, keep_from, kept_from, nullable_fields, numbers_inside, repeated_items,
                        repeated_values, top_level_held)
from .._tools.schema import unescape
from .._inputs import as_argument_error, check_generation_settings, check_runtime, check_text
from .output import OutputSpec, OutputValidator, apply_validator, correction
from .._runtime import budget_reached, resolve_runtime

T = TypeVar("T")
logger = logging.getLogger("agentkit")

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


# A class gives its instances, and `details=True` or `confidence=True` an `Extraction` of
# them; a type expression that is no class (`int | None`, `Annotated[...]`) gives what type
# checkers cannot name from it.
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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: Literal[False] = False,
    details: Literal[False] = False,
    grounded: GroundedMode = "auto",
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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: Literal[False] = False,
    details: Literal[False] = False,
    grounded: GroundedMode = "auto",
) -> Any: ...


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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: Literal[True],
    details: bool = False,
    grounded: GroundedMode = "auto",
) -> Extraction[T]: ...


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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: bool = False,
    details: Literal[True],
    grounded: GroundedMode = "auto",
) -> Extraction[T]: ...


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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: bool = False,
    details: bool = False,
    grounded: GroundedMode = "auto",
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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: bool = False,
    details: bool = False,
    grounded: GroundedMode = "auto",
) -> Any:
    """`text`'s content as a `T` (a pydantic model, dataclass, TypedDict, `list[...]` ...).

    One generation, held by `T`'s grammar, so the answer always has `T`'s shape; it is then
    validated (constraints the grammar cannot enforce are checked here; `validation_context`
    reaches `T`'s pydantic validators as `info.context`). Raises `IncompleteOutput` when
    `max_tokens` runs out before the model finishes (never a half object) and
    `OutputValidationError` when the value breaks a constraint checked after decoding, or
    nests deeper than agentkit reads, after `max_retries` corrections: each refused answer
    goes back to the model with its violations, and it answers again. `output_validator`
    (sync or async) is given the value and returns the one to keep, or raises `ModelRetry` to
    refuse it with a message (a correction too). The error's `retries` lists the corrections
    asked for. `ModelRequestFailed` for whatever the runtime raised. A bad argument is an
    `InvalidArgument` naming it.

    `details=True` returns an `Extraction[T]` instead: the value, the JSON the model wrote and
    the tokens spent (`usage`, corrections included). `confidence=True` adds how sure the model
    was of each of its leaf values (`Extraction.fields`, by JSON pointer), read from the
    runtime's token scores (local runtimes then read a model pass per token: no jump-forward).

    `grounded=True` holds every plain string (a list's items too) and number of `T` to the
    text: a string is then a span of `text`, a number one `text` writes (within the field's own
    constraints); `"auto"` holds the fields a rule picks from their schema, names and the text;
    a field's `Grounded()` mark overrides either. A field no span or number fits keeps its
    plain grammar; `Extraction.grounding` says, per field, what was held and why not.
    """
    check_extraction(text=text, instructions=instructions, max_tokens=max_tokens, temperature=temperature,
                     seed=seed, runtime=runtime)
    with as_argument_error():
        checks.check_count("max_retries", max_retries, least=0)
    if output_validator is not None and not callable(output_validator):
        raise InvalidArgument("output_validator", f"must be a function, not {type(output_validator).__name__}")
    for flag, given in (("confidence", confidence), ("details", details)):
        if not isinstance(given, bool):
            raise InvalidArgument(flag, f"must be True or False, not {type(given).__name__}")
    check_mode(grounded)
    spec = output_spec(output_type)
    rt = resolve_runtime(runtime)
    held, grounding = grounded_grammar(spec, text, grounded, rt)
    messages = extraction_messages(spec, text, instructions)
    # Two held numbers that took one value are told apart by the model's scores (`keep_from`).
    weighs_numbers = held is not None and list(top_level_held(grounding).values()).count("number") > 1
    usage = Usage()
    retries: list[RetryRecord] = []
    attempt = 0
    while True:
        attempt += 1
        generation = await _generate(rt, messages, spec, max_tokens=max_tokens, temperature=temperature, seed=seed,
                                     usage=usage, scores=confidence or weighs_numbers, held=held)
        usage = usage + generation.usage
        if held is not None:
            generation, usage = await _read_again(rt, messages, spec, text, grounded, grounding, generation,
                                                  max_tokens=max_tokens, temperature=temperature, seed=seed,
                                                  usage=usage, scores=confidence or weighs_numbers)
        messages = messages + [{"role": "assistant", "content": generation.text}]
        context = functools.partial(dict, messages=messages, usage=usage)
        try:
            with callback_failures("output_type", context, passes=(OutputValidationError,)):
                value = spec.validate(generation.text, validation_context=validation_context, messages=messages,
                                      usage=usage)
            if output_validator is not None:
                with callback_failures("output_validator", context, passes=(OutputValidationError, ModelRetry)):
                    value = await apply_validator(output_validator, value)
        except (OutputValidationError, ModelRetry) as exc:
            violations, kind, told = correction(exc)
        else:
            if retries:
                retries = [dataclasses.replace(r, fixed_at=attempt) for r in retries]
                logger.info("extract: attempt %d fixed %d refused answer(s)", attempt, len(retries))
            if confidence:
                return with_confidence(value, generation, rt.name, usage, grounding)
            return Extraction(value, None, generation.text, NOT_ASKED, usage, grounding) if details else value
        retries.append(RetryRecord(attempt, "output", kind, told))  # type: ignore[arg-type]
        if len(retries) > max_retries:
            error = OutputValidationError(violations, generation.text, messages=messages, usage=usage)
            error.retries = retries
            raise error
        logger.info("extract: correction %d of %d asked for: %s", len(retries), max_retries, told)
        messages = messages + [{"role": "user", "content": told}]


NOT_ASKED = "confidence=False: no token scores were asked for"


def check_extraction(*, text: str, instructions: str | None, max_tokens: int, temperature: float,
                     seed: int | None, runtime: Runtime | None) -> None:
    """The arguments every extraction takes, each refused with an `InvalidArgument` naming it."""
    check_text("text", text, optional=False)
    check_text("instructions", instructions)
    check_generation_settings(max_tokens=max_tokens, temperature=temperature, seed=seed)
    check_runtime(runtime)


def with_confidence(value: T, generation: Generation, runtime_name: str, usage: Usage,
                    grounding: tuple[FieldGrounding, ...] = ()) -> Extraction[T]:
    """`value` with how sure the model was of each leaf of the JSON it wrote."""
    text = generation.text
    if generation.token_scores is None:
        return Extraction(value, None, text, no_scores_reason(runtime_name), usage, grounding)
    try:
        fields = field_confidences(generation)
    except ValueError as exc:  # the scores do not spell the text: none is given rather than a wrong one
        return Extraction(value, None, text, f"the token scores could not be matched to the text: {exc}", usage,
                          grounding)
    return Extraction(value, fields, text, None, usage, grounding)


def required_fields(spec: OutputSpec[Any]) -> set[str]:
    """The names of the top-level fields `spec`'s schema requires."""
    required = spec.schema.get("required")
    return {key for key in required if isinstance(key, str)} if isinstance(required, list) else set()


READINGS_AGAIN = 2
"""How many times an extraction is read again at most: a reading that refuses one field a
value can give another field a value it shared or cut (company kept from the name takes the
email address)."""


async def _read_again(rt: Runtime, messages: list[dict[str, Any]], spec: OutputSpec[Any], text: str,
                      grounded: GroundedMode, grounding: tuple[FieldGrounding, ...], generation: Generation, *,
                      max_tokens: int, temperature: float, seed: int | None, usage: Usage,
                      scores: bool) -> tuple[Generation, Usage]:
    """The extraction read again where a reading held a list that repeated an item
    (`repeated_items`: each such list bounded to its distinct items) or left a required one
    empty (`empty_lists`: given one item at least), gave two fields one
    value or one a piece of another's (`repeated_values`, `cut_values`: each but one kept from
    it, `keep_from`) or a text a number field's value or another field's date or time
    (`numbers_inside`, `dates_inside`: the text refused it);
    what each reading refused holds in the next, up to `READINGS_AGAIN` readings."""
    required, nullable = required_fields(spec), nullable_fields(spec.schema)
    bounds: dict[str, int] = {}
    filled: set[str] = set()
    kept: dict[str, list[Any]] = {}
    nulled: set[str] = set()
    inside: dict[str, list[dict[str, Any]]] = {}
    for _ in range(READINGS_AGAIN):
        found_bounds = repeated_items(generation.text, grounding)
        empty = empty_lists(generation.text, grounding, required) - filled
        shared = repeated_values(generation.text, grounding)
        cut = cut_values(generation.text, grounding, text, required)
        found_inside = numbers_inside(generation.text, grounding)
        for key, schemas in dates_inside(generation.text, grounding).items():
            found_inside[key] = [*found_inside.get(key, []), *schemas]
        if not (found_bounds or empty or shared or cut or found_inside):
            break
        sure: dict[str, float] = {}
        if shared and generation.token_scores is not None:
            with contextlib.suppress(ValueError):  # scores that do not spell the text: the first field
                sure = {unescape(pointer[1:]): c.probability
                        for pointer, c in field_confidences(generation).items() if pointer.count("/") == 1}
        for key, n in found_bounds.items():
            bounds[key] = min(n, bounds.get(key, n))
        filled |= empty
        pieces = {keys[0] for keys, _ in cut}
        for key, values in keep_from([*shared, *cut], sure, required).items():
            if key not in required and key in nullable and (key in pieces or key in kept):
                nulled.add(key)  # an optional field that took a piece, or a second value: no value of its own
            kept[key] = list(dict.fromkeys([*kept.get(key, []), *values]))
        for key, schemas in found_inside.items():
            inside[key] = [*inside.get(key, []), *(s for s in schemas if s not in inside.get(key, []))]
        refused = {key: [NULL_ONLY] if key in nulled else kept_from(values) for key, values in kept.items()}
        for key, schemas in inside.items():
            refused[key] = [*refused.get(key, []), *schemas]
        logger.info("extract: read again, %s", "; ".join(
            [f"{key} bounded to {n} items" for key, n in bounds.items()]
            + [f"{key} given one item at least" for key in filled]
            + [f"{key} read as null" if key in nulled else f"{key} kept from {values[0]!r}" for key, values in kept.items()]
            + [f"{key} kept from the numbers, dates or times it held" for key in inside]))
        held, _ = grounded_grammar(spec, text, grounded, rt, bounds, refused, filled)
        generation = await _generate(rt, messages, spec, max_tokens=max_tokens, temperature=temperature, seed=seed,
                                     usage=usage, scores=scores, held=held)
        usage = usage + generation.usage
    return generation, usage


async def _generate(rt: Runtime, messages: list[dict[str, Any]], spec: OutputSpec[Any], *, max_tokens: int,
                    temperature: float, seed: int | None, usage: Usage, scores: bool = False,
                    held: Grammar | None = None) -> Generation:
    """One generation of an extraction, whole (not cut by its budget), or a typed error;
    `held` the grammar holding some values to the text, where there is one."""
    with runtime_errors(rt, messages, max_tokens):
        generation = await rt.generate(
            messages, grammar=held or spec.grammar_for(rt, max_tokens), max_tokens=max_tokens, temperature=temperature,
            seed=seed, scores=scores,
        )
    check_ending(generation, messages, max_tokens, usage)
    return generation


def open_stream(output_type: Any, text: str, *, runtime: Runtime | None, instructions: str | None, max_tokens: int,
                temperature: float, seed: int | None,
                grounded: GroundedMode) -> tuple[OutputSpec[Any], Runtime, list[dict[str, Any]], TextStream]:
    """A streamed extraction's start, its arguments checked: the output's spec, the runtime,
    the messages and the stream of the answer (held to the text where `grounded` says so, and
    on a server to `max_tokens` bytes)."""
    check_extraction(text=text, instructions=instructions, max_tokens=max_tokens, temperature=temperature,
                     seed=seed, runtime=runtime)
    check_mode(grounded)
    spec = output_spec(output_type)
    rt = resolve_runtime(runtime)
    held, _ = grounded_grammar(spec, text, grounded, rt)
    messages = extraction_messages(spec, text, instructions)
    with runtime_errors(rt, messages, max_tokens):
        pieces = rt.stream(messages, grammar=held or spec.grammar_for(rt, max_tokens), max_tokens=max_tokens,
                           temperature=temperature, seed=seed)
    return spec, rt, messages, pieces


@contextlib.contextmanager
def runtime_errors(rt: Runtime, messages: list[dict[str, Any]], max_tokens: int) -> Iterator[None]:
    """What a runtime raises during an extraction, as this package's typed errors (the
    messages kept)."""
    try:
        yield
    except StopAsyncIteration:  # a stream's end
        raise
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


def check_ending(generation: Generation, messages: list[dict[str, Any]], max_tokens: int, usage: Usage) -> None:
    """A generation that was cancelled, or cut by its budget, as its error."""
    if generation.finish_reason == "cancelled":
        raise asyncio.CancelledError("the runtime cancelled the generation")
    if budget_reached(generation):
        raise IncompleteOutput(
            f"max_tokens={max_tokens} ran out before the model finished the output; raise max_tokens",
            text=generation.text,
            messages=messages,
            usage=usage + generation.usage,
        )


def extraction_messages(spec: OutputSpec[Any], text: str, instructions: str | None) -> list[dict[str, Any]]:
    """The conversation an extraction starts from: the instructions with `T`'s schema, then the text."""
    return [
        {"role": "system", "content": f"{instructions or DEFAULT_INSTRUCTIONS}\n\n{spec.instructions()}"},
        {"role": "user", "content": text},
    ]


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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: Literal[False] = False,
    details: Literal[False] = False,
    grounded: GroundedMode = "auto",
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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: Literal[False] = False,
    details: Literal[False] = False,
    grounded: GroundedMode = "auto",
) -> Any: ...


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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: Literal[True],
    details: bool = False,
    grounded: GroundedMode = "auto",
) -> Extraction[T]: ...


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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: bool = False,
    details: Literal[True],
    grounded: GroundedMode = "auto",
) -> Extraction[T]: ...


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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: bool = False,
    details: bool = False,
    grounded: GroundedMode = "auto",
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
    max_retries: int = 1,
    output_validator: OutputValidator | None = None,
    validation_context: Any = None,
    confidence: bool = False,
    details: bool = False,
    grounded: GroundedMode = "auto",
) -> Any:
    """`aextract` for code without an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(
            aextract(
                output_type, text, runtime=runtime, instructions=instructions, max_tokens=max_tokens,
                temperature=temperature, seed=seed, max_retries=max_retries, output_validator=output_validator,
                validation_context=validation_context, confidence=confidence, details=details, grounded=grounded,
            )
        )
    raise RuntimeError("extract was called inside a running event loop; use `await aextract(...)`")

"""`extract_iter(T, text)`: the `T`s a text holds, each handed over, validated, as soon as its
JSON closes in the stream, rather than all of them once the list is whole.

The answer is held by the grammar of a JSON array of `T`; the incremental reader of partial
values (`partial.PartialJSON`) reads it as it arrives and says when an item has closed (a
later item began, or the array's own close came): that item is validated into a `T` then, on
its own, and handed over. `aextract_iter` is the async twin.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar, overload

from runtimes import Runtime, Usage

from .._errors import OutputValidationError, callback_failures
from .extract import check_ending, open_stream, output_spec, runtime_errors
from .grounding import GroundedMode
from .output import OutputSpec
from .partial import NO_VALUE, NotJSON, PartialJSON
from .stream import sync_values

T = TypeVar("T")


@overload
def aextract_iter(
    item_type: type[T], text: str, *, runtime: Runtime | None = None, instructions: str | None = None,
    max_tokens: int = 512, temperature: float = 0.0, seed: int | None = None, validation_context: Any = None,
    grounded: GroundedMode = "auto",
) -> AsyncIterator[T]: ...


@overload
def aextract_iter(
    item_type: Any, text: str, *, runtime: Runtime | None = None, instructions: str | None = None,
    max_tokens: int = 512, temperature: float = 0.0, seed: int | None = None, validation_context: Any = None,
    grounded: GroundedMode = "auto",
) -> AsyncIterator[Any]: ...


async def aextract_iter(
    item_type: Any,
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
    """Each `T` of the list `text` holds, validated, as soon as the model closes it.

    One generation held by the grammar of a JSON array of `T`. Each item is validated into a
    `T` when it closes (`validation_context` reaching its pydantic validators as
    `info.context`) and handed over before the next is written; an item that fails raises
    `OutputValidationError` at once, its violations' fields starting with the item's index
    (`[2].age`), after the items before it were handed over. There are no corrections. The
    budget is the whole list's: `IncompleteOutput` where `max_tokens` ran out before the list
    closed, after the items closed within it. Other errors, and `grounded`, as `extract`'s."""
    spec, rt, messages, pieces = open_stream(list[item_type], text, runtime=runtime,  # type: ignore[valid-type]
                                             instructions=instructions, max_tokens=max_tokens,
                                             temperature=temperature, seed=seed, grounded=grounded)
    item_spec = output_spec(item_type)
    reader: PartialJSON | None = PartialJSON()  # None once the text is no JSON prefix
    written: list[str] = []
    handed = 0
    try:
        while True:
            with runtime_errors(rt, messages, max_tokens):
                try:
                    piece = await pieces.__anext__()
                except StopAsyncIteration:
                    break
            written.append(piece)
            if reader is None:
                continue
            try:
                reader.feed(piece)
            except NotJSON:  # a runtime that ignored the grammar: the whole answer's check says how
                reader = None
                continue
            for index in range(handed, closed_items(reader)):
                so_far = functools.partial(dict, messages=messages + [{"role": "assistant", "content": "".join(written)}],
                                           usage=Usage())
                try:
                    with callback_failures("output_type", so_far, passes=(OutputValidationError,)):
                        item = validated_item(item_spec, reader.root[index], index, validation_context)
                except OutputValidationError as exc:  # with the answer so far
                    exc.messages = so_far()["messages"]
                    raise
                yield item
                handed += 1
    finally:
        await pieces.aclose()
    generation = pieces.generation
    assert generation is not None
    check_ending(generation, messages, max_tokens, Usage())
    if reader is not None and not reader.stack and isinstance(reader.root, list):
        return  # the list closed, and every item of it was handed over
    answered = messages + [{"role": "assistant", "content": generation.text}]
    with callback_failures("output_type", functools.partial(dict, messages=answered, usage=generation.usage),
                           passes=(OutputValidationError,)):
        items = spec.validate(generation.text, validation_context=validation_context, messages=answered,
                              usage=generation.usage)
    for item in items[handed:]:  # (the check raises first: a text the reader refused does not validate)
        yield item


def closed_items(reader: PartialJSON) -> int:
    """How many items of the array being read are closed: all of them while the reader stands
    in the array itself (or past it), all but the last while that one is still open."""
    root = reader.root
    if root is NO_VALUE or not isinstance(root, list):
        return 0
    return len(root) if len(reader.stack) <= 1 else len(root) - 1


def validated_item(item_spec: OutputSpec[Any], value: Any, index: int, validation_context: Any) -> Any:
    """The item at `index` validated into its type; `OutputValidationError` with each
    violation's field under the item's index, as the whole list's check would name it."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        return item_spec.validate(text, validation_context=validation_context)
    except OutputValidationError as exc:
        violations = [dataclasses.replace(v, field=f"[{index}]" + (v.field if v.field[:1] in ("", "[") else f".{v.field}"))
                      for v in exc.violations]
        raise OutputValidationError(violations, text) from None


@overload
def extract_iter(
    item_type: type[T], text: str, *, runtime: Runtime | None = None, instructions: str | None = None,
    max_tokens: int = 512, temperature: float = 0.0, seed: int | None = None, validation_context: Any = None,
    grounded: GroundedMode = "auto",
) -> Iterator[T]: ...


@overload
def extract_iter(
    item_type: Any, text: str, *, runtime: Runtime | None = None, instructions: str | None = None,
    max_tokens: int = 512, temperature: float = 0.0, seed: int | None = None, validation_context: Any = None,
    grounded: GroundedMode = "auto",
) -> Iterator[Any]: ...


def extract_iter(
    item_type: Any,
    text: str,
    *,
    runtime: Runtime | None = None,
    instructions: str | None = None,
    max_tokens: int = 512,
    temperature: float = 0.0,
    seed: int | None = None,
    validation_context: Any = None,
    grounded: GroundedMode = "auto",
) -> Iterator[Any]:
    """`aextract_iter` for code without an event loop: an iterator of the same `T`s, each
    handed over as it closes. Leaving the loop early closes the stream."""
    return sync_values(
        lambda: aextract_iter(item_type, text, runtime=runtime, instructions=instructions, max_tokens=max_tokens,
                              temperature=temperature, seed=seed, validation_context=validation_context,
                              grounded=grounded),
        "extract_iter",
        "aextract_iter",
    )

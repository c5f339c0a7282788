"""A conversation as JSON and back: `messages_to_json`, `messages_from_json`.

A run's messages are OpenAI-style dicts, typed by role (`SystemMessage`, `UserMessage`,
`AssistantMessage` with its calls structured in `tool_calls`, `ToolMessage` answering a call by
its id, and any other role a run takes, `developer` say). Dumped and loaded, they come back
equal, so a run continued from a stored conversation (`agent.run(prompt,
message_history=loaded)`) is the run continued in memory. Whatever a run takes can be stored,
as long as its values are JSON's; what is read is measured first, without recursion, to the
bounds agentkit reads a model's JSON to (`_bounds`)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Annotated, Any, Union

import pydantic
from pydantic import Discriminator, Tag

from .._bounds import MAX_NESTING, max_digits, text_problem, too_deep
from .._errors import InvalidArgument
from .._messages import AssistantMessage, Message, OtherMessage, SystemMessage, ToolMessage, UserMessage, readable

HISTORY_NESTING = 2
"""Levels a stored conversation adds around a message's values: the list, and the message."""

_TYPED_ROLES = ("system", "user", "assistant", "tool")


def _role(message: Any) -> str | None:
    """The type a message is checked as: its role's, `other` for any other role (None: no role)."""
    role = message.get("role") if isinstance(message, dict) else None
    if not isinstance(role, str):
        return None
    return role if role in _TYPED_ROLES else "other"


_Typed = Annotated[
    Union[
        Annotated[SystemMessage, Tag("system")],
        Annotated[UserMessage, Tag("user")],
        Annotated[AssistantMessage, Tag("assistant")],
        Annotated[ToolMessage, Tag("tool")],
        Annotated[OtherMessage, Tag("other")],
    ],
    Discriminator(_role, custom_error_type="no_role",
                  custom_error_message="is no message: a dict with a 'role' that is a string"),
]
_ADAPTER: pydantic.TypeAdapter[list[Any]] = pydantic.TypeAdapter(list[_Typed])


def _where(parts: Sequence[str | int]) -> str:
    return "".join(f"[{part!r}]" if isinstance(part, str) else f"[{part}]" for part in parts)


def _json_problem(value: list[Any]) -> tuple[str, str] | None:
    """Where and why `value` is no JSON that loads back equal (a set, an object, a key that is
    no string, NaN, an integer past `max_digits()`, a lone surrogate, nesting past the bound),
    or None. Walked without recursion; tuples are written as lists."""
    todo: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    deepest = MAX_NESTING + HISTORY_NESTING
    while todo:
        item, at = todo.pop()
        if isinstance(item, str):
            if readable(item) != item:
                return _where(at), "holds a lone surrogate, which has no UTF-8 encoding"
        elif item is None or isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if item.bit_length() > 3.33 * max_digits():  # past what Python writes as a decimal
                return _where(at), f"is an integer of more than {max_digits()} digits"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return _where(at), f"is {item}, which JSON cannot hold"
        elif isinstance(item, (dict, list, tuple)):
            if len(at) == deepest:
                return _where(at), too_deep(len(at) + 1, deepest)
            if isinstance(item, dict):
                for key, sub in item.items():
                    if not isinstance(key, str):
                        return _where(at), f"has a key {key!r} that is no string (JSON keys are strings)"
                    if readable(key) != key:
                        return _where(at), "has a key that holds a lone surrogate"
                    todo.append((sub, (*at, key)))
            else:
                todo.extend((sub, (*at, i)) for i, sub in enumerate(item))
        else:
            return _where(at), f"is of type {type(item).__name__}, which JSON cannot hold"
    return None


def _place(value: list[Any], error: Any) -> list[str | int]:
    """Where in `value` a validation error stands: its location less the type the role chose
    (second) and the union branch a leaf was tried as (after the leaf); a missing key is named."""
    loc = list(error["loc"])
    del loc[1:2]
    place: list[str | int] = []
    item: Any = value
    for part in loc:
        present = (isinstance(item, dict) and part in item) or (
            isinstance(item, list) and isinstance(part, int) and 0 <= part < len(item))
        if not present:
            if error["type"] == "missing":
                place.append(part)
            break
        place.append(part)
        item = item[part]
    return place


def _checked(value: list[Any], argument: str) -> list[Message]:
    problem = _json_problem(value)
    if problem is not None:
        raise InvalidArgument(f"{argument}{problem[0]}", problem[1])
    try:
        _ADAPTER.validate_python(value, strict=True)
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False)
        place = _place(value, errors[0])
        reasons = dict.fromkeys(e["msg"] for e in errors if _place(value, e) == place)  # a union's branches
        raise InvalidArgument(f"{argument}{_where(place)}", "; or ".join(reasons)) from None
    return [dict(m) for m in value]


def messages_to_json(messages: Sequence[Message]) -> str:
    """`messages` (a run's `result.messages`, say) as JSON text: a list of message objects.

    Any message a run takes is stored: a role of its own, content a text, a list of parts or
    None, keys of its own; their values must be JSON's (a tuple is written as a list). The
    first message or value that does not fit is an `InvalidArgument` naming its place."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidArgument("messages", f"must be a list of messages, not {type(messages).__name__}")
    return json.dumps(_checked(list(messages), "messages"), ensure_ascii=False)


def messages_from_json(text: str | bytes) -> list[Message]:
    """The messages `messages_to_json` wrote, equal to those it was given; an
    `InvalidArgument` naming the place where `text` is not JSON, nests deeper than a
    message's values may (`MAX_NESTING` inside the list and the message), or is not such a list."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode(json.detect_encoding(text))
        except UnicodeDecodeError as exc:
            raise InvalidArgument("text", f"is not JSON: {exc}") from None
    if not isinstance(text, str):
        raise InvalidArgument("text", f"must be JSON text (str or bytes), not {type(text).__name__}")
    problem = text_problem(text, nesting=MAX_NESTING + HISTORY_NESTING, named=MAX_NESTING + HISTORY_NESTING)
    if problem is not None:  # parsing it would run out of stack, or Python refuses the number
        raise InvalidArgument("text", problem)
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidArgument("text", f"is not JSON: {exc}") from None
    if not isinstance(value, list):
        raise InvalidArgument("text", f"must hold a JSON list of messages, not {type(value).__name__}")
    return _checked(value, "text")

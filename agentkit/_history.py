"""A conversation as JSON and back: `messages_to_json`, `messages_from_json`.

A run's messages are OpenAI-style dicts, typed by role (`SystemMessage`, `UserMessage`,
`AssistantMessage` with its calls structured in `tool_calls`, `ToolMessage` answering a call by
its id). Dumped and loaded, they come back equal, so a run continued from a stored conversation
(`agent.run(prompt, message_history=loaded)`) is the run continued in memory."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Union

import pydantic
from pydantic import Field

from ._errors import InvalidArgument
from ._messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage

_Typed = Annotated[
    Union[SystemMessage, UserMessage, AssistantMessage, ToolMessage],
    Field(discriminator="role"),
]
_ROLES = ("system", "user", "assistant", "tool")
_ADAPTER: pydantic.TypeAdapter[list[Any]] = pydantic.TypeAdapter(list[_Typed])


def _checked(value: Any, argument: str) -> list[Message]:
    try:
        _ADAPTER.validate_python(value, strict=True)
    except pydantic.ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = list(first["loc"])
        if len(loc) > 1 and loc[1] in _ROLES:  # the role that chose the type, not a key of the message
            del loc[1]
        where = "".join(f"[{part!r}]" if isinstance(part, str) else f"[{part}]" for part in loc)
        raise InvalidArgument(f"{argument}{where}", first["msg"]) from None
    return [dict(m) for m in value]


def messages_to_json(messages: Sequence[Message]) -> str:
    """`messages` (a run's `result.messages`, say) as JSON text: a list of message objects.

    Each message is checked against its role's type first: an `InvalidArgument` names the
    first that does not fit."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidArgument("messages", f"must be a list of messages, not {type(messages).__name__}")
    return json.dumps(_checked(list(messages), "messages"), ensure_ascii=False)


def messages_from_json(text: str | bytes) -> list[Message]:
    """The messages `messages_to_json` wrote, equal to those it was given; an
    `InvalidArgument` naming the place where `text` is not JSON or not such a list."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument("text", f"is not JSON: {exc}") from None
    if not isinstance(value, list):
        raise InvalidArgument("text", f"must hold a JSON list of messages, not {type(value).__name__}")
    return _checked(value, "text")

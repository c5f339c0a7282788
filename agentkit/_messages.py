"""Chat messages (OpenAI-style dicts, so any runtime or server takes them), tool-call envelopes,
and what a model turn's text means: free text, tool calls, or a final output."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, StringConstraints, with_config
from typing_extensions import NotRequired, TypedDict

import pydantic_core

import grammar

from ._bounds import UnreadableTurn, check_turn
from ._errors import CallDenied, InvalidArgument, ModelRetry, ToolArgumentsError, UnreadableResult, safe_str
from ._inputs import check_prompt

Envelope = Literal["json", "hermes", "fenced", "python"]
_SURROGATE = re.compile("[\ud800-\udfff]")
CALL_WHITESPACE = 12
"""Blanks a call's JSON may hold between tokens: pretty-printed to a depth of five."""


def call_envelopes(canonical: Envelope) -> tuple[Envelope, ...]:
    """The envelopes a model turn may write calls in: the runtime's own (its template's), then
    a ```json fence and bare JSON, the forms tool models write unasked. A list of Python
    calls stands alone: a model taught it writes every call in it."""
    if canonical == "python":
        return ("python",)
    return (canonical,) + tuple(e for e in ("fenced", "json") if e != canonical)


Content = str | list[Any] | None
"""A message's content, as a run takes it: a text, OpenAI's list of content parts, or None."""


@with_config(ConfigDict(extra="allow"))  # a key of its own (a user's `name`) is kept
class SystemMessage(TypedDict):
    role: Literal["system"]
    content: NotRequired[Content]


@with_config(ConfigDict(extra="allow"))  # a key of its own (a user's `name`) is kept
class UserMessage(TypedDict):
    role: Literal["user"]
    content: NotRequired[Content]


class FunctionCall(TypedDict):
    name: str
    arguments: str  # the arguments as JSON text, as OpenAI's messages carry them


class ToolCallPart(TypedDict):
    """A structured call in an assistant message: its `id`, and the function and arguments;
    `awaits_approval` marks a call a paused run holds for a decision (the arguments then as
    they were shown), so the mark survives a history stored as JSON."""

    id: str
    type: Literal["function"]
    function: FunctionCall
    awaits_approval: NotRequired[bool]


@with_config(ConfigDict(extra="allow"))  # a key of its own (a user's `name`) is kept
class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: NotRequired[Content]
    tool_calls: NotRequired[list[ToolCallPart]]


@with_config(ConfigDict(extra="allow"))  # a key of its own (a user's `name`) is kept
class ToolMessage(TypedDict):
    """A tool's answer; `tool_call_id` names the call it answers (a message without one
    answers none, as a run takes it)."""

    role: Literal["tool"]
    tool_call_id: NotRequired[str]
    name: NotRequired[str]
    content: NotRequired[Content]


@with_config(ConfigDict(extra="allow"))
class OtherMessage(TypedDict):
    """A message of any other role a run takes (`developer`, or a template's own): passed on as
    it is."""

    role: Annotated[str, StringConstraints(min_length=1)]
    content: NotRequired[Content]


Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One call a model made: `id` (unique in the run), tool `name`, raw `arguments` as decoded."""

    id: str
    name: str
    arguments: Any = field(default_factory=dict)

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


@dataclass(frozen=True)
class Turn:
    """What one model answer is: `"text"` (a final text answer), `"calls"`, or `"output"` (a
    final output to validate into the run's output type)."""

    kind: Literal["text", "calls", "output"]
    text: str
    calls: tuple[ToolCall, ...] = ()


def conversation(prompt: str | list[Message] | None, history: Any) -> str | list[Message]:
    """What a run starts from: `prompt` alone, or after `history` (an earlier run's messages)."""
    if history is None:
        if prompt is None:
            raise InvalidArgument("prompt", "is missing: give a prompt, or a message_history to continue")
        return prompt
    if isinstance(history, (str, bytes)) or not isinstance(history, (list, tuple)):
        raise InvalidArgument("message_history", f"must be a list of messages, not {type(history).__name__}")
    messages = [dict(m) if isinstance(m, dict) else m for m in history]
    if isinstance(prompt, str):
        messages.append({"role": "user", "content": prompt})
    elif prompt is not None:
        check_prompt(prompt)
        messages.extend(prompt)
    try:
        check_prompt(messages)
    except InvalidArgument as exc:
        raise InvalidArgument(exc.argument.replace("prompt", "message_history", 1), exc.reason) from None
    return messages


def initial_messages(prompt: str | list[Message], system_prompt: str | None) -> list[Message]:
    """The conversation a run starts from: a prompt string becomes a user message; a message
    list is copied; `system_prompt` leads (added to the list's own system message, once).
    `prompt` is checked first (`check_prompt`)."""
    check_prompt(prompt)
    if isinstance(prompt, str):
        messages: list[Message] = [{"role": "user", "content": prompt}]
    else:
        messages = [dict(m) for m in prompt]
    if not system_prompt:
        return messages
    if messages and messages[0].get("role") == "system":
        first = str(messages[0].get("content") or "")
        if system_prompt not in first:  # a continued run already holds it
            messages[0] = {**messages[0], "content": f"{first}\n\n{system_prompt}".lstrip()}
    else:
        messages.insert(0, {"role": "system", "content": system_prompt})
    return messages


def parse_turn(
    text: str,
    *,
    envelope: Envelope | tuple[Envelope, ...],
    tool_names: set[str],
    step: int,
    run: str,
    expect_output: bool,
    preamble: bool = False,
) -> Turn:
    """Read a model answer produced under the turn's grammar.

    Tool calls come first: text the grammar's calls branch produced parses as calls naming
    known tools (after free text, with `preamble`). Otherwise it is the final output (when the
    run has an output type) or free text. Raises ValueError for calls naming unknown tools or
    malformed envelopes, which only a runtime that ignored the grammar can produce, and
    `UnreadableTurn` (a ValueError) for text too deep or with a number too long to parse (see
    `_bounds`); a turn that may be the final output is left to the output's validation then,
    which refuses it.
    """
    try:
        check_turn(text)
    except UnreadableTurn:
        if expect_output:
            return Turn("output", text)
        raise
    try:
        raw = grammar.parse_tool_calls(text, envelope=envelope, preamble=preamble, names=tool_names)
    except ValueError:
        if expect_output:
            return Turn("output", text)
        raise
    if raw is None or (expect_output and not all(c.get("name") in tool_names for c in raw)):
        return Turn("output" if expect_output else "text", text)
    calls = []
    for i, call in enumerate(raw):
        name, arguments = call["name"], call["arguments"]
        if name not in tool_names:
            raise ValueError(f"call {i + 1} names an unknown tool {name!r}")
        calls.append(ToolCall(f"call_{run}_{step}_{i + 1}", name, arguments))  # the run's id: unique across conversations
    return Turn("calls", text, tuple(calls))


def assistant_message(turn: Turn) -> Message:
    """The assistant message recording a turn: exactly the text the model wrote, calls
    included in its own envelope (so the next turn's prompt shows the model its own format),
    and the calls structured beside it in OpenAI's shape (`tool_calls`: id, name, arguments
    as JSON), which `for_model` leaves out of what a runtime is sent: templates that render
    such lists would show each call twice."""
    message: Message = {"role": "assistant", "content": turn.text}
    if turn.calls:
        message["tool_calls"] = [call.to_openai() for call in turn.calls]
    return message


def for_model(messages: list[Message], note: str | None = None) -> list[Message]:
    """The messages as a runtime is sent them: an assistant message whose text holds its
    calls goes without its structured `tool_calls` copy; a `note` ends the leading system
    message (or is one)."""
    sent = [
        {k: v for k, v in m.items() if k != "tool_calls"} if m.get("role") == "assistant" and m.get("content")
        and "tool_calls" in m else m
        for m in messages
    ]
    if note is None:
        return sent
    if sent and sent[0].get("role") == "system":
        return [{**sent[0], "content": f"{sent[0].get('content') or ''}\n\n{note}".lstrip()}, *sent[1:]]
    return [{"role": "system", "content": note}, *sent]


def tool_message(call: ToolCall, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


def render_result(value: Any) -> str:
    """A tool's return value as the text the model reads (strings as they are, else JSON, else
    its `repr`); lone surrogates become U+FFFD. Raises `UnreadableResult` where none works."""
    if isinstance(value, str):
        return readable(value)
    try:
        return readable(pydantic_core.to_json(value).decode("utf-8"))
    except Exception:  # not serialisable (pydantic raises several kinds): its repr, then
        pass
    try:
        return readable(repr(value))
    except Exception as exc:  # a failing __repr__, an int past Python's digit limit
        raise UnreadableResult(value, exc) from exc


def render_error(error: BaseException) -> str:
    """An exception as the model reads it in a tool message: for arguments that did not
    validate, each violation and a request to call again."""
    if isinstance(error, CallDenied):
        return readable("This call was not approved" + (f": {error.reason}" if error.reason else ".")
                        + "\nDo not make it again unless the user asks.")
    if isinstance(error, ModelRetry):
        return readable(f"{error.message}\nFix this and try again.")
    if isinstance(error, ToolArgumentsError):
        problems = "\n".join(f"- {v}" for v in error.violations)
        return readable(f"Error: invalid arguments for {error.tool}:\n{problems}\nCall it again with valid arguments.")
    return readable(f"Error: {type(error).__name__}: {safe_str(error)}")


def readable(text: str) -> str:
    """`text` with every lone surrogate (no UTF-8 encoding, so no tokens) as U+FFFD; a pair
    split across two code points is joined."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")

"""Approval: calls that wait for a person's decision before they run.

A call waits where its tool was built with `requires_approval=True`, or where the agent's
`requires_approval` predicate says so. The run stops before running it and returns a result
whose `pending` lists such calls; the conversation (`result.messages`) ends with the assistant
turn that made them, its calls structured in `tool_calls`, and a tool message for each call
that did run. `agent.run(message_history=result.messages, approvals={id: decision})` resumes:
the calls that have no tool message yet are the pending ones, each needs a decision, and each
then gets exactly one tool message, so none is lost and none runs twice."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._confidence import FieldConfidence
from ._errors import InvalidArgument
from ._messages import Message, ToolCall
from ._repeats import ValidCall

Approval = bool | str
"""A decision on a pending call: True runs it; False denies it; a string denies it with that
reason, which the model reads."""


@dataclass(frozen=True)
class PendingCall:
    """A call waiting for approval: its `id` (the key of `approvals`), the `tool`'s name, its
    typed `arguments` (validated, as the tool would get them), and the `call` as decoded.
    `confidence`: with the model setting `confidence=True`, how sure the model was of each
    argument value (as `ToolCallRecord.confidence`), so a rule can hold back the doubtful calls."""

    id: str
    tool: str
    arguments: Any
    call: ToolCall
    confidence: dict[str, FieldConfidence] | None = None


ApprovalPredicate = Callable[[PendingCall], bool]
"""An agent-level rule: given a valid call, whether it waits for approval."""


def pending_call(valid: ValidCall, confidence: dict[str, FieldConfidence] | None = None) -> PendingCall:
    return PendingCall(valid.call.id, valid.call.name, valid.arguments, valid.call, confidence)


def needs_approval(valid: ValidCall, predicate: ApprovalPredicate | None,
                   confidence: dict[str, FieldConfidence] | None = None) -> bool:
    """Whether a valid call waits: its tool says so, or the agent's predicate does."""
    return valid.tool.requires_approval or (
        predicate is not None and bool(predicate(pending_call(valid, confidence))))


def unanswered_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """The calls of the conversation's last assistant turn that no tool message answers yet,
    in call order (empty where the conversation does not end with such a turn)."""
    if not all(isinstance(m, dict) for m in messages):
        return []  # not a message list: its own check names what is wrong
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") != "assistant":
            continue
        answered = {m.get("tool_call_id") for m in messages[i + 1:] if m.get("role") == "tool"}
        if any(m.get("role") not in ("tool",) for m in messages[i + 1:]):
            return []  # the conversation went on past that turn
        return [call for call in structured_calls(message) if call.id not in answered]
    return []


def structured_calls(message: Message) -> list[ToolCall]:
    """An assistant message's `tool_calls` (OpenAI's shape) as `ToolCall`s."""
    calls = []
    for i, item in enumerate(message.get("tool_calls") or ()):
        try:
            function = item["function"]
            arguments = function.get("arguments", "{}")
            calls.append(ToolCall(str(item["id"]), str(function["name"]),
                                  json.loads(arguments) if isinstance(arguments, str) else arguments))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise InvalidArgument(f"message_history: tool_calls[{i}]", f"is not a tool call ({exc})") from None
    return calls


def check_approvals(approvals: Any, pending: Sequence[ToolCall]) -> dict[str, Approval]:
    """A decision for every pending call and for nothing else: an `InvalidArgument` naming
    the call otherwise (an id already answered would run twice)."""
    if approvals is None:
        if pending:
            ids = ", ".join(c.id for c in pending)
            raise InvalidArgument("approvals", f"the history ends with calls awaiting approval ({ids}): decide each")
        return {}
    if not isinstance(approvals, Mapping):
        raise InvalidArgument("approvals", f"must be a dict of call id to True, False or a reason, not {type(approvals).__name__}")
    ids = {c.id for c in pending}
    for key, decision in approvals.items():
        if key not in ids:
            raise InvalidArgument(f"approvals[{key!r}]", "is no call awaiting approval (unknown, or already answered)")
        if not isinstance(decision, (bool, str)):
            raise InvalidArgument(f"approvals[{key!r}]", f"must be True, False or a reason, not {type(decision).__name__}")
    missing = [c.id for c in pending if c.id not in approvals]
    if missing:
        raise InvalidArgument("approvals", f"no decision for {', '.join(missing)}")
    return dict(approvals)

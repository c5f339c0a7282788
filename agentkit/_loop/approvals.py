"""Approval: calls that wait for a person's decision before they run.

A call waits where its tool was built with `requires_approval=True`, or where the agent's
`requires_approval` predicate says so, asked once, when the call is made. The run stops before
running it and returns a result whose `pending` lists such calls; the conversation
(`result.messages`) ends with the assistant turn that made them and a tool message for each
call that did run. In that turn's `tool_calls` each waiting call is stored as it will run: its
arguments are the validated ones, defaults filled in (`PendingCall.shown`, what a person is
shown), and it is marked `awaits_approval`, so the decision to hold it survives storage.

A decision is an `Approval` (`pending.approve()`, `pending.deny(reason)`), bound to the call
as shown by a digest of its tool and arguments. `agent.run(message_history=result.messages,
approvals={id: approval})` resumes: every waiting call needs one, and the stored call must be
the call approved (else `ApprovalMismatch`, and nothing runs); approved calls run with the
stored arguments, denied ones are answered with the denial, and each call then has exactly one
tool message. A process resumes a waiting call once (`CallAlreadyResumed`); across processes,
a tool's `RunContext.idempotency_key` is the same on every resume, for the tool to refuse a
repeat where its side effect lands."""

from __future__ import annotations

import collections
import hashlib
import json
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._bounds import MAX_NESTING, text_problem, too_deep, value_depth
from .._outputs.confidence import FieldConfidence
from .._errors import ApprovalMismatch, CallAlreadyResumed, InvalidArgument
from .._messages import Message, ToolCall
from .repeats import ValidCall, value_key

AWAITS_APPROVAL = "awaits_approval"
"""The key that marks a stored call (an item of an assistant message's `tool_calls`) as waiting."""

HOW_TO_DECIDE = "approve the call as shown with pending.approve(), or deny it with pending.deny(reason)"


@dataclass(frozen=True)
class Approval:
    """A person's decision on one waiting call, bound to the call as they were shown it:
    `digest` is `PendingCall.digest` (of the tool's name and `PendingCall.shown`). `approved`
    runs the call; otherwise it is denied, with `reason` for the model to read.

    `pending.approve()` and `pending.deny(reason)` make one. A service that shows the call in
    one request and takes the decision in another keeps the `id` and `digest` of what it
    showed, and makes `Approval(id, digest, approved=True)` when the person decides."""

    call_id: str
    digest: str
    approved: bool
    reason: str | None = None

    def __post_init__(self) -> None:
        for name, value, kinds in (("call_id", self.call_id, str), ("digest", self.digest, str),
                                   ("approved", self.approved, bool), ("reason", self.reason, (str, type(None)))):
            if not isinstance(value, kinds):
                raise InvalidArgument(f"Approval.{name}", f"must be {_kind_names(kinds)}, not {type(value).__name__}")


@dataclass(frozen=True)
class PendingCall:
    """A call waiting for approval: its `id` (the key of `approvals`), the `tool`'s name, its
    typed `arguments` (validated, as the tool would get them), the `call` as decoded, and
    `shown`: the arguments as JSON, defaults filled in, exactly as the call will run on
    approval (show the person these). `confidence`: with the model setting
    `confidence=True`, how sure the model was of each argument value (as
    `ToolCallRecord.confidence`), so a rule can hold back the doubtful calls."""

    id: str
    tool: str
    arguments: Any
    call: ToolCall
    confidence: dict[str, FieldConfidence] | None = None
    shown: Any = None

    @property
    def digest(self) -> str:
        """The call as shown (tool and `shown` arguments), as a SHA-256 hex digest."""
        return call_digest(self.tool, self.shown)

    def approve(self) -> Approval:
        """The decision to run this call, as shown."""
        return Approval(self.id, self.digest, True)

    def deny(self, reason: str | None = None) -> Approval:
        """The decision not to run this call; the model reads `reason` (if any) as its outcome."""
        if reason is not None and not isinstance(reason, str):
            raise InvalidArgument("reason", f"must be a string or None, not {type(reason).__name__}")
        return Approval(self.id, self.digest, False, reason or None)


ApprovalPredicate = Callable[[PendingCall], bool] | Callable[[PendingCall], Awaitable[bool]]
"""An agent-level rule (sync or async): given a valid call, whether it waits for approval."""


def call_digest(tool: str, arguments: Any) -> str:
    """A call's tool and arguments as one SHA-256 hex digest over canonical JSON (keys sorted,
    no blanks, ASCII): equal for equal JSON values, however they were written."""
    text = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=repr)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def idempotency_key(call: ToolCall) -> str:
    """The key a tool is given for a call (`RunContext.idempotency_key`): from its id (unique
    to its run), tool and arguments, so the same on every resume of one stored call."""
    return call_digest(f"{call.id}\x00{call.name}", call.arguments)[:32]


def shown_arguments(valid: ValidCall, validation_context: Any = None) -> Any:
    """What a waiting call's arguments are shown, and stored, as: the validated arguments
    dumped as JSON, defaults filled in (so a `default_factory` is not run again on resume),
    where they validate back to the same values; else the arguments as the model wrote them."""
    tool, arguments = valid.tool, valid.arguments
    if tool.args_type is None:  # schema tools: the validated dict is JSON already
        return arguments
    try:
        shown = arguments.model_dump(mode="json", by_alias=True)
        if value_key(tool.validate(shown, validation_context=validation_context)) == value_key(arguments):
            return shown
    except Exception:  # a dump that fails, or does not read back alike: keep the model's own
        pass
    return valid.call.arguments


def pending_call(valid: ValidCall, confidence: dict[str, FieldConfidence] | None = None,
                 validation_context: Any = None) -> PendingCall:
    return PendingCall(valid.call.id, valid.call.name, valid.arguments, valid.call, confidence,
                       shown_arguments(valid, validation_context))


def held_turn(message: Message, pending: Sequence[PendingCall]) -> Message:
    """The assistant `message` with its waiting calls stored as they will run: their shown
    arguments, and marked `awaits_approval`."""
    shown = {p.id: p for p in pending}
    calls = []
    for item in message.get("tool_calls") or ():
        waiting = shown.get(item.get("id"))
        if waiting is not None:
            arguments = json.dumps(waiting.shown, ensure_ascii=False)
            item = {**item, "function": {**item["function"], "arguments": arguments}, AWAITS_APPROVAL: True}
        calls.append(item)
    return {**message, "tool_calls": calls}


def waiting_calls(messages: Sequence[Message], tools: Mapping[str, Any]) -> list[ToolCall]:
    """The calls of the conversation's last assistant turn that wait for a decision: those no
    tool message answers that are marked `awaits_approval`, or whose tool requires approval (a
    turn stored before calls were marked). Calls left unanswered by a run that stopped on an
    error wait for nothing."""
    if not all(isinstance(m, dict) for m in messages):
        return []  # not a message list: its own check names what is wrong
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") != "assistant":
            continue
        if any(m.get("role") != "tool" for m in messages[i + 1:]):
            return []  # the conversation went on past that turn
        answered = {m.get("tool_call_id") for m in messages[i + 1:]}
        return [call for call, marked in stored_calls(message, f"message_history[{i}]")
                if call.id not in answered and (marked or getattr(tools.get(call.name), "requires_approval", False))]
    return []


def stored_calls(message: Message, where: str) -> list[tuple[ToolCall, bool]]:
    """An assistant message's `tool_calls` (OpenAI's shape) as `ToolCall`s, each with whether
    it is marked as waiting; an `InvalidArgument` naming the place of one that is no call, or
    whose arguments nest too deep or hold too long a number to read."""
    calls = []
    for i, item in enumerate(message.get("tool_calls") or ()):
        place = f"{where}.tool_calls[{i}]"
        try:
            function = item["function"]
            arguments = function.get("arguments", "{}")
            call_id, name, marked = str(item["id"]), str(function["name"]), item.get(AWAITS_APPROVAL) is True
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidArgument(place, f"is not a tool call ({exc!r})") from None
        if isinstance(arguments, str):
            problem = text_problem(arguments)
        else:
            depth = value_depth(arguments)
            problem = too_deep(depth) if depth > MAX_NESTING else None
        if problem is not None:  # reading it would run out of stack, or Python refuses the number
            raise InvalidArgument(f"{place}.function.arguments", problem)
        try:
            value = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError as exc:
            raise InvalidArgument(f"{place}.function.arguments", f"is not JSON ({exc})") from None
        calls.append((ToolCall(call_id, name, value), marked))
    return calls


def check_approvals(approvals: Any, waiting: Sequence[ToolCall]) -> dict[str, Approval]:
    """An `Approval` for every waiting call and for nothing else, each of the call as stored:
    an `InvalidArgument` naming the call otherwise (an id already answered would run twice),
    and `ApprovalMismatch` where the stored call is not the one approved."""
    if approvals is None:
        if waiting:
            calls = ", ".join(f"{c.id} ({c.name})" for c in waiting)
            raise InvalidArgument("approvals", f"the history ends with calls awaiting approval: {calls}; decide each: "
                                               f"{HOW_TO_DECIDE}")
        return {}
    if not isinstance(approvals, Mapping):
        raise InvalidArgument("approvals", f"must be a dict of call id to Approval, not {type(approvals).__name__}")
    stored = {c.id: c for c in waiting}
    for key, decision in approvals.items():
        if not isinstance(decision, Approval):
            raise InvalidArgument(f"approvals[{key!r}]", f"must be an agentkit.Approval, bound to the call the person "
                                                         f"saw, not {type(decision).__name__}: {HOW_TO_DECIDE}")
        call = stored.get(key)
        if call is None:
            raise InvalidArgument(f"approvals[{key!r}]", "is no call awaiting approval (unknown, or already answered)")
        if decision.call_id != key:
            raise ApprovalMismatch(key, f"holds the decision on call {decision.call_id!r}, not on this one")
        if decision.digest != call_digest(call.name, call.arguments):
            raise ApprovalMismatch(key, f"the stored call ({call.name}) is not the call approved: its tool or "
                                        "arguments differ from what the person was shown; nothing ran")
    missing = [c.id for c in waiting if c.id not in approvals]
    if missing:
        raise InvalidArgument("approvals", f"no decision for {', '.join(missing)}: {HOW_TO_DECIDE}")
    return dict(approvals)


class ResumedCalls:
    """The waiting calls this process has resumed, by idempotency key (the most recent
    `limit`), so that resuming one stored conversation twice (a double-clicked approve, a
    retried request) runs nothing the second time."""

    def __init__(self, limit: int = 65_536):
        self._limit = limit
        self._keys: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()

    def claim(self, calls: Sequence[ToolCall]) -> None:
        """Record `calls` as resumed; `CallAlreadyResumed` (and none recorded) where one was."""
        keys = [idempotency_key(c) for c in calls]
        with self._lock:
            for call, key in zip(calls, keys):
                if key in self._keys:
                    raise CallAlreadyResumed(call.id)
            for key in keys:
                self._keys[key] = None
            while len(self._keys) > self._limit:
                self._keys.popitem(last=False)


RESUMED = ResumedCalls()


def _kind_names(kinds: type | tuple[type, ...]) -> str:
    names = {"str": "a string", "bool": "True or False", "NoneType": "None"}
    return " or ".join(names.get(k.__name__, k.__name__) for k in (kinds if isinstance(kinds, tuple) else (kinds,)))

"""What a run produces: `RunResult` at the end, and the events `Agent.run_stream` yields."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from runtimes import Usage

from .confidence import FieldConfidence
from .._messages import Message, ToolCall

OutputT = TypeVar("OutputT")


@dataclass
class RunUsage(Usage):
    """A run's usage: its tokens, `tool_runs` (calls a tool function ran) and `repeated_calls`
    (calls equal to an earlier call of the run, whether answered from it, refused or run
    again), so a run whose model looped shows it."""

    tool_runs: int = 0
    repeated_calls: int = 0

    def __add__(self, other: Usage) -> "RunUsage":
        if not isinstance(other, Usage):
            return NotImplemented
        total = Usage.__add__(self, other)  # every count a runtime keeps (forward passes, drafts ...)
        assert isinstance(total, Usage)
        return RunUsage(
            **{f.name: getattr(total, f.name) for f in dataclasses.fields(Usage)},
            tool_runs=self.tool_runs + getattr(other, "tool_runs", 0),
            repeated_calls=self.repeated_calls + getattr(other, "repeated_calls", 0),
        )


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of a run: the call as decoded, its typed `arguments` (None when they did
    not validate), and either its `result` or its `error` (validation, exception, timeout, or
    `RepeatedCall` for a refused repeat).

    `repeat_of` is the id of the earlier equal call of the run this one repeats (None for a
    first call); `reused` says the tool did not run for it: its outcome is that earlier call's.

    `confidence`: with the model setting `confidence=True`, how sure the model was of each leaf
    of the arguments it wrote, by JSON pointer inside them (`/city`, `/dates/0`); None where not
    asked for, where the runtime gave no token scores or the turn's text could not be matched
    to its calls, and for calls resumed after an approval (the `PendingCall` had it).
    """

    call: ToolCall
    arguments: Any = None
    result: Any = None
    error: BaseException | None = None
    repeat_of: str | None = None
    reused: bool = False
    confidence: dict[str, FieldConfidence] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


RetryKind = Literal["arguments", "model_retry", "validation", "unreadable"]


@dataclass(frozen=True)
class RetryRecord:
    """One correction a run asked the model for, and what fixed it.

    `subject` is the tool's name for a refused call, `"output"` for a refused final answer;
    `kind` why: `"arguments"` (they did not validate), `"model_retry"` (a tool or the output
    validator raised `ModelRetry`), `"validation"` (the output did not validate), `"unreadable"`
    (a turn too deep or long to parse). `step` is the turn refused and `problem` what the
    model was told; `call_id` the refused call. `fixed_at` is the turn whose answer then
    passed (a call of the same tool that succeeded, or an output accepted), and `fixed_by`
    that call's id; both None if nothing fixed it."""

    step: int
    subject: str
    kind: RetryKind
    problem: str
    call_id: str | None = None
    fixed_at: int | None = None
    fixed_by: str | None = None

    @property
    def fixed(self) -> bool:
        return self.fixed_at is not None


@dataclass(frozen=True)
class RunResult(Generic[OutputT]):
    """A finished run: the `output` (text, or an instance of the output type), every message
    (the prompt included, so `agent.run(result.messages + [...])` continues the chat), the
    `usage` (tokens and tool calls), each tool call made (repeats included), the number of model turns (`steps`),
    and each correction asked for, with the turn that fixed it (`retries`).

    `pending` lists the calls (`PendingCall`: `.id`, `.tool`, typed `.arguments`, `.shown`,
    `.approve()`, `.deny(reason)`) that wait for approval where the run stopped before running
    them; `output` is then None (see `Agent.run`'s `approvals`)."""

    output: OutputT
    messages: list[Message]
    usage: RunUsage
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    steps: int = 0
    retries: list[RetryRecord] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's answer text, as it is generated (`step` is the turn's number)."""

    step: int
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    """The model called a tool (arguments as decoded, before validation)."""

    step: int
    call: ToolCall


@dataclass(frozen=True)
class ToolResultEvent:
    """A tool call finished: `record.result`, or `record.error` fed back to the model
    (`record.reused` when the outcome is an earlier equal call's, not a new run)."""

    step: int
    record: ToolCallRecord


@dataclass(frozen=True)
class PartialOutput:
    """The typed final output as it is written (agents with an `output_type`): `value` holds
    what is certain so far (objects and lists open so far, only complete strings, numbers and
    literals), each a prefix-consistent view of the answer, never half a value. The turn's last
    one has `complete` True and `value` the validated output, just before `FinalResult`. A turn
    whose answer is refused (and asked again) shows partials that no `complete` one follows."""

    step: int
    value: Any
    complete: bool = False


@dataclass(frozen=True)
class FinalResult(Generic[OutputT]):
    """The run is over; `result` is what `Agent.run` returns."""

    result: RunResult[OutputT]


Event = TextDelta | ToolCallEvent | ToolResultEvent | PartialOutput | FinalResult

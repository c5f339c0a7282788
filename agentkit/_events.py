"""What a run produces: `RunResult` at the end, and the events `Agent.run_stream` yields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from runtimes import Usage

from ._messages import Message, ToolCall

OutputT = TypeVar("OutputT")


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of a run: the call as decoded, its typed `arguments` (None when they did
    not validate), and either its `result` or its `error` (validation, exception or timeout)."""

    call: ToolCall
    arguments: Any = None
    result: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class RunResult(Generic[OutputT]):
    """A finished run: the `output` (text, or an instance of the output type), every message
    (the prompt included, so `agent.run(result.messages + [...])` continues the chat), the
    token `usage`, each tool call made, and the number of model turns (`steps`)."""

    output: OutputT
    messages: list[Message]
    usage: Usage
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    steps: int = 0


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
    """A tool call finished: `record.result`, or `record.error` fed back to the model."""

    step: int
    record: ToolCallRecord


@dataclass(frozen=True)
class FinalResult(Generic[OutputT]):
    """The run is over; `result` is what `Agent.run` returns."""

    result: RunResult[OutputT]


Event = TextDelta | ToolCallEvent | ToolResultEvent | FinalResult

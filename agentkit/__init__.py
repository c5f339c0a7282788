"""agentkit: typed tool calls and structured output from local language models.

    from agentkit import Agent, tool, extract

    @tool
    def get_weather(city: str) -> str:
        "The current weather in a city."
        ...

    result = Agent([get_weather]).run_sync("Weather in Paris?")
    person = extract(Person, "Ann is 31.")

Every model turn is held by a grammar built from the tools' type hints, so each call parses
and validates; what the grammar cannot enforce is checked after decoding and reported per
field in `tool.constraints`.
"""

from ._agent import Agent
from ._constraints import Constraints, FieldConstraints
from ._context import RunContext
from ._errors import (
    AgentkitError,
    IncompleteOutput,
    ModelRequestFailed,
    OutputValidationError,
    RunError,
    RunTimeout,
    StepLimitExceeded,
    TokenLimitExceeded,
    ToolArgumentsError,
    ToolDefinitionError,
    ToolRetriesExceeded,
    ToolTimeout,
    UnexpectedModelOutput,
    UsageLimitExceeded,
    ValidationFailed,
    Violation,
)
from ._events import Event, FinalResult, RunResult, TextDelta, ToolCallEvent, ToolCallRecord, ToolResultEvent
from ._extract import aextract, extract
from ._messages import Message, ToolCall
from ._tool import Tool, tool

__all__ = [
    "Agent",
    "AgentkitError",
    "Constraints",
    "Event",
    "FieldConstraints",
    "FinalResult",
    "IncompleteOutput",
    "Message",
    "ModelRequestFailed",
    "OutputValidationError",
    "RunContext",
    "RunError",
    "RunResult",
    "RunTimeout",
    "StepLimitExceeded",
    "TextDelta",
    "TokenLimitExceeded",
    "Tool",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallRecord",
    "ToolDefinitionError",
    "ToolResultEvent",
    "ToolRetriesExceeded",
    "ToolTimeout",
    "UnexpectedModelOutput",
    "UsageLimitExceeded",
    "ValidationFailed",
    "Violation",
    "aextract",
    "extract",
    "tool",
]

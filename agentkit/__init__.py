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

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _distribution_version

from ._agent import JSON_LIST_NOTE, Agent, ToolPrompt
from ._approvals import Approval, ApprovalPredicate, PendingCall
from ._confidence import Extraction, FieldConfidence
from ._constraints import Constraints, FieldConstraints
from ._context import RunContext
from ._errors import (
    AgentkitError,
    ApprovalMismatch,
    CallAlreadyResumed,
    CallbackFailed,
    CallDenied,
    IncompleteOutput,
    InvalidArgument,
    ModelRequestFailed,
    ModelRetry,
    OutputValidationError,
    RepeatedCall,
    RunError,
    RunTimeout,
    StepLimitExceeded,
    TokenLimitExceeded,
    ToolAborted,
    ToolArgumentsError,
    ToolDefinitionError,
    ToolRetriesExceeded,
    ToolTimeout,
    UnexpectedModelOutput,
    UnreadableOutput,
    UnreadableResult,
    UsageLimitExceeded,
    ValidationFailed,
    Violation,
)
from ._events import (
    Event,
    FinalResult,
    PartialOutput,
    RetryRecord,
    RunResult,
    RunUsage,
    TextDelta,
    ToolCallEvent,
    ToolCallRecord,
    ToolResultEvent,
)
from ._extract import aextract, extract
from ._history import messages_from_json, messages_to_json
from ._stream import stream_extract, stream_extract_sync
from ._messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolCallPart, ToolMessage, UserMessage
from ._repeats import RepeatCalls
from ._settings import ModelSettings
from ._tool import Tool, tool

try:  # the installed distribution's version; a checkout that was never installed has none
    __version__ = _distribution_version("agentkit")
except _NotInstalled:
    __version__ = "0+unknown"

__all__ = [
    "__version__",
    "Agent",
    "AgentkitError",
    "Approval",
    "AssistantMessage",
    "ApprovalMismatch",
    "ApprovalPredicate",
    "CallAlreadyResumed",
    "CallbackFailed",
    "CallDenied",
    "Constraints",
    "Event",
    "Extraction",
    "FieldConfidence",
    "FieldConstraints",
    "FinalResult",
    "IncompleteOutput",
    "InvalidArgument",
    "JSON_LIST_NOTE",
    "Message",
    "ModelRequestFailed",
    "ModelRetry",
    "ModelSettings",
    "OutputValidationError",
    "PartialOutput",
    "PendingCall",
    "RepeatCalls",
    "RepeatedCall",
    "RetryRecord",
    "RunContext",
    "RunError",
    "RunResult",
    "RunTimeout",
    "RunUsage",
    "StepLimitExceeded",
    "SystemMessage",
    "TextDelta",
    "TokenLimitExceeded",
    "Tool",
    "ToolAborted",
    "ToolArgumentsError",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallPart",
    "ToolCallRecord",
    "ToolDefinitionError",
    "ToolMessage",
    "ToolPrompt",
    "ToolResultEvent",
    "ToolRetriesExceeded",
    "ToolTimeout",
    "UnexpectedModelOutput",
    "UnreadableOutput",
    "UnreadableResult",
    "UsageLimitExceeded",
    "UserMessage",
    "ValidationFailed",
    "Violation",
    "aextract",
    "extract",
    "messages_from_json",
    "messages_to_json",
    "stream_extract",
    "stream_extract_sync",
    "tool",
]

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


from ._loop.agent import JSON_LIST_NOTE, Agent, ToolPrompt
from ._loop.approvals import Approval, ApprovalPredicate, PendingCall
from ._outputs.confidence import Extraction, FieldConfidence
from ._outputs.grounding import FieldGrounding
from ._tools.constraints import Constraints, FieldConstraints
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
    OutputRetriesExceeded,
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
from ._outputs.events import (
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
from ._outputs.extract import aextract, extract
from ._outputs.iterate import aextract_iter, extract_iter
from ._loop.history import messages_from_json, messages_to_json
from ._loop.limits import UsageLimits
from ._outputs.stream import astream_extract, stream_extract, stream_extract_sync
from ._messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolCallPart, ToolMessage, UserMessage
from ._loop.repeats import RepeatCalls
from ._loop.settings import ModelSettings
from ._tools.grounded import Grounded
from ._tools.tool import Tool, tool
from ._version import VERSION as __version__


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
    "FieldGrounding",
    "FinalResult",
    "Grounded",
    "IncompleteOutput",
    "InvalidArgument",
    "JSON_LIST_NOTE",
    "Message",
    "ModelRequestFailed",
    "ModelRetry",
    "ModelSettings",
    "OutputRetriesExceeded",
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
    "UsageLimits",
    "UserMessage",
    "ValidationFailed",
    "Violation",
    "aextract",
    "aextract_iter",
    "astream_extract",
    "extract",
    "extract_iter",
    "messages_from_json",
    "messages_to_json",
    "stream_extract",
    "stream_extract_sync",
    "tool",
]

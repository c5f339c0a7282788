"""Typed errors. Every error raised during a run carries the messages so far, so none is lost.

The tree (a name in parentheses is a builtin base it also has, so code catching that still does):

    AgentkitError
    ├── ToolDefinitionError (TypeError)      a tool or output type that cannot be built
    ├── InvalidArgument (TypeError, ValueError)  an argument no run could start from
    │   ├── ApprovalMismatch                 a stored call that is not the one approved
    │   └── CallAlreadyResumed               a waiting call this agent resumed already
    ├── ToolAborted                          a tool raised a BaseException; goes to the model
    ├── UnreadableResult                     a tool's result that cannot become text; goes to the model
    ├── ToolTimeout (TimeoutError)           a tool call past its timeout; goes to the model
    ├── RepeatedCall                         a refused repeat; goes to the model
    ├── ModelRetry                           raised by a tool or output validator: ask again
    ├── CallDenied                           a call its approver denied; goes to the model
    ├── ValidationFailed                     a value that did not validate (`violations`)
    │   ├── ToolArgumentsError               a call's arguments; goes to the model
    │   └── OutputValidationError            a final output, after its corrections (`extract`'s)
    │       └── OutputRetriesExceeded (RunError)  an agent run's: a run error too
    └── RunError                             a run that stopped (`messages`, `usage`)
        ├── UsageLimitExceeded               a limit reached (`limit`): tool_calls_limit
        │   ├── StepLimitExceeded            max_steps, request_limit
        │   ├── TokenLimitExceeded           max_tokens, token_budget, the token limits
        │   │   └── IncompleteOutput         an answer cut by its budget (`text`)
        │   └── RunTimeout                   timeout
        ├── ToolRetriesExceeded              a tool's arguments failed too often
        ├── ModelRequestFailed               the runtime failed (`__cause__`)
        ├── CallbackFailed                   a function the agent was given raised (`__cause__`)
        ├── UnexpectedModelOutput            text the grammar should have made impossible
        └── UnreadableOutput                 turns too deep or long to parse, too often

`Violation` (one failed field) is a record, not an error.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


class AgentkitError(Exception):
    """Base class of every error this package raises.

    A cancelled run raises `asyncio.CancelledError` itself (so asyncio's cancellation keeps
    working), with `messages` and `usage` attributes added, as on `RunError`.
    """


class ToolDefinitionError(AgentkitError, TypeError):
    """A tool that cannot be built: a parameter whose type has no JSON Schema, a schema the
    grammar cannot compile, or (with ``strict=True``) a constraint the grammar cannot enforce.

    `parameter` names the offending parameter (signature tools); `keyword` and `pointer` name
    the schema keyword and the JSON pointer where it stands (schema tools and strict refusals).
    """

    def __init__(
        self,
        tool: str,
        message: str,
        *,
        parameter: str | None = None,
        keyword: str | None = None,
        pointer: str | None = None,
    ):
        self.tool = tool
        self.parameter = parameter
        self.keyword = keyword
        self.pointer = pointer
        self.reason = message
        where = [f"tool {tool!r}"]
        if parameter is not None:
            where.append(f"parameter {parameter!r}")
        if keyword is not None:
            where.append(f"keyword {keyword!r}")
        if pointer is not None:
            where.append(f"at #{pointer}")
        super().__init__(f"{', '.join(where)}: {message}")


@dataclass(frozen=True)
class Violation:
    """One way a value failed its schema or type.

    `field` is the path in the value (``"tags[1]"``, ``"address.zip"``; ``""`` for the whole
    value); `keyword` the schema keyword or pydantic error type; `enforced_by` says who was
    meant to hold it: ``"grammar"`` (the decoder should have made this impossible),
    ``"validator"`` (the grammar could not enforce it, so it is checked after decoding) or
    ``"parse"`` (the text is not a JSON document of the expected shape at all).
    """

    field: str
    keyword: str
    message: str
    enforced_by: str = "validator"

    def __str__(self) -> str:
        where = self.field or "(value)"
        note = {
            "validator": " [checked after decoding: the grammar cannot enforce it]",
            "grammar": " [enforced by the grammar while decoding]",
        }.get(self.enforced_by, "")
        return f"{where}: {self.message} ({self.keyword}){note}"


def safe_str(value: Any) -> str:
    """`str(value)`, or a placeholder naming its type where `__str__` (or `__repr__`) raises."""
    try:
        return str(value)
    except Exception:
        try:
            return repr(value)
        except Exception:
            return f"<{type(value).__name__} that cannot be shown>"


LOGGED_CHARS = 1_000
"""The most characters of a message (a tool's error, a validator's refusal) one log line holds."""


def log_text(value: Any, limit: int = LOGGED_CHARS) -> str:
    """`safe_str(value)` for a log line: cut to `limit` characters, with its full length noted,
    so a tool that raises a 10 MB message does not write a 10 MB line."""
    text = safe_str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters in all)"


class InvalidArgument(AgentkitError, TypeError, ValueError):
    """An argument no run could start from (`Agent(...)`, `Agent.run`, `extract`): `argument`
    names it (``"max_tokens"``, ``"prompt[1].role"``) and `reason` says what is wrong.

    A `TypeError` and a `ValueError` too, so code that caught either for a bad argument still does.
    """

    def __init__(self, argument: str, reason: str):
        self.argument = argument
        self.reason = reason
        super().__init__(f"{argument}: {reason}")


class ApprovalMismatch(InvalidArgument):
    """A resume whose stored call is not the call approved: its tool or arguments differ from
    what the `Approval` holds (the stored history was changed after the person saw it, or the
    approval is another call's). Nothing runs. `call_id` names the call."""

    def __init__(self, call_id: str, reason: str):
        self.call_id = call_id
        super().__init__(f"approvals[{call_id!r}]", reason)


class CallAlreadyResumed(InvalidArgument):
    """A waiting call that this agent has already resumed (the same stored history resumed
    twice: a double-clicked approve, a retried request). Nothing runs. `call_id` names it."""

    def __init__(self, call_id: str):
        self.call_id = call_id
        super().__init__(
            f"approvals[{call_id!r}]",
            "this call was already resumed once; resume from the messages that run returned",
        )


class ToolAborted(AgentkitError):
    """A tool that raised what is not an `Exception` (`SystemExit`, `GeneratorExit`, another
    `BaseException` subclass): reported to the model as the call's failure, so a tool cannot end
    the run or the process. `__cause__` is what it raised. `KeyboardInterrupt` and cancellation
    are not caught."""

    def __init__(self, tool: str, raised: BaseException):
        self.tool = tool
        super().__init__(f"tool {tool!r} raised {type(raised).__name__}: {safe_str(raised)}")


class UnreadableResult(AgentkitError):
    """A tool's return value that cannot become text for the model (not JSON-serialisable, and
    its `repr` fails): reported to the model as the call's failure; `__cause__` says why."""

    def __init__(self, value: Any, cause: BaseException):
        super().__init__(
            f"the tool returned a {type(value).__name__} that cannot be shown as text "
            f"({type(cause).__name__}: {safe_str(cause)})"
        )


class ToolTimeout(AgentkitError, TimeoutError):
    """A tool call that ran past its timeout (the tool's own, else the agent's `tool_timeout`)."""

    def __init__(self, tool: str, seconds: float):
        self.tool = tool
        self.seconds = seconds
        super().__init__(f"tool {tool!r} did not finish within {seconds:g} s")


def pydantic_violations(exc: Any, names: dict[str, str] | None = None) -> list[Violation]:
    """A pydantic `ValidationError` as violations (`names` maps field names back to the
    parameter names a tool's schema shows)."""
    out = []
    for err in exc.errors(include_url=False):
        path = ""
        for i, part in enumerate(err.get("loc", ())):
            if i == 0 and names and isinstance(part, str):
                part = names.get(part, part)
            path = f"{path}[{part}]" if isinstance(part, int) else (f"{path}.{part}" if path else str(part))
        out.append(Violation(path, err.get("type", "value"), err.get("msg", ""), "validator"))
    return out


class RepeatedCall(AgentkitError):
    """A repeat refused under `repeat_calls="refuse"`: `original` is the id of the equal call
    whose outcome stands."""

    def __init__(self, tool: str, original: str):
        self.tool = tool
        self.original = original
        super().__init__(
            f"{tool} was already called with these arguments (call {original}); "
            "use that result, or call with other arguments"
        )


class ModelRetry(AgentkitError):
    """Raise it in a tool, or in an output validator (`Agent(output_validator=...)`,
    `extract(..., output_validator=...)`), to send `message` to the model and have it try
    again: a tool's call is answered with the message; an output is refused with it, and the
    model answers anew. Each counts as one correction against `max_retries` (per tool, or for
    the output); past it the run raises `ToolRetriesExceeded` or `OutputRetriesExceeded` (an
    `OutputValidationError`; `extract` raises `OutputValidationError` itself)."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)


class CallDenied(AgentkitError):
    """A call that waited for approval and was denied (`pending.deny(reason)`): the model
    reads it as the call's outcome. `reason` is the approver's, or None."""

    def __init__(self, tool: str, reason: str | None = None):
        self.tool = tool
        self.reason = reason
        super().__init__(f"the call of {tool} was not approved" + (f": {reason}" if reason else ""))


class ValidationFailed(AgentkitError):
    """A value (tool arguments or a final output) that did not validate; `violations` lists
    each failure with the field, the keyword, and whether the grammar or the validator holds it."""

    def __init__(self, what: str, violations: list[Violation], text: str | None = None):
        self.what = what
        self.violations = list(violations)
        self.text = text
        lines = "\n".join(f"  - {v}" for v in self.violations)
        # Not `super()`: under `OutputRetriesExceeded` the next class is `RunError`, whose
        # `messages` and `usage` `OutputValidationError` sets itself.
        AgentkitError.__init__(self, f"{what} did not validate:\n{lines}")


class ToolArgumentsError(ValidationFailed):
    """A tool call whose arguments do not validate into the tool's argument type."""

    def __init__(self, tool: str, violations: list[Violation], text: str | None = None):
        self.tool = tool
        super().__init__(f"arguments of tool {tool!r}", violations, text)


class OutputValidationError(ValidationFailed):
    """A final output (agent `output_type`, `extract`) that does not validate into its type,
    after `max_retries` corrections; carries the messages so far and `retries`, the corrections
    asked for before it. An agent run raises its subclass `OutputRetriesExceeded`, which is a
    `RunError` too.
    """

    def __init__(
        self,
        violations: list[Violation],
        text: str | None = None,
        *,
        messages: list[dict[str, Any]] | None = None,
        usage: Any = None,
    ):
        self.messages = list(messages or [])
        self.usage = usage
        self.retries: list[Any] = []  # the corrections asked for before it (`RetryRecord`s)
        super().__init__("output", violations, text)


class RunError(AgentkitError):
    """An agent run that stopped before a final output; `messages` holds every message so far
    (the prompt, each model turn, each tool result) and `usage` the tokens spent."""

    def __init__(self, message: str, *, messages: list[dict[str, Any]], usage: Any = None):
        self.messages = list(messages)
        self.usage = usage
        super().__init__(message)


class UsageLimitExceeded(RunError):
    """A run limit was reached: `limit` names it: ``"steps"`` (model requests: `max_steps`,
    `UsageLimits.request_limit`), ``"tool_calls"``, ``"input_tokens"``, ``"output_tokens"``
    (`token_budget` too), ``"total_tokens"``, ``"tokens"`` (a turn's `max_tokens`) or ``"time"``."""

    limit: str = ""

    def __init__(self, message: str, *, messages: list[dict[str, Any]], usage: Any = None, limit: str | None = None):
        super().__init__(message, messages=messages, usage=usage)
        if limit is not None:
            self.limit = limit


class StepLimitExceeded(UsageLimitExceeded):
    limit = "steps"


class TokenLimitExceeded(UsageLimitExceeded):
    limit = "tokens"


class RunTimeout(UsageLimitExceeded):
    limit = "time"


class IncompleteOutput(TokenLimitExceeded):
    """Generation reached its token budget (`max_tokens`) before the model finished its answer
    (the document unfinished, or closed early only because the budget ran out).

    `text` is what was generated; no half object is ever returned.
    """

    def __init__(
        self,
        message: str,
        *,
        text: str,
        messages: list[dict[str, Any]] | None = None,
        usage: Any = None,
    ):
        self.text = text
        super().__init__(message, messages=messages or [], usage=usage)


class ToolRetriesExceeded(RunError):
    """A tool's calls were refused more than `max_retries` times in one run: their arguments
    did not validate, or the tool raised `ModelRetry`. `error` is the last refusal."""

    def __init__(self, tool: str, error: ValidationFailed | ModelRetry, **kwargs: Any):
        self.tool = tool
        self.error = error
        what = "asked for a retry" if isinstance(error, ModelRetry) else "arguments failed validation"
        super().__init__(f"tool {tool!r}: {what} too often; last error: {error}", **kwargs)


class OutputRetriesExceeded(OutputValidationError, RunError):
    """An agent run's final output that failed validation (or its `output_validator`) more
    than `max_retries` times: an `OutputValidationError` (`violations`, `text`) and a
    `RunError` (`messages`, `usage`), so `except RunError` sees every way a run stops."""


class ModelRequestFailed(RunError):
    """The runtime failed (server error, connection lost, model or grammar-engine error);
    `__cause__` is the original error."""


class CallbackFailed(RunError):
    """A function an agent or an extraction was given, other than a tool, raised: an
    `output_validator` (other than `ModelRetry`), the `requires_approval` predicate, a per-run
    `system_prompt`, or a validator of the output type or of a tool's arguments (other than a
    validation failure). `callback` names which; `__cause__` is what it raised.
    A `SystemExit` or another `BaseException` that is not an `Exception` is caught too (as for
    tools, `ToolAborted`); `KeyboardInterrupt` and cancellation pass through."""

    def __init__(self, callback: str, raised: BaseException, **kwargs: Any):
        self.callback = callback
        super().__init__(f"{callback} raised {type(raised).__name__}: {log_text(raised)}", **kwargs)


@contextlib.contextmanager
def callback_failures(role: str, context: Callable[[], dict[str, Any]],
                      passes: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """What a user's function (`role` names it) raises inside the block, but `passes`, as a
    `CallbackFailed` with the messages and usage `context()` gives then; `KeyboardInterrupt`
    and cancellation pass through."""
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, (*passes, KeyboardInterrupt, asyncio.CancelledError)):
            raise
        raise CallbackFailed(role, exc, **context()) from exc


class UnexpectedModelOutput(RunError):
    """Model output that the turn's grammar should have made impossible (for instance a runtime
    that ignored the grammar): `text` holds it."""

    def __init__(self, message: str, *, text: str, **kwargs: Any):
        self.text = text
        super().__init__(message, **kwargs)


class UnreadableOutput(RunError):
    """A model turn too deep or too long to parse (arrays and objects nested deeper than
    `MAX_NESTING`, 64; a number of more digits than Python reads, 4,300), more than
    `max_retries` times in a run: `text` holds the last such turn and `reason` what was wrong."""

    def __init__(self, message: str, *, text: str, reason: str, **kwargs: Any):
        self.text = text
        self.reason = reason
        super().__init__(message, **kwargs)

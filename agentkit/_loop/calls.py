"""Call handling: a turn's calls validated into their tools' types, run (concurrently, repeats
as the run's ledger says), and their outcomes as the text the model reads next."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .approvals import idempotency_key
from .._context import RunContext
from .._errors import ModelRetry, RunError, ToolArgumentsError, ToolRetriesExceeded, UnreadableResult, log_text
from .._outputs.events import RunUsage, ToolCallRecord
from .._messages import ToolCall, render_error, render_result
from .repeats import REUSE_NOTE, ValidCall
from .state import RunState

logger = logging.getLogger("agentkit")


async def run_calls(
    state: RunState, calls: Sequence[ValidCall | ToolCallRecord], tool_timeout: float | None
) -> list[ToolCallRecord]:
    """Run the valid calls (`validated`'s) concurrently, repeats as the run's ledger says;
    records in call order (a record given stands). A tool's failure is its record's `error`,
    not raised, except a `RunError` (a tool that ends the run)."""

    async def run(valid: ValidCall) -> ToolCallRecord:
        call = valid.call
        context = RunContext(
            deps=state.deps,
            messages=tuple(state.messages),
            step=state.step,
            tool_name=call.name,
            tool_call_id=call.id,
            usage=state.usage,
            idempotency_key=idempotency_key(call),
        )
        state.usage = state.usage + RunUsage(tool_runs=1)
        with state.trace.tool_call(call.name, call.id) as span:
            try:
                result = await valid.tool.call(valid.arguments, context, timeout=tool_timeout)
            except RunError as exc:
                state.trace.tool_outcome(span, "aborted", exc)
                raise  # a tool that ends the run (an MCP server lost mid-call) carries its messages
            except ModelRetry as exc:  # the tool asks the model to try again
                logger.info("tool %r asked for a retry: %s", call.name, log_text(exc))
                state.trace.tool_outcome(span, "retry")
                return ToolCallRecord(call, valid.arguments, error=exc)
            except Exception as exc:  # a failing tool is reported to the model, not raised
                logger.warning("tool %r failed (%s: %s); the error goes back to the model",
                               call.name, type(exc).__name__, log_text(exc))
                state.trace.tool_outcome(span, "error", exc)
                return ToolCallRecord(call, valid.arguments, error=exc)
            try:
                render_result(result)  # a value the model cannot read is the call's failure
            except UnreadableResult as exc:
                logger.warning("tool %r: %s; the error goes back to the model", call.name, log_text(exc))
                state.trace.tool_outcome(span, "error", exc)
                return ToolCallRecord(call, valid.arguments, error=exc)
            state.trace.tool_outcome(span, "ok")
            return ToolCallRecord(call, valid.arguments, result=result)

    def before(count: int) -> None:  # the turn's calls that would run, none of which has yet
        state.limits.before_calls(state.usage.tool_runs, count, state.context())

    told = "\n".join(m["content"] for m in state.messages if m.get("role") == "user" and isinstance(m.get("content"), str))
    return await state.ledger.run_turn(calls, run, before=before, told=told)


def validated(call: ToolCall, state: RunState) -> ValidCall | ToolCallRecord:
    """The call ready to run, or its record if its arguments do not validate (the run's
    `validation_context` goes to the arguments' pydantic validators). A validator that raises
    something other than a validation failure is the user's code failing, not the model's
    arguments: `CallbackFailed`, the messages kept."""
    t = state.settings.tools[call.name]
    with state.callback_errors(f"the argument validators of tool {call.name!r}", passes=(ToolArgumentsError,)):
        try:
            return ValidCall(call, t, t.validate(call.arguments, validation_context=state.validation_context))
        except ToolArgumentsError as exc:
            return ToolCallRecord(call, error=exc)


def tool_feedback(record: ToolCallRecord) -> str:
    """What the model reads of a call's outcome: its result or its error, opened by a short
    note where the outcome is an earlier equal call's."""
    if record.reused:
        return f"{REUSE_NOTE} {_outcome_feedback(record)}"
    return _outcome_feedback(record)


def _outcome_feedback(record: ToolCallRecord) -> str:
    if record.error is None:
        try:
            return render_result(record.result)
        except UnreadableResult as exc:  # readable when the call ended, but not now
            return render_error(exc)
    return render_error(record.error)


def count_failures(state: RunState, records: Sequence[ToolCallRecord], max_retries: int) -> None:
    """Count each refused call (arguments that did not validate, or a tool's `ModelRetry`)
    against its tool's corrections, and mark a tool's earlier refusals fixed by a call of it
    that succeeded; `ToolRetriesExceeded` past the tool's own `retries`, else `max_retries`."""
    for record in records:
        name = record.call.name
        own = getattr(state.settings.tools.get(name), "retries", None)
        allowed = max_retries if own is None else own
        if record.ok and not record.reused:
            state.fixed(name, record.call.id)
        if not isinstance(record.error, (ToolArgumentsError, ModelRetry)):
            continue
        kind = "arguments" if isinstance(record.error, ToolArgumentsError) else "model_retry"
        count = state.retry(name, kind, render_error(record.error), record.call.id)
        if count > allowed:
            raise ToolRetriesExceeded(name, record.error, **state.context())
        logger.info("correction %d of %d asked for: %s", count, allowed, log_text(record.error))

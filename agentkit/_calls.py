"""Call handling: a turn's calls validated into their tools' types, run (concurrently, repeats
as the run's ledger says), and their outcomes as the text the model reads next."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from ._context import RunContext
from ._errors import RunError, ToolArgumentsError, ToolRetriesExceeded, UnreadableResult, safe_str
from ._events import RunUsage, ToolCallRecord
from ._messages import ToolCall, render_error, render_result
from ._repeats import ValidCall, reuse_note
from ._state import RunState
from ._tool import Tool

logger = logging.getLogger("agentkit")


async def run_calls(
    state: RunState, calls: Sequence[ToolCall], tools: Mapping[str, Tool], tool_timeout: float | None
) -> list[ToolCallRecord]:
    """Validate every call, then run the valid ones concurrently, repeats as the run's ledger
    says; records in call order. A tool's failure is its record's `error`, not raised, except
    a `RunError` (a tool that ends the run)."""

    async def run(valid: ValidCall) -> ToolCallRecord:
        call = valid.call
        context = RunContext(
            deps=state.deps,
            messages=tuple(state.messages),
            step=state.step,
            tool_name=call.name,
            tool_call_id=call.id,
            usage=state.usage,
        )
        state.usage = state.usage + RunUsage(tool_runs=1)
        try:
            result = await valid.tool.call(valid.arguments, context, timeout=tool_timeout)
        except RunError:
            raise  # a tool that ends the run (an MCP server lost mid-call) carries its messages
        except Exception as exc:  # a failing tool is reported to the model, not raised
            logger.warning("tool %r failed (%s: %s); the error goes back to the model",
                           call.name, type(exc).__name__, safe_str(exc))
            return ToolCallRecord(call, valid.arguments, error=exc)
        try:
            render_result(result)  # a value the model cannot read is the call's failure
        except UnreadableResult as exc:
            logger.warning("tool %r: %s; the error goes back to the model", call.name, exc)
            return ToolCallRecord(call, valid.arguments, error=exc)
        return ToolCallRecord(call, valid.arguments, result=result)

    return await state.ledger.run_turn([validated(c, tools) for c in calls], run)


def validated(call: ToolCall, tools: Mapping[str, Tool]) -> ValidCall | ToolCallRecord:
    """The call ready to run, or its record if its arguments do not validate."""
    t = tools[call.name]
    try:
        return ValidCall(call, t, t.validate(call.arguments))
    except ToolArgumentsError as exc:
        return ToolCallRecord(call, error=exc)


def tool_feedback(record: ToolCallRecord) -> str:
    """What the model reads of a call's outcome: its result or its error, with a note where
    the outcome is an earlier equal call's."""
    if record.reused:
        return f"{_outcome_feedback(record)}\n{reuse_note(record)}"
    return _outcome_feedback(record)


def _outcome_feedback(record: ToolCallRecord) -> str:
    if record.error is None:
        try:
            return render_result(record.result)
        except UnreadableResult as exc:  # readable when the call ended, but not now
            return render_error(exc)
    return render_error(record.error)


def count_failures(state: RunState, records: Sequence[ToolCallRecord], max_retries: int) -> None:
    """Count each call whose arguments did not validate against its tool's corrections;
    `ToolRetriesExceeded` past `max_retries` for one tool."""
    for record in records:
        if isinstance(record.error, ToolArgumentsError):
            state.failures[record.call.name] += 1
            if state.failures[record.call.name] > max_retries:
                raise ToolRetriesExceeded(record.call.name, record.error, **state.context())
            logger.info("correction %d of %d asked for: %s", state.failures[record.call.name], max_retries, record.error)

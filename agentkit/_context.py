"""`RunContext`: what a tool may ask the running agent for, injected by type, never by the model."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

DepsT = TypeVar("DepsT")


@dataclass(frozen=True)
class RunContext(Generic[DepsT]):
    """Passed to a tool parameter annotated `RunContext` (or `RunContext[MyDeps]`).

    `deps` is what the caller gave `agent.run(..., deps=...)`; `messages` the conversation up
    to the turn that made this call; `step` the model turn's number (from 1); `tool_call_id`
    identifies this call in the messages (a call id holds its run's id, so ids do not repeat
    across conversations).

    `idempotency_key` names this call: the same wherever it is run from one stored
    conversation (a call resumed after approval has the same key on every resume), and
    another for every other call. A tool with side effects stores it where the effect lands
    (beside the payment, in the same transaction) and refuses a key it holds already: the one
    guard against running a call twice that survives a process ending mid-call.
    """

    deps: DepsT
    messages: tuple[dict[str, Any], ...] = ()
    step: int = 0
    tool_name: str = ""
    tool_call_id: str = ""
    usage: Any = field(default=None)
    idempotency_key: str = ""


def is_context_type(annotation: Any) -> bool:
    """Whether a parameter annotation asks for the run context."""
    if annotation is RunContext:
        return True
    return typing.get_origin(annotation) is RunContext

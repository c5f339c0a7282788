"""`RunState`: what a run holds between its turns."""

from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ._events import RetryKind, RetryRecord, RunUsage, ToolCallRecord
from ._messages import Message, ToolCall
from ._repeats import CallLedger
from ._settings import RunSettings
from ._tracing import RunTrace


@dataclass
class RunState:
    """What a run has so far; every error raised mid-run carries `messages` and `usage`."""

    messages: list[Message]
    deps: Any
    deadline: float | None
    ledger: CallLedger
    settings: RunSettings
    usage: RunUsage = field(default_factory=RunUsage)
    records: list[ToolCallRecord] = field(default_factory=list)
    step: int = 0
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    must_answer: bool = False
    retries: list[RetryRecord] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)  # `PendingCall`s where the run stopped for approval
    resumed: list[ToolCall] = field(default_factory=list)  # calls a resumed run was given decisions on
    approvals: dict[str, Any] = field(default_factory=dict)
    earlier_turns: int = 0  # assistant turns of the conversation the run continues
    trace: RunTrace = field(default_factory=lambda: RunTrace.off())

    def context(self) -> dict[str, Any]:
        return {"messages": list(self.messages), "usage": self.usage}

    def retry(self, subject: str, kind: RetryKind, problem: str, call_id: str | None = None) -> int:
        """Record a correction asked for at this turn; the subject's count of corrections."""
        self.retries.append(RetryRecord(self.step, subject, kind, problem, call_id))
        self.failures[subject] += 1
        return self.failures[subject]

    def fixed(self, subject: str, call_id: str | None = None) -> None:
        """The subject's open corrections were fixed at this turn (by `call_id`)."""
        self.retries = [
            dataclasses.replace(r, fixed_at=self.step, fixed_by=call_id) if r.subject == subject and not r.fixed else r
            for r in self.retries
        ]

"""`RunState`: what a run holds between its turns."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

from ._events import RunUsage, ToolCallRecord
from ._messages import Message
from ._repeats import CallLedger
from ._settings import RunSettings


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

    def context(self) -> dict[str, Any]:
        return {"messages": list(self.messages), "usage": self.usage}

"""Repeated tool calls. Small models often ask again for what they already hold: the same tool
with equal arguments, twice in a turn or turn after turn. A call equal to one the run already
made is a *repeat*; the agent's `repeat_calls` says what it gets, so a loop costs no tool runs
and shows in the run's records.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pydantic_core

from ._errors import RepeatedCall
from ._events import ToolCallRecord
from ._messages import ToolCall
from ._tool import Tool

RepeatCalls = Literal["reuse", "run", "refuse"]
REPEAT_CALLS: tuple[RepeatCalls, ...] = ("reuse", "run", "refuse")

CallKey = tuple[str, str]


@dataclass(frozen=True)
class ValidCall:
    """A call whose arguments validated into the tool's type, ready to run."""

    call: ToolCall
    tool: Tool
    arguments: Any


def call_key(call: ValidCall) -> CallKey | None:
    """What makes two calls equal: the tool and its validated arguments (defaults filled in,
    object keys in any order). None for a tool declared `idempotent=False`: its calls are
    never repeats."""
    if not call.tool.idempotent:
        return None
    value = pydantic_core.to_jsonable_python(call.arguments, fallback=repr)
    return call.call.name, json.dumps(value, sort_keys=True, ensure_ascii=False)


ANSWER_NOW = "Answer the question now, from the tool results above, without calling a tool."
"""The user message that opens a turn held to the answer because the model went in circles:
without it, small models held to text write out the last tool message rather than an answer."""


def reuse_note(record: ToolCallRecord) -> str:
    """What the model reads after the outcome a reused call was given."""
    return f"(Already answered by call {record.repeat_of}: this is its result again. Use it rather than calling again.)"


class CallLedger:
    """One run's calls that succeeded, by tool and arguments, and the policy for a turn's calls:

    - a call equal to one that succeeded in an earlier turn, or to an earlier call of the same
      turn, is a repeat (`ToolCallRecord.repeat_of` names that call);
    - `"reuse"`: a repeat does not run; it gets the outcome of the call it repeats (in the same
      turn, that call's outcome once it has run: duplicates in a turn run once);
    - `"refuse"`: a repeat does not run; it gets a `RepeatedCall` error;
    - `"run"`: a repeat runs like any call (it is still recorded and counted as a repeat).

    A call equal to one that failed is a retry and runs; failing again with the same error is
    what `goes_in_circles` looks for, beside repeats of successes.
    """

    def __init__(self, policy: RepeatCalls):
        self.policy = policy
        self._succeeded: dict[CallKey, ToolCallRecord] = {}
        self._failed: dict[CallKey, str] = {}  # the error an equal call last failed with
        self._failed_alike: set[str] = set()  # ids of calls that failed as an equal call had

    async def run_turn(
        self,
        calls: Sequence[ValidCall | ToolCallRecord],
        run: Callable[[ValidCall], Awaitable[ToolCallRecord]],
    ) -> list[ToolCallRecord]:
        """Every call's record, in call order: `calls` holds records already (calls whose
        arguments did not validate) and valid calls; those that run, run concurrently."""
        records = {i: c for i, c in enumerate(calls) if isinstance(c, ToolCallRecord)}
        valid = {i: c for i, c in enumerate(calls) if isinstance(c, ValidCall)}
        keys: dict[int, CallKey] = {}
        firsts: dict[CallKey, int] = {}  # the first call of this turn with each key
        to_run: dict[int, str | None] = {}  # index -> the call it repeats, if any
        same_as: dict[int, int] = {}  # a reused duplicate of this turn -> index of its first
        for i, c in valid.items():
            key = call_key(c)
            if key is None:
                to_run[i] = None
                continue
            keys[i] = key
            first = firsts.setdefault(key, i)
            earlier = self._succeeded.get(key)
            original = earlier.call.id if earlier else (valid[first].call.id if first != i else None)
            if original is None or self.policy == "run":
                to_run[i] = original
            elif self.policy == "refuse":
                refusal = RepeatedCall(c.call.name, original)
                records[i] = ToolCallRecord(c.call, c.arguments, error=refusal, repeat_of=original)
            elif earlier is not None:
                records[i] = _reused(c, earlier)
            else:
                same_as[i] = first
        outcomes = await asyncio.gather(*(run(valid[i]) for i in to_run))
        for (i, original), outcome in zip(to_run.items(), outcomes):
            record = records[i] = dataclasses.replace(outcome, repeat_of=original)
            if i not in keys:
                continue
            if record.ok:
                self._succeeded.setdefault(keys[i], record)
            else:
                error = repr(record.error)
                if self._failed.get(keys[i]) == error:
                    self._failed_alike.add(record.call.id)
                self._failed[keys[i]] = error
        for i, first in same_as.items():
            records[i] = _reused(valid[i], records[first])
        return [records[i] for i in range(len(calls))]

    def goes_in_circles(self, records: Sequence[ToolCallRecord]) -> bool:
        """Whether one of `records` repeats a call that succeeded (the model asked again for
        what it already holds) or failed with the same error as an equal call before it (it
        retried what it was told fails)."""
        succeeded = {r.call.id for r in self._succeeded.values()}
        return any(r.repeat_of in succeeded or r.call.id in self._failed_alike for r in records)


def _reused(call: ValidCall, original: ToolCallRecord) -> ToolCallRecord:
    return ToolCallRecord(
        call.call, call.arguments, original.result, original.error, repeat_of=original.call.id, reused=True
    )

"""Repeated tool calls. Small models often ask again for what they already hold: the same tool
with equal arguments, twice in a turn or turn after turn. A call equal to one the run already
made is a *repeat*; the agent's `repeat_calls` says what it gets, so a loop costs no tool runs
and shows in the run's records.
"""

from __future__ import annotations

import asyncio
import dataclasses
import decimal
import math
import re
from collections.abc import Awaitable, Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

from .._errors import RepeatedCall, safe_str
from .._outputs.events import ToolCallRecord
from .._messages import ToolCall
from .._tools.tool import Tool

RepeatCalls = Literal["reuse", "run", "refuse"]
REPEAT_CALLS: tuple[RepeatCalls, ...] = ("reuse", "run", "refuse")

CallKey = tuple[str, Hashable]


@dataclass(frozen=True)
class ValidCall:
    """A call whose arguments validated into the tool's type, ready to run."""

    call: ToolCall
    tool: Tool
    arguments: Any


def call_key(call: ValidCall) -> CallKey | None:
    """What makes two calls equal: the tool and its validated arguments' values (defaults
    filled in, object keys in any order), read from the values themselves, not from their
    serialisation, which may leave a field out (`Field(exclude=True)`) or map several values
    to one (a `PlainSerializer`). None for a tool declared `idempotent=False`, or arguments
    holding a value that cannot be compared: such calls are never repeats."""
    if not call.tool.idempotent:
        return None
    try:
        return call.call.name, value_key(call.arguments)
    except _Incomparable:
        return None


class _Incomparable(Exception):
    """A value with no equality to key on (unhashable, and of no kind `value_key` walks)."""


def value_key(value: Any) -> Hashable:
    """A hashable stand-in for `value`, equal only for equal values of the same types: models,
    dataclasses, mappings, sequences and sets walked by their fields and items, each scalar
    tagged with its type (so ``1``, ``1.0`` and ``True`` differ, as their JSON does). Raises
    `_Incomparable` for a value of no kind walked here that has no hash."""
    if isinstance(value, pydantic.BaseModel):
        fields = {name: getattr(value, name) for name in type(value).model_fields}
        fields.update(value.__pydantic_extra__ or {})
        return (_type_name(value), value_key(fields))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return (_type_name(value), value_key(fields))
    if isinstance(value, dict):
        items = [(value_key(k), value_key(v)) for k, v in value.items()]
        return ("dict", frozenset(items))
    if isinstance(value, (list, tuple)):
        return (_type_name(value), tuple(value_key(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return (_type_name(value), frozenset(value_key(v) for v in value))
    if isinstance(value, float):  # exact, -0.0 apart from 0.0 as in JSON
        return ("float", value.hex())
    if value is None or isinstance(value, (str, int, bytes)):
        return (_type_name(value), value)
    # Other values (datetimes, decimals, enums ...) may be equal yet differ as the tool sees them
    # (12:00 UTC and 13:00 at +01:00; Decimal 1.0 and 1.00): their repr tells those apart.
    try:
        hash(value)
        return (_type_name(value), value, repr(value))
    except Exception:
        raise _Incomparable from None


def _type_name(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


ANSWER_NOW = "Answer the question now, from the tool results above, without calling a tool."
"""The user message that opens a turn held to the answer because the model went in circles,
where the run has no request of its own to ask again (it was resumed, or started without a
user message last; otherwise the answer is asked as `results.routed_answer_messages` says):
without it, small models held to text write out the last tool message rather than an answer."""


REUSE_NOTE = "(again)"
"""What opens the outcome a call answered in an earlier turn is given again. A word, no
sentence: small models held to an answer write out the last tool message, and an instruction
there ("use it rather than calling again") or a sentence ("Same result as before:") became
their answer; after "(again)" SmolLM2 writes its own ("The weather in Paris, in Fahrenheit,
is light rain."), and Qwen2.5-Coder-0.5B's answers on the tune half of `bench.agent_values`
are the same (8 of 23 either way)."""


class CallLedger:
    """One run's calls that succeeded, by tool and arguments, and the policy for a turn's calls:

    - a call equal to one that succeeded in an earlier turn, or to an earlier call of the same
      turn, is a repeat (`ToolCallRecord.repeat_of` names that call);
    - `"reuse"`: a repeat does not run; it gets the outcome of the call it repeats (in the same
      turn, that call's outcome once it has run: duplicates in a turn run once, and
      `folded` says which are answered by that call's message alone);
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
        before: Callable[[int], None] | None = None,
        told: str = "",
    ) -> list[ToolCallRecord]:
        """Every call's record, in call order: `calls` holds records already (calls whose
        arguments did not validate) and valid calls; those that run, run concurrently, after
        `before` is told how many will (what it raises stops them all). `told`: what the user
        wrote, against which a call fed on its own tool's result is told from a new one."""
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
            earlier = self._succeeded.get(key) or self._fed_on(c, told)
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
        if before is not None and to_run:
            before(len(to_run))
        outcomes = await asyncio.gather(*(run(valid[i]) for i in to_run))
        for (i, original), outcome in zip(to_run.items(), outcomes):
            record = records[i] = dataclasses.replace(outcome, repeat_of=original)
            if i not in keys:
                continue
            if record.ok:
                self._succeeded.setdefault(keys[i], record)
            else:
                error = f"{type(record.error).__name__}: {safe_str(record.error)}"
                if self._failed.get(keys[i]) == error:
                    self._failed_alike.add(record.call.id)
                self._failed[keys[i]] = error
        for i, first in same_as.items():
            records[i] = _reused(valid[i], records[first])
        return [records[i] for i in range(len(calls))]

    def _fed_on(self, call: ValidCall, told: str) -> ToolCallRecord | None:
        """The earlier success of the same tool whose result `call` is fed on, if any (see
        `feeds_on`): such a call is a repeat of that one in spirit."""
        for record in self._succeeded.values():
            if record.call.name == call.call.name and feeds_on(call.call.arguments, record, told):
                return record
        return None

    @staticmethod
    def folded(records: Sequence[ToolCallRecord]) -> set[str]:
        """The ids of `records` (one turn's) that reuse an earlier call of the same turn: such
        a duplicate is answered once, by that call's tool message, and leaves the turn's
        stored calls, so a model that wrote one call six times reads one answer."""
        ids = {r.call.id for r in records}
        return {r.call.id for r in records if r.reused and r.repeat_of in ids}

    def goes_in_circles(self, records: Sequence[ToolCallRecord]) -> bool:
        """Whether one of `records` repeats a call that succeeded (the model asked again for
        what it already holds) or failed with the same error as an equal call before it (it
        retried what it was told fails)."""
        succeeded = {r.call.id for r in self._succeeded.values()}
        return any(r.repeat_of in succeeded or r.call.id in self._failed_alike for r in records)


def feeds_on(arguments: Any, earlier: ToolCallRecord, told: str) -> bool:
    """Whether a call with `arguments` is `earlier`'s tool called on `earlier`'s own result
    with nothing new from the user: each argument that differs from `earlier`'s holds a value
    that result holds and `told` (the user's words) does not. Small models chain a tool on
    itself so (`convert_temperature(25)` gives 298.15, then `convert_temperature(298.15)` ...)
    until `max_steps`; no such call adds what the request asked for."""
    mine, theirs = dict(_leaves(arguments)), dict(_leaves(earlier.call.arguments))
    changed = [value for path, value in mine.items() if path not in theirs or not _equal(value, theirs[path])]
    held = [value for _, value in _leaves(earlier.result)]
    return bool(changed) and all(
        any(_equal(value, h) or _cut_from(value, h) for h in held) and not _told(value, told) for value in changed)


def _cut_from(value: Any, held: Any) -> bool:
    """Whether number `value` is number `held` written to fewer decimal places, cut or
    rounded (3397 or 3397.2 for 3397.15): a model copying a result often drops its last
    digits, and Qwen2.5-Coder-0.5B chained `convert_temperature` so until `max_steps`."""
    if not (_is_number(value) and _is_number(held)) or not math.isfinite(held):
        return False
    exact = decimal.Decimal(repr(float(held)))
    places = -exact.as_tuple().exponent
    return any(float(exact.quantize(decimal.Decimal(1).scaleb(-d), rounding)) == value
               for d in range(min(max(places, 0), 17)) for rounding in (decimal.ROUND_DOWN, decimal.ROUND_HALF_UP))


_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """The scalars of a JSON-like value, each with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}/{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}/{i}")
    elif value is None or isinstance(value, (str, int, float)):
        yield path, value


def _equal(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().casefold() == b.strip().casefold()
    return False


def _told(value: Any, told: str) -> bool:
    """Whether the user's words hold `value` (a number among their numbers, a text among their words)."""
    if _is_number(value):
        return any(math.isclose(abs(float(n.replace(",", ""))), abs(value), abs_tol=1e-9) for n in _NUMBER.findall(told))
    return isinstance(value, str) and value.strip().casefold() in told.casefold()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _reused(call: ValidCall, original: ToolCallRecord) -> ToolCallRecord:
    return ToolCallRecord(
        call.call, call.arguments, original.result, original.error, repeat_of=original.call.id, reused=True
    )

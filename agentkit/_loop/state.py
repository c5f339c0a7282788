"""`RunState`: what a run holds between its turns, and how its waits keep to its deadline and
turn a runtime's failures into run errors that keep the messages so far."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import inspect
import secrets
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from grammar import GrammarError
from runtimes import GrammarIgnored, Runtime, RuntimeFailure, TokenBudgetExceeded

from .._errors import (
    callback_failures,
    IncompleteOutput,
    ModelRequestFailed,
    RunError,
    RunTimeout,
    UnexpectedModelOutput,
    safe_str,
)
from .._outputs.events import RetryKind, RetryRecord, RunUsage, ToolCallRecord
from .._messages import Message, ToolCall
from .limits import RunLimits
from .repeats import CallLedger
from .routing import Route
from .settings import RunSettings
from .tracing import RunTrace

T = TypeVar("T")


def new_run_id() -> str:
    """A run's id, which its call ids hold: 8 random hex digits, so that ids (and the
    idempotency keys made from them) do not repeat across conversations."""
    return secrets.token_hex(4)


@dataclass
class RunState:
    """What a run has so far; every error raised mid-run carries `messages` and `usage`."""

    messages: list[Message]
    deps: Any
    deadline: float | None
    ledger: CallLedger
    settings: RunSettings
    limits: RunLimits
    usage: RunUsage = field(default_factory=RunUsage)
    records: list[ToolCallRecord] = field(default_factory=list)
    step: int = 0
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    must_answer: bool = False
    retries: list[RetryRecord] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)  # `PendingCall`s where the run stopped for approval
    resumed: list[ToolCall] = field(default_factory=list)  # calls a resumed run was given decisions on
    approvals: dict[str, Any] = field(default_factory=dict)  # their `Approval`s, by call id
    run_id: str = field(default_factory=lambda: new_run_id())  # in its call ids
    earlier_turns: int = 0  # assistant turns of the conversation the run continues
    trace: RunTrace = field(default_factory=lambda: RunTrace.off())
    timeout: float | None = None  # the run's, in seconds (`deadline` is when it ends)
    confidence: dict[str, Any] = field(default_factory=dict)  # call id: its arguments' `FieldConfidence`s
    validation_context: Any = None  # given to pydantic validators of tool arguments and the output
    runtime: Runtime | None = None  # the run's (an override's, or the agent's); None: the default model
    route: Route | None = None  # the first turn's routing decision, until that turn is asked
    offered: frozenset[str] | None = None  # the tools routing leaves the first turn, until it is asked
    request_at: int | None = None  # the index of the user message the run was started with, if any
    answers_routed: bool = False  # once a routed or forced call is made: the answer is asked about `request_at`
    ungrounded_turns: list[int] = field(default_factory=list)  # turns that had to call, with no groundable tool
    shown_until: int | None = None  # where set, a turn is shown (and held to) the messages before this index

    def shown(self) -> list[Message]:
        """The messages a turn is shown and holds its values to (`shown_until`)."""
        return self.messages if self.shown_until is None else self.messages[:self.shown_until]

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

    async def within(self, work: Awaitable[T], runtime: str | None = None) -> T:
        """Await `work` within the run's deadline (`RunTimeout` past it); for a model's `work`
        (`runtime` names it), whatever the runtime raises becomes a run error (`model_errors`)."""
        with self.model_errors(runtime) if runtime is not None else contextlib.nullcontext():
            if self.deadline is None:
                return await work
            limit = asyncio.timeout_at(self.deadline)
            try:
                async with limit:
                    return await work
            except TimeoutError:
                if not limit.expired():
                    raise
                raise self._timed_out() from None

    def _timed_out(self) -> RunTimeout:
        return RunTimeout(f"the run took longer than its timeout of {self.timeout:g} s", **self.context())

    async def callback(self, role: str, fn: Callable[..., Any], *args: Any,
                       passes: tuple[type[BaseException], ...] = ()) -> Any:
        """`fn(*args)`, a function the run was given beside its tools (`role` names it: the
        output validator, the approval predicate), awaited where it returns an awaitable, within
        the deadline: what it raises, but `passes`, becomes a `CallbackFailed` that keeps the
        messages (a `SystemExit` too: a callback cannot end the process); `KeyboardInterrupt`
        and cancellation pass through. A sync function that returns past the deadline (no timer
        fires while it holds the loop) is a `RunTimeout` all the same."""

        async def guarded() -> Any:
            with self.callback_errors(role, passes):
                value = fn(*args)
                if inspect.isawaitable(value):
                    value = await value
                return value

        value = await self.within(guarded())
        if self.deadline is not None and asyncio.get_running_loop().time() > self.deadline:
            raise self._timed_out()
        return value

    @contextlib.contextmanager
    def callback_errors(self, role: str, passes: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
        """What a function the run was given raises, but `passes`, as a `CallbackFailed` that
        keeps the messages (see `callback`)."""
        with callback_failures(role, self.context, passes):
            yield

    @contextlib.contextmanager
    def model_errors(self, name: str) -> Iterator[None]:
        """A runtime's failures (and its grammar's) as run errors that keep the messages so far;
        an error of another kind out of a runtime, or out of its grammar's compile, is a
        `ModelRequestFailed` too, with the original as `__cause__`."""
        try:
            yield
        except (RunError, StopAsyncIteration):  # a run error already; a stream's end
            raise
        except TokenBudgetExceeded as exc:
            raise IncompleteOutput(
                f"turn {self.step} reached max_tokens={self.settings.max_tokens} before the answer was complete",
                text=exc.text,
                **self.context(),
            ) from exc
        except GrammarIgnored as exc:
            raise UnexpectedModelOutput(
                f"runtime {name!r} returned text its grammar rejects", text=exc.text, **self.context()
            ) from exc
        except (RuntimeFailure, GrammarError) as exc:
            raise ModelRequestFailed(f"runtime {name!r} failed: {exc}", **self.context()) from exc
        except Exception as exc:  # a runtime's own bug, or a dependency's error: still no message lost
            raise ModelRequestFailed(
                f"runtime {name!r} raised {type(exc).__name__}: {safe_str(exc)}", **self.context()
            ) from exc

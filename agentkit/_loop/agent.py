"""`Agent`: the async loop. Each model turn is constrained to valid tool calls (or free text,
or the typed final output); calls are validated into the tools' typed arguments and run, and
their results or errors go back to the model, until a final answer or a limit."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, overload

from typing_extensions import TypeVar

from grammar import Grammar, ReasoningSpan
from runtimes import Generation, Runtime, checks, tool_instructions

from .approvals import (
    RESUMED,
    Approval,
    ApprovalPredicate,
    check_approvals,
    held_turn,
    pending_call,
    waiting_calls,
)
from .._bounds import UnreadableTurn
from .._outputs.confidence import call_argument_confidences
from .calls import count_failures, run_calls, tool_feedback, validated
from .._errors import (
    CallDenied,
    IncompleteOutput,
    InvalidArgument,
    ModelRetry,
    OutputRetriesExceeded,
    OutputValidationError,
    UnexpectedModelOutput,
    UnreadableOutput,
    log_text,
)
from .._outputs.events import (
    Event,
    FinalResult,
    PartialOutput,
    RunResult,
    RunUsage,
    TextDelta,
    ToolCallEvent,
    ToolCallRecord,
    ToolResultEvent,
)
from .._context import RunContext
from .._inputs import (
    as_argument_error,
    check_agent_settings,
    check_generation_settings,
    check_runtime,
    check_text,
    check_tool_item,
)
from .._messages import (
    Envelope,
    Message,
    Turn,
    assistant_message,
    call_envelopes,
    conversation,
    for_model,
    initial_messages,
    parse_turn,
    tool_message,
)
from .._outputs.partial import PartialOutputs
from .._outputs.output import OutputSpec, OutputValidator, correction
from .limits import RunLimits, UsageLimits
from .repeats import ANSWER_NOW, REPEAT_CALLS, CallLedger, RepeatCalls, ValidCall
from .settings import ModelSettings, RunSettings, check_model_settings, check_tool_choice, run_tools
from .._runtime import budget_reached, model_written_calls, resolve_runtime
from .state import RunState
from .._sync import iterate_to_end, run_to_end
from .tracing import RunTrace
from .._tools.tool import Tool, tool
from .turns import TurnGrammars, TurnKind, preamble

ToolPrompt = Literal["json_list", "template", "python"]
TOOL_PROMPTS: tuple[ToolPrompt, ...] = ("json_list", "template", "python")
"""How the tools are shown to the model: through the runtime's chat template, with a system
note asking for all of a turn's calls in one JSON list (`json_list`, the default) or without it
(`template`: calls as the template teaches); or listed in the system message with a request for
`[f(a=1), g(b="x")]` (`python`)."""

JSON_LIST_NOTE = (
    "When tools can help, answer with the calls alone and nothing else: every call the request needs, "
    'in one JSON list: [{"name": "<tool name>", "arguments": {<its arguments>}}, {"name": "<tool name>", '
    '"arguments": {<its arguments>}}]. A request that needs one call gets a list of one. Answer in plain '
    "words only when no tool fits or the tool results hold the answer."
)
"""The system note of `tool_prompt="json_list"`: asked for a list, small tool models write
every call a request needs where, left to their template, they write one."""

logger = logging.getLogger("agentkit")

OutputT = TypeVar("OutputT", default=str)

SystemPrompt = Callable[[RunContext[Any]], str] | Callable[[RunContext[Any]], Awaitable[str]]
"""A system prompt made per run: a function (sync or async) of the run's `RunContext` (its `deps`
and the conversation it starts from), returning the prompt's text."""


@dataclasses.dataclass(frozen=True)
class _Override:
    """What `Agent.override` swaps in for a block: a runtime (None: the agent's own) and model
    settings over the agent's and a run's."""

    runtime: Runtime | None = None
    model_settings: ModelSettings = dataclasses.field(default_factory=lambda: ModelSettings())


_NO_OVERRIDE = _Override()


class Agent(Generic[OutputT]):
    """A model with tools, and optionally a typed final output.

    `tools`: `Tool`s or plain functions (wrapped with `@tool`). `runtime`: where tokens come
    from; None means the embedded default (`runtimes.default()`, loaded once, shared).
    `output_type`: the type of the final answer (a pydantic model, dataclass, TypedDict, list
    ...); without one the final answer is text. Limits: `max_steps` model turns, `max_tokens`
    per turn, `token_budget` completion tokens per run, `timeout` seconds per run,
    `tool_timeout` seconds per tool call (a tool's own `timeout` wins), `max_retries`
    corrections per tool (or for the output) after a validation failure. `max_calls_per_turn`
    bounds the calls one turn may hold (they run concurrently).

    Repeats: a call naming the same tool as an earlier call of the run, with equal arguments
    (compared after validation), where the earlier one is in the same turn or succeeded in an
    earlier turn. `repeat_calls` says what a repeat gets: "reuse" (default) does not run it and
    gives it the earlier call's outcome, with a note that it was already answered (so
    duplicates in a turn run once); "refuse" does not run it and answers with a
    `RepeatedCall` error; "run" runs it again. A tool declared `idempotent=False` has no
    repeats: each of its calls runs, whatever `repeat_calls` says. Records show repeats
    (`repeat_of`, `reused`); `usage.tool_runs` and `usage.repeated_calls` count them.

    `answer_on_repeat` (default True): once a turn holds a repeat of a call that succeeded,
    or a call that fails again with the error an equal call failed with, the next turn is held
    to the final answer alone (text, or the output type), after a user message asking for it:
    the model is going in circles, so the run ends with an answer rather than at
    `max_steps`. `tool_choice="required"` means at least one successful call: until a call
    has succeeded, every turn is held to tool calls (going in circles then changes nothing);
    after that a turn may call tools or answer. "auto" lets the model answer at any turn. A
    tool's name forces that tool: until a call of it has succeeded, every turn is held to calls
    of it alone (its grammar, no other tool's); then the run goes on as "auto".

    `output_validator`: a function (sync or async) given the final answer (the output type's
    value, or the text), returning the answer to keep (the one given, or another); where it
    raises `ModelRetry`, the answer is refused with its message and the model answers again,
    one correction against `max_retries`. A tool may raise `ModelRetry` too: the call is
    answered with its message, and counts against the tool's `max_retries`. `RunResult.retries`
    records each correction and the turn that fixed it.

    Approval: a call of a tool built with `requires_approval=True`, or one for which the
    agent's `requires_approval` predicate (given a `PendingCall`; asked once per call) is true,
    waits for a decision: the run stops before running it (the turn's other calls run) and its
    result lists it in `pending`. `run(message_history=result.messages, approvals={id:
    pending.approve()})` resumes: approved calls run with the arguments the person was shown,
    denied ones (`pending.deny(reason)`) are answered with the denial. A stored call that is not
    the one approved is refused (`ApprovalMismatch`), and so is a second resume of one call
    (`CallAlreadyResumed`); nothing runs then.

    The functions given to the agent beside its tools (`output_validator`, the
    `requires_approval` predicate, validators of the output type) are guarded: whatever one
    raises, but `ModelRetry` and a validation failure, ends the run with `CallbackFailed`
    (the messages kept, the original as `__cause__`), a `SystemExit` included; one that
    returns past the run's `timeout` is a `RunTimeout`.

    Traces: with `opentelemetry-api` installed, each run is traced (spans for the run, each
    model request and each tool call) through `tracer_provider`, or the global provider where
    it is None; without the package nothing is imported.

    Model settings: `temperature`, `top_p`, `seed` and `max_tokens`, or the same as a
    `model_settings` dict (which wins); `agent.run(..., model_settings=...)` overrides them for
    one run, key by key. A run may also bring `extra_tools`, keep to `allowed_tools` (names),
    set its own `tool_choice`, its own `usage_limits` (`UsageLimits`: requests, tool calls,
    tokens; `max_steps` and `token_budget` are the defaults) and a `validation_context` for the
    pydantic validators of tool arguments and the output (`info.context`).
    `with agent.override(runtime=..., model_settings=...)` swaps them for the runs a block starts
    (a test's double for the model, say), in its own task or thread only.

    `system_prompt`: a text, or a function (sync or async) of the run's `RunContext` returning
    one, called once per run; what it raises ends the run with `CallbackFailed`.

    `reasoning` (a `grammar.ReasoningSpan`): for thinking models, each turn may open with free
    reasoning between the span's open and close texts (`<think>…</think>`), within its
    `max_tokens` where the runtime decodes locally; the turn is what follows it. The
    reasoning is not kept in the conversation.

    `tool_prompt`: how the model is shown the tools and asked for calls. "json_list" (default)
    shows them through the runtime's chat template and adds a system note asking for every
    call a turn needs in one JSON list; the turn takes calls in the template's envelope, a
    ```json fence or bare, one call, a list, or a fence of calls one a line (the best mode
    measured on BFCL, see docs/agents.md); for a model whose template teaches a Python list of
    calls, the template's own form. "template" is the same without the note; small models then
    write one call where several are asked for. "python" lists the tools in the system message
    and asks for `[get_weather(city="Paris")]` for one call, `[get_weather(city="Paris"),
    add(a=1, b=2)]` for several, held to that list (`grammar.tool_calls(..., envelope="python")`).
    `tool_note` replaces the json_list note (`JSON_LIST_NOTE`) with your own wording; the turn
    grammar is the same.
    """

    # A class as `output_type` gives `Agent[that class]`; none gives `Agent[str]` (text answers);
    # a type expression that is no class (`int | None`, `Annotated[...]`) gives `Agent[Any]`.
    @overload
    def __init__(
        self,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        runtime: Runtime | None = None,
        *,
        system_prompt: str | SystemPrompt | None = None,
        output_type: type[OutputT] | None = None,
        max_steps: int = 8,
        max_tokens: int = 512,
        token_budget: int | None = None,
        timeout: float | None = None,
        tool_timeout: float | None = 60.0,
        max_retries: int = 2,
        max_calls_per_turn: int = 8,
        tool_choice: str = "auto",
        tool_prompt: ToolPrompt = "json_list",
        tool_note: str | None = None,
        repeat_calls: RepeatCalls = "reuse",
        answer_on_repeat: bool = True,
        reasoning: ReasoningSpan | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        model_settings: ModelSettings | None = None,
        output_validator: OutputValidator | None = None,
        requires_approval: ApprovalPredicate | None = None,
        tracer_provider: Any = None,
    ) -> None: ...

    @overload
    def __init__(
        self: Agent[Any],
        tools: Sequence[Tool | Callable[..., Any]] = (),
        runtime: Runtime | None = None,
        *,
        system_prompt: str | SystemPrompt | None = None,
        output_type: Any,
        max_steps: int = 8,
        max_tokens: int = 512,
        token_budget: int | None = None,
        timeout: float | None = None,
        tool_timeout: float | None = 60.0,
        max_retries: int = 2,
        max_calls_per_turn: int = 8,
        tool_choice: str = "auto",
        tool_prompt: ToolPrompt = "json_list",
        tool_note: str | None = None,
        repeat_calls: RepeatCalls = "reuse",
        answer_on_repeat: bool = True,
        reasoning: ReasoningSpan | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        model_settings: ModelSettings | None = None,
        output_validator: OutputValidator | None = None,
        requires_approval: ApprovalPredicate | None = None,
        tracer_provider: Any = None,
    ) -> None: ...

    def __init__(
        self,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        runtime: Runtime | None = None,
        *,
        system_prompt: str | SystemPrompt | None = None,
        output_type: Any = None,
        max_steps: int = 8,
        max_tokens: int = 512,
        token_budget: int | None = None,
        timeout: float | None = None,
        tool_timeout: float | None = 60.0,
        max_retries: int = 2,
        max_calls_per_turn: int = 8,
        tool_choice: str = "auto",
        tool_prompt: ToolPrompt = "json_list",
        tool_note: str | None = None,
        repeat_calls: RepeatCalls = "reuse",
        answer_on_repeat: bool = True,
        reasoning: ReasoningSpan | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        model_settings: ModelSettings | None = None,
        output_validator: OutputValidator | None = None,
        requires_approval: ApprovalPredicate | None = None,
        tracer_provider: Any = None,
    ) -> None:
        check_agent_settings(dict(max_steps=max_steps, max_calls_per_turn=max_calls_per_turn, max_retries=max_retries,
                                  token_budget=token_budget, timeout=timeout, tool_timeout=tool_timeout,
                                  answer_on_repeat=answer_on_repeat))
        check_generation_settings(max_tokens=max_tokens, temperature=temperature, seed=seed)
        with as_argument_error():
            checks.check_number("top_p", top_p, high=1.0, low_open=True)
        self.model_settings = ModelSettings(max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed)
        self.model_settings.update(check_model_settings(model_settings))
        check_runtime(runtime)
        if not callable(system_prompt):
            check_text("system_prompt", system_prompt)
        if reasoning is not None and not isinstance(reasoning, ReasoningSpan):
            raise InvalidArgument("reasoning", f"must be a grammar.ReasoningSpan or None, not {type(reasoning).__name__}")
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
            raise InvalidArgument("tools", f"must be a sequence of Tools or functions, not {type(tools).__name__}")
        self.tools: dict[str, Tool] = {}
        for i, item in enumerate(tools):
            check_tool_item(i, item)
            t = item if isinstance(item, Tool) else tool(item)
            if t.name in self.tools:
                raise InvalidArgument(f"tools[{i}]", f"two tools are named {t.name!r}; tool names must be unique")
            self.tools[t.name] = t
        self._runtime = runtime
        self.system_prompt = system_prompt
        self.output = OutputSpec(output_type) if output_type is not None else None
        self.max_steps = max_steps
        self.max_tokens = self.model_settings["max_tokens"]
        self.token_budget = token_budget
        self.timeout = timeout
        self.tool_timeout = tool_timeout
        self.max_retries = max_retries
        self.max_calls_per_turn = max_calls_per_turn
        self.tool_choice = check_tool_choice(tool_choice, self.tools)
        if tool_prompt not in TOOL_PROMPTS:
            raise InvalidArgument("tool_prompt", f"must be one of {', '.join(map(repr, TOOL_PROMPTS))}, got {tool_prompt!r}")
        self.tool_prompt = tool_prompt
        check_text("tool_note", tool_note)
        if tool_note is not None and not tool_note.strip():
            raise InvalidArgument("tool_note", "is empty: for no note, use tool_prompt='template'")
        if tool_note is not None and tool_prompt != "json_list":
            raise InvalidArgument("tool_note", f"is the note of tool_prompt='json_list'; tool_prompt={tool_prompt!r} adds none")
        self.tool_note = JSON_LIST_NOTE if tool_note is None else tool_note
        if repeat_calls not in REPEAT_CALLS:
            raise InvalidArgument("repeat_calls", f"must be one of {', '.join(map(repr, REPEAT_CALLS))}, got {repeat_calls!r}")
        self.repeat_calls = repeat_calls
        self.answer_on_repeat = answer_on_repeat
        self.reasoning = reasoning
        self.temperature = self.model_settings["temperature"]
        self.seed = self.model_settings["seed"]
        if output_validator is not None and not callable(output_validator):
            raise InvalidArgument("output_validator", f"must be a function, not {type(output_validator).__name__}")
        self.output_validator = output_validator
        if requires_approval is not None and not callable(requires_approval):
            raise InvalidArgument("requires_approval", f"must be a function, not {type(requires_approval).__name__}")
        self.requires_approval = requires_approval
        if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
            raise InvalidArgument("tracer_provider",
                                  f"must be an OpenTelemetry TracerProvider, not {type(tracer_provider).__name__}")
        self.tracer_provider = tracer_provider
        self._grammars = TurnGrammars(self.output, max_calls_per_turn, reasoning)
        self._override: contextvars.ContextVar[_Override] = contextvars.ContextVar("agentkit_override",
                                                                                 default=_NO_OVERRIDE)

    @property
    def runtime(self) -> Runtime:
        """The runtime a run started here would use: an `override`'s, else the agent's."""
        return self._override.get().runtime or self._own_runtime()

    def _own_runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = resolve_runtime(None)
        return self._runtime

    @contextlib.contextmanager
    def override(self, *, runtime: Runtime | None = None, model_settings: ModelSettings | None = None) -> Iterator[None]:
        """Within the block, runs of this agent use `runtime` (None: as they would) and
        `model_settings` over the agent's and each run's, key by key; restored after. An
        override holds in the task or thread that entered it (and the tasks it starts), not in
        others, so concurrent tests do not see each other's; an override inside another joins
        it (its runtime, its settings over the outer ones)."""
        check_runtime(runtime)
        outer = self._override.get()
        settings = ModelSettings(**{**outer.model_settings, **check_model_settings(model_settings)})
        token = self._override.set(_Override(runtime or outer.runtime, settings))
        try:
            yield
        finally:
            self._override.reset(token)

    def turn_grammar(self, envelope: Envelope, kind: TurnKind = "calls_or_answer") -> Grammar | None:
        """The grammar a model turn of this `kind` is held to, for a runtime whose template
        writes calls in `envelope` (built once per envelope).

        A call may be written in that envelope, in a ```json fence or bare, pretty-printed or
        not: tool models often answer in a form their template did not teach, and holding them
        to one they did not choose changes what they write."""
        return self._grammars.get(self.tools, call_envelopes(envelope), kind)

    def _preamble(self, kind: TurnKind, envelopes: tuple[Envelope, ...]) -> bool:
        return preamble(kind, envelopes, self.output is not None)

    def _turn_kind(self, state: RunState) -> TurnKind:
        """`tool_choice` and `answer_on_repeat` (see the class docstring)."""
        if self._needs_a_success(state):
            return "calls"
        return "answer" if state.must_answer else "calls_or_answer"

    def _needs_a_success(self, state: RunState) -> bool:
        """Whether turns are still held to calls: `tool_choice="required"` before any success,
        or a forced tool before a call of it succeeded."""
        choice = state.settings.tool_choice
        if choice == "auto":
            return False
        return not any(r.ok and (choice == "required" or r.call.name == choice) for r in state.records)

    def _turn_tools(self, state: RunState) -> dict[str, Tool]:
        """The tools a turn may call: the forced one alone while it is forced, else the run's."""
        choice, tools = state.settings.tool_choice, state.settings.tools
        if choice in tools and self._needs_a_success(state):
            return {choice: tools[choice]}
        return tools

    def _system_prompt(self, tools: dict[str, Tool] | None = None, own: str | None = None) -> str | None:
        """The system message's text: `own` (the run's system prompt), then what the tool
        prompt and the output type add."""
        tools = self.tools if tools is None else tools
        parts = [own] if own else []
        if self.tool_prompt == "python" and tools:
            parts.append(tool_instructions([t.to_openai() for t in tools.values()], "python"))
        if self.output is not None:
            lead = "When you have the final answer, give it as" if tools else "Give your answer as"
            parts.append(f"{lead} described here. {self.output.instructions()}")
        return "\n\n".join(parts) or None

    # --- running ------------------------------------------------------------------------------

    async def run(
        self,
        prompt: str | list[Message] | None = None,
        *,
        deps: Any = None,
        message_history: Sequence[Message] | None = None,
        model_settings: ModelSettings | None = None,
        extra_tools: Sequence[Tool | Callable[..., Any]] = (),
        allowed_tools: Collection[str] | None = None,
        tool_choice: str | None = None,
        approvals: Mapping[str, Approval] | None = None,
        usage_limits: UsageLimits | None = None,
        validation_context: Any = None,
    ) -> RunResult[OutputT]:
        """Run until a final answer. Raises a `RunError` subclass (carrying the messages so far)
        at a limit; a cancelled run raises `asyncio.CancelledError` with `.messages` added.

        `prompt`: the user's message (or a whole message list); `message_history`: the
        messages of an earlier run (`result.messages`) that this one continues, the prompt
        after them. For this run only: `model_settings` (over the agent's, key by key),
        `extra_tools` beside the agent's, `allowed_tools` (the names it may call, of both),
        and `tool_choice` ("auto", "required" or a tool's name; the agent's by default);
        `usage_limits` (a `UsageLimits`; a limit it leaves None is the agent's: `max_steps`
        requests, `token_budget` output tokens); `validation_context`, given to the pydantic
        validators of tool arguments and of the output as `info.context`.

        A run that reaches calls waiting for approval stops before running them: its result's
        `pending` lists them (`output` is None). Resume with `message_history=result.messages`,
        no prompt, and `approvals={call id: pending.approve() or pending.deny(reason)}` for each."""
        state = self._start(prompt, deps, message_history, model_settings, extra_tools, allowed_tools, tool_choice,
                            approvals, usage_limits, validation_context)
        try:
            async with contextlib.aclosing(self._events(state, stream=False)) as events:
                async for event in events:
                    if isinstance(event, FinalResult):
                        return event.result
        except asyncio.CancelledError as exc:
            exc.messages = list(state.messages)  # type: ignore[attr-defined]
            exc.usage = state.usage  # type: ignore[attr-defined]
            raise
        raise AssertionError("the run ended without a final result")

    def run_sync(
        self,
        prompt: str | list[Message] | None = None,
        *,
        deps: Any = None,
        message_history: Sequence[Message] | None = None,
        model_settings: ModelSettings | None = None,
        extra_tools: Sequence[Tool | Callable[..., Any]] = (),
        allowed_tools: Collection[str] | None = None,
        tool_choice: str | None = None,
        approvals: Mapping[str, Approval] | None = None,
        usage_limits: UsageLimits | None = None,
        validation_context: Any = None,
    ) -> RunResult[OutputT]:
        """`run` for code without an event loop: the same result or error, at the same time.

        A sync tool past its timeout gives `ToolTimeout` and the run goes on, but its thread
        cannot be stopped: it runs on in the background (a daemon thread, not waited for)
        until the function returns or the process exits."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return run_to_end(self.run(
                prompt, deps=deps, message_history=message_history, model_settings=model_settings,
                extra_tools=extra_tools, allowed_tools=allowed_tools, tool_choice=tool_choice, approvals=approvals,
            usage_limits=usage_limits, validation_context=validation_context,
            ))
        raise RuntimeError("run_sync was called inside a running event loop; use `await agent.run(...)`")

    async def run_stream(
        self,
        prompt: str | list[Message] | None = None,
        *,
        deps: Any = None,
        message_history: Sequence[Message] | None = None,
        model_settings: ModelSettings | None = None,
        extra_tools: Sequence[Tool | Callable[..., Any]] = (),
        allowed_tools: Collection[str] | None = None,
        tool_choice: str | None = None,
        approvals: Mapping[str, Approval] | None = None,
        usage_limits: UsageLimits | None = None,
        validation_context: Any = None,
    ) -> AsyncIterator[Event]:
        """The run as events: `TextDelta` pieces of each turn, `ToolCallEvent`,
        `ToolResultEvent`, then one `FinalResult`; with an `output_type`, `PartialOutput`s of
        the answer as it is written (the last one `complete`, the validated output). Arguments
        as for `run`."""
        state = self._start(prompt, deps, message_history, model_settings, extra_tools, allowed_tools, tool_choice,
                            approvals, usage_limits, validation_context)
        try:
            async with contextlib.aclosing(self._events(state, stream=True)) as events:
                async for event in events:
                    yield event
        except asyncio.CancelledError as exc:
            exc.messages = list(state.messages)  # type: ignore[attr-defined]
            exc.usage = state.usage  # type: ignore[attr-defined]
            raise

    def run_stream_sync(
        self,
        prompt: str | list[Message] | None = None,
        *,
        deps: Any = None,
        message_history: Sequence[Message] | None = None,
        model_settings: ModelSettings | None = None,
        extra_tools: Sequence[Tool | Callable[..., Any]] = (),
        allowed_tools: Collection[str] | None = None,
        tool_choice: str | None = None,
        approvals: Mapping[str, Approval] | None = None,
        usage_limits: UsageLimits | None = None,
        validation_context: Any = None,
    ) -> Iterator[Event]:
        """`run_stream` for code without an event loop: a plain iterator of the same events
        (leaving it early stops the run)."""
        return iterate_to_end(lambda: self.run_stream(
            prompt, deps=deps, message_history=message_history, model_settings=model_settings,
            extra_tools=extra_tools, allowed_tools=allowed_tools, tool_choice=tool_choice, approvals=approvals,
            usage_limits=usage_limits, validation_context=validation_context,
        ), "run_stream")

    def _start(
        self,
        prompt: str | list[Message] | None,
        deps: Any,
        history: Sequence[Message] | None,
        model_settings: ModelSettings | None,
        extra_tools: Sequence[Tool | Callable[..., Any]],
        allowed_tools: Collection[str] | None,
        tool_choice: str | None,
        approvals: Mapping[str, Approval] | None,
        usage_limits: UsageLimits | None,
        validation_context: Any,
    ) -> RunState:
        override = self._override.get()
        limits = RunLimits.of(usage_limits, max_steps=self.max_steps, token_budget=self.token_budget)
        tools = run_tools(self.tools, extra_tools, allowed_tools)
        # The agent's own tool_choice may not fit a run's tools: the run's tools are then to blame.
        choice = check_tool_choice(self.tool_choice if tool_choice is None else tool_choice, tools,
                                   "tool_choice" if tool_choice is not None else "allowed_tools")
        model = ModelSettings(**{**self.model_settings, **check_model_settings(model_settings), **override.model_settings})
        settings = RunSettings(tools, choice, model)
        deadline = None
        if self.timeout is not None:
            deadline = asyncio.get_running_loop().time() + self.timeout
        waiting = waiting_calls(history, tools) if isinstance(history, (list, tuple)) else []
        if waiting and prompt is not None:
            raise InvalidArgument("prompt", f"the history ends with calls awaiting approval "
                                            f"({', '.join(c.id for c in waiting)}): resume with approvals and no prompt")
        decided = check_approvals(approvals, waiting)
        for call in waiting:
            if call.name not in tools:
                raise InvalidArgument("message_history", f"call {call.id} names {call.name!r}, none of the run's tools")
        if callable(self.system_prompt):  # made per run, it joins the messages as the run begins (`_instruct`)
            messages = initial_messages(conversation(prompt, history), None)
        else:
            messages = initial_messages(conversation(prompt, history), self._system_prompt(tools, self.system_prompt))
        state = RunState(messages, deps, deadline, CallLedger(self.repeat_calls), settings, limits,
                         timeout=self.timeout, validation_context=validation_context,
                         runtime=override.runtime or self._runtime)
        state.trace = RunTrace(state.runtime.name if state.runtime is not None else "default", {
            "agentkit.tools": list(tools) or None,
            "agentkit.tool_choice": choice,
            "agentkit.output_type": self.output.label if self.output is not None else None,
            "agentkit.resumed_calls": len(waiting) or None,
        }, self.tracer_provider)
        state.resumed, state.approvals = waiting, decided
        state.earlier_turns = sum(m.get("role") == "assistant" for m in messages)
        RESUMED.claim(waiting)  # last: a resume refused above may be tried again
        return state

    def _envelope(self, runtime: Runtime) -> Envelope:
        """How this agent's model writes calls: as the runtime's template teaches, or the
        Python list the system prompt asks for (`tool_prompt="python"`)."""
        return "python" if self.tool_prompt == "python" else runtime.tool_call_envelope

    async def _events(self, state: RunState, *, stream: bool) -> AsyncIterator[Event]:
        """The run's events, inside its trace's run span (ended however the run ends)."""
        error: BaseException | None = None
        try:
            async with contextlib.aclosing(self._turns(state, stream=stream)) as events:
                async for event in events:
                    yield event
        except (Exception, asyncio.CancelledError) as exc:
            error = exc
            raise
        finally:
            state.trace.end(steps=state.step, usage=state.usage, error=error, pending=len(state.pending))

    async def _instruct(self, state: RunState) -> None:
        """A system prompt made per run: called with the run's context, its text leading the
        messages; what it raises, or a result that is no text, ends the run (`CallbackFailed`)."""
        if not callable(self.system_prompt):
            return
        context: RunContext[Any] = RunContext(deps=state.deps, messages=tuple(state.messages), usage=state.usage)
        text = await state.callback("system_prompt", self.system_prompt, context)
        text = await state.callback("system_prompt", _prompt_text, text)
        state.messages = initial_messages(state.messages, self._system_prompt(state.settings.tools, text))

    async def _turns(self, state: RunState, *, stream: bool) -> AsyncIterator[Event]:
        await self._instruct(state)
        with state.model_errors("the default runtime"):
            runtime = state.runtime or self._own_runtime()
        # With the python tool prompt the system message lists the tools; the template does not.
        tools = state.settings.tools
        tools_json = None if self.tool_prompt == "python" else [t.to_openai() for t in tools.values()] or None
        envelopes = call_envelopes(self._envelope(runtime))
        async for event in self._resume(state):
            yield event
        while True:
            kind = self._turn_kind(state)
            state.limits.before_request(state.step, state.context())
            state.step += 1
            budget = self._turn_budget(state)
            with state.model_errors(runtime.name):  # a runtime that cannot close a turn gets one that fits
                g = self._grammars.get(self._turn_tools(state), envelopes, kind,
                                       None if getattr(runtime, "steers_budget", True) else budget)
            options = dict(grammar=g, max_tokens=budget, tools=tools_json, **state.settings.generation_options())
            request = state.trace.model_request(runtime, state.step, options)
            generation = None
            try:
                async for event in self._request(state, runtime, options, stream):
                    if isinstance(event, Generation):
                        generation = event
                    else:
                        yield event
            except BaseException as exc:
                state.trace.end_model_request(request, None, exc if not isinstance(exc, GeneratorExit) else None)
                raise
            state.trace.end_model_request(request, generation)
            assert generation is not None
            try:
                turn = self._read(state, runtime, generation, budget, g, kind)
            except UnreadableTurn as exc:
                self._refuse_unreadable_turn(state, generation.text, exc.reason)
                continue
            state.fixed("turn")
            if turn.kind in ("text", "output"):
                output = await self._accept_output(state, turn)
                if output is not _RETRY:
                    if stream and self.output is not None:
                        yield PartialOutput(state.step, output, complete=True)
                    yield FinalResult(self._result(state, output))
                    return
                continue
            state.messages.append(assistant_message(turn))
            if generation.token_scores is not None:
                scored = call_argument_confidences(generation, turn.calls)
                if scored is not None:
                    state.confidence.update((call.id, fields) for call, fields in zip(turn.calls, scored))
            for call in turn.calls:
                yield ToolCallEvent(state.step, call)
            checked = [validated(c, state) for c in turn.calls]
            held = [c for c in checked if isinstance(c, ValidCall) and await self._waits(state, c)]
            pending = [pending_call(c, state.confidence.get(c.call.id), state.validation_context) for c in held]
            if pending:  # stored as they will run, and marked: the decision to hold them is kept
                state.messages[-1] = held_turn(state.messages[-1], pending)
            async for event in self._answer_calls(state, [c for c in checked if not any(c is h for h in held)],
                                                  pausing=bool(held)):
                yield event
            if held:  # the run stops here, before those calls run; `run(approvals=...)` resumes it
                state.pending = pending
                yield FinalResult(self._result(state, None))
                return

    async def _waits(self, state: RunState, valid: ValidCall) -> bool:
        """Whether a valid call waits for approval: its tool says so, or the agent's predicate
        does (asked here, once: the decision is stored with the call)."""
        if valid.tool.requires_approval:
            return True
        if self.requires_approval is None:
            return False
        verdict = await state.callback("requires_approval", self.requires_approval,
                                       pending_call(valid, state.confidence.get(valid.call.id), state.validation_context))
        return bool(await state.callback("requires_approval", bool, verdict))  # a truth value may raise too

    async def _answer_calls(self, state: RunState, items: list[ValidCall | ToolCallRecord], *,
                            pausing: bool = False) -> AsyncIterator[Event]:
        """Run a turn's calls (records given stand), answer each in a tool message, and count
        repeats and corrections. Where the run then stops for approval (`pausing`), no message
        may follow the tool messages: the turn's waiting calls are those no tool message answers."""
        if not items:
            return
        records = await state.within(run_calls(state, items, self.tool_timeout))
        records = [dataclasses.replace(r, confidence=state.confidence.pop(r.call.id))
                   if r.call.id in state.confidence else r for r in records]
        folded = state.ledger.folded(records)
        if folded:  # a call written again in its turn is answered once: it leaves the stored calls
            _drop_stored_calls(state.messages, folded)
        for record in records:
            if record.call.id not in folded:
                state.messages.append(tool_message(record.call, tool_feedback(record)))
            state.records.append(record)
            yield ToolResultEvent(state.step, record)
        state.usage = state.usage + RunUsage(repeated_calls=sum(r.repeat_of is not None for r in records))
        if (self.answer_on_repeat and not pausing and not state.must_answer and not self._needs_a_success(state)
                and state.ledger.goes_in_circles(records)):
            state.must_answer = True
            state.messages.append({"role": "user", "content": ANSWER_NOW})
        count_failures(state, records, self.max_retries)

    async def _resume(self, state: RunState) -> AsyncIterator[Event]:
        """The calls a paused run left waiting, decided: approved ones run with their stored
        arguments (those the person was shown), denied ones are answered with the denial
        (`CallDenied`)."""
        items: list[ValidCall | ToolCallRecord] = []
        for call in state.resumed:
            checked = validated(call, state)
            decision = state.approvals[call.id]
            if decision.approved or isinstance(checked, ToolCallRecord):
                items.append(checked)
            else:
                items.append(ToolCallRecord(call, checked.arguments, error=CallDenied(call.name, decision.reason)))
        async for event in self._answer_calls(state, items):
            yield event

    def _model_messages(self, state: RunState, runtime: Runtime) -> list[Message]:
        """The conversation as the model is sent it: with `tool_prompt="json_list"`, the list
        note joins the system message (sent, not kept in the conversation, so a history carries
        none of it into a run with another `tool_prompt`), except for a model whose template
        teaches a Python list of calls, which holds several calls already."""
        listed = self.tool_prompt == "json_list" and runtime.tool_call_envelope != "python"
        return for_model(state.messages, self.tool_note if listed and state.settings.tools else None)

    async def _request(self, state: RunState, runtime: Runtime, options: dict[str, Any],
                       stream: bool) -> AsyncIterator[Event | Generation]:
        """One model request: when streaming, its `TextDelta`s (and `PartialOutput`s of an
        answer); then the `Generation`."""
        if not stream:
            yield await state.within(runtime.generate(self._model_messages(state, runtime), **options), runtime.name)
            return
        with state.model_errors(runtime.name):
            pieces = runtime.stream(self._model_messages(state, runtime), **options)
        partials = PartialOutputs(state.step, self.reasoning, state.settings.tools) if self.output else None
        try:
            while True:
                try:
                    piece = await state.within(pieces.__anext__(), runtime.name)
                except StopAsyncIteration:
                    break
                yield TextDelta(state.step, piece)
                if partials is not None and (partial := partials.add(piece)) is not None:
                    yield partial
        finally:
            await pieces.aclose()
        assert pieces.generation is not None
        yield pieces.generation

    def _turn_budget(self, state: RunState) -> int:
        """A turn's `max_tokens`, held to the output tokens the run has left."""
        left = state.limits.output_left(state.usage, state.context())
        return state.settings.max_tokens if left is None else min(state.settings.max_tokens, left)

    def _refuse_unreadable_turn(self, state: RunState, text: str, reason: str) -> None:
        """A turn too deep or too long to parse goes back to the model, as a failed output
        does, until more than `max_retries` such turns."""
        state.messages.append({"role": "assistant", "content": text})
        count = state.retry("turn", "unreadable", f"the answer {reason}")
        if count > self.max_retries:
            raise UnreadableOutput(f"turn {state.step}: the model's answer {reason}", text=text, reason=reason,
                                   **state.context())
        logger.info("correction %d of %d asked for: the turn %s", count, self.max_retries, reason)
        state.messages.append({"role": "user", "content": f"That answer {reason}. Answer again, within those bounds."})

    def _read(self, state: RunState, runtime: Runtime, generation: Generation, budget: int, g: Grammar | None,
              kind: TurnKind) -> Turn:
        state.usage = state.usage + generation.usage
        if generation.finish_reason == "cancelled":
            raise asyncio.CancelledError("the runtime cancelled the generation")
        text = generation.text
        envelopes = call_envelopes(self._envelope(runtime))
        if budget_reached(generation):
            # Calls the model finished before the runtime began closing the turn still run.
            kept = None
            if generation.steered and g is not None:
                kept = model_written_calls(generation, g, envelopes, preamble=self._preamble(kind, envelopes),
                                           names=state.settings.tools.keys())
            if kept is None:
                raise IncompleteOutput(
                    f"turn {state.step} reached its token limit ({budget} tokens) before the model finished; "
                    "raise max_tokens",
                    text=generation.text,
                    **state.context(),
                )
            text = kept
        if self.reasoning is not None:  # the turn is what follows the model's reasoning
            text = self.reasoning.split(text)[1]
        state.limits.after_request(state.usage, state.context())
        if kind == "answer":  # its grammar admits no calls
            return Turn("output" if self.output is not None else "text", text)
        try:
            return parse_turn(
                text,
                envelope=envelopes,
                tool_names=set(state.settings.tools),
                step=state.step + state.earlier_turns,  # call ids stay unique in a continued conversation
                run=state.run_id,
                expect_output=self.output is not None,
                preamble=self._preamble(kind, envelopes),
            )
        except UnreadableTurn:
            raise
        except ValueError as exc:
            raise UnexpectedModelOutput(f"turn {state.step}: {exc}", text=generation.text, **state.context()) from exc

    async def _accept_output(self, state: RunState, turn: Turn) -> Any:
        """The final answer (text, or the output type's value), through the output validator;
        `_RETRY` where it was refused and the model asked again (counted as a correction)."""
        state.messages.append(assistant_message(turn))
        try:
            value = turn.text
            if self.output is not None:  # its type's own validators are the user's code too
                validate = functools.partial(self.output.validate, validation_context=state.validation_context)
                value = await state.callback("output_type", validate, turn.text, passes=(OutputValidationError,))
            if self.output_validator is not None:
                value = await state.callback("output_validator", self.output_validator, value,
                                             passes=(OutputValidationError, ModelRetry))
        except (OutputValidationError, ModelRetry) as exc:
            violations, kind, told = correction(exc)
        else:
            state.fixed("output")
            return value
        count = state.retry("output", kind, told)
        if count > self.max_retries:
            error = OutputRetriesExceeded(violations, turn.text, **state.context())
            error.retries = list(state.retries)
            raise error from None
        logger.info("correction %d of %d asked for: %s", count, self.max_retries, log_text(told))
        state.messages.append({"role": "user", "content": told})
        return _RETRY

    def _result(self, state: RunState, output: Any) -> RunResult[OutputT]:
        return RunResult(output, list(state.messages), state.usage, list(state.records), state.step, list(state.retries),
                         list(state.pending))


_RETRY = object()


def _prompt_text(value: Any) -> str | None:
    """What a system prompt function returned, as the prompt's text (None or "": none)."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"the system prompt function returned a {type(value).__name__}, not a string")
    check_text("system_prompt", value)
    return value


def _drop_stored_calls(messages: list[Message], ids: set[str]) -> None:
    """The last assistant message without the calls `ids` in its `tool_calls` (a new dict:
    the history a run was given is not changed)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant":
            kept = [c for c in messages[i].get("tool_calls") or () if c.get("id") not in ids]
            messages[i] = {**messages[i], "tool_calls": kept}
            return

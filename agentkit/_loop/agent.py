"""`Agent`: the async loop's face. Each model turn is constrained to valid tool calls (or free
text, or the typed final output); calls are validated into the tools' typed arguments and run,
and their results or errors go back to the model, until a final answer or a limit. The agent
checks its settings and starts each run's state; `turn_loop` runs its turns."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, overload

from typing_extensions import TypeVar

from grammar import Grammar, ReasoningSpan
from runtimes import Runtime, checks, tool_instructions

from .approvals import RESUMED, Approval, ApprovalPredicate, check_approvals, waiting_calls
from .._errors import InvalidArgument
from .._outputs.events import Event, FinalResult, RunResult
from .._context import RunContext
from .._inputs import (
    as_argument_error,
    check_agent_settings,
    check_generation_settings,
    check_runtime,
    check_text,
    check_tool_item,
)
from .._messages import Envelope, Message, call_envelopes, conversation, initial_messages
from .._outputs.grounding import GroundedMode, check_mode
from .._outputs.output import OutputSpec, OutputValidator
from .limits import RunLimits, UsageLimits
from .repeats import REPEAT_CALLS, CallLedger, RepeatCalls
from .routing import ToolRouting
from .settings import (
    ModelSettings,
    RunSettings,
    check_model_settings,
    check_tool_choice,
    run_tools,
)
from .._runtime import resolve_runtime
from .state import RunState
from .._sync import iterate_to_end, run_to_end
from .tracing import RunTrace
from .._tools.tool import Tool, tool
from .turn_loop import TurnLoop
from .turns import TurnGrammars, TurnKind

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
    to the final answer alone (text, or the output type), asked with the results as context
    (the run's request again, after one question answered so; a run resumed from a history
    with no request of its own, after a note asking for it): the model is going in circles,
    so the run ends with an answer rather than at `max_steps`.

    `tool_choice="required"` means at least one successful call: until a call has succeeded,
    every turn is held to tool calls (going in circles then changes nothing); after that a
    turn may call tools or answer. "auto" lets the model answer at any turn. A tool's name
    forces that tool: until a call of it has succeeded, every turn is held to calls of it
    alone (its grammar, no other tool's); then the run goes on as "auto".

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

    `grounded_arguments`: which tool arguments each turn holds to the conversation's text (the
    system prompt, the user's messages, the tool results so far; not the tool listing, so a
    docstring's example never becomes a call's value): a string to a span of it, a number to
    one it writes. "auto" (default): required numbers, and required strings but date-times,
    durations, enums and composed text (a description, a reason, a note), as extractions
    choose; True: every plain string and number; False: only those a tool marks
    (`Annotated[float, Grounded()]`), for a value the user does not write as the tool wants it
    ("USD" for "dollars", "umbrella" for "umbrellas"). A tool's own marks win
    (`Grounded(False)` keeps an argument free). A tool with a required held argument the
    conversation holds no value for is not offered that turn, so a conversion waits for the
    temperature it converts; where no tool is left and a call is required, the turn is held
    to the plain arguments, and says so (an INFO record on the "agentkit" logger). In process
    only: a runtime that decodes on a server is sent the plain grammar. A run may set its own
    in `model_settings`.

    `grounded_answers`: which text answers write only the numbers the conversation holds (a
    number being a run of digits with the points and commas between them, as the system
    prompt, the user's messages or the tool results write it, or in its other grouping:
    1204557 as "1,204,557"; `grammar.free_text(numbers=...)`), once the run has called a tool.
    "auto" (default): an answer asked with the calls' results as context: a routed run's (see
    `tool_routing`), and one asked after the run went in circles (`answer_on_repeat`); SmolLM2-
    135M, restating a result, wrote 1.8581 for 0.8581 and numbers no tool gave. True: also the
    answer a run resumed from a history is asked for by a note. False: none. A turn that may
    still call or answer is not held. A derived number (a sum, a difference) the conversation
    does not hold cannot be written where an answer is held. A run may set its own in
    `model_settings`.

    `tool_routing`: how a run's first call is decided where the model never starts one by
    itself. "auto" (default): for a model whose chat template takes no tools (one never
    trained to call them, as the default SmolLM2-135M) on a runtime that can score a text
    (`Runtime.score`: the local ones), under `tool_choice="auto"`, the run's first turn calls
    the tool after whose description the model finds the request likeliest, where it stands
    out from the other tools enough (6.4 nats of evidence, see docs/agents.md), or answers
    without a call where none does; the model writes the call's arguments (held to the
    conversation as under "auto") and then the answer, asked with the call's result as
    context. Where that call fails, the next tool within 5 nats of the best is called once
    instead, asked as the first was. Under a forced call (`tool_choice="required"` or a
    tool's name) the call is the model's, but once one succeeds its answer is asked so too
    (such a model, shown its own calls, calls on until `max_steps`). For a model whose
    template takes tools (it calls by itself, and also for requests no tool fits), "auto"
    declines and narrows: where no tool reaches -1.0 nats of evidence the first turn answers
    without a call, with no tools listed; otherwise the model decides, its first turn offered
    only the tools within 5 nats of the best one's information (Qwen2.5-Coder-0.5B: 2 -> 5 of
    5 such requests answered without a call, the right first tool on 4 more of 18 that need
    one, and about 2 s a request on two cores). True: route on any runtime that can score;
    False: the model decides alone.
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
        grounded_arguments: GroundedMode = "auto",
        grounded_answers: GroundedMode = "auto",
        tool_routing: ToolRouting = "auto",
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
        grounded_arguments: GroundedMode = "auto",
        grounded_answers: GroundedMode = "auto",
        tool_routing: ToolRouting = "auto",
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
        grounded_arguments: GroundedMode = "auto",
        grounded_answers: GroundedMode = "auto",
        tool_routing: ToolRouting = "auto",
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
        check_mode(grounded_arguments, "grounded_arguments")
        self.grounded_arguments = grounded_arguments
        check_mode(grounded_answers, "grounded_answers")
        self.grounded_answers = grounded_answers
        if not (tool_routing == "auto" or isinstance(tool_routing, bool)):
            raise InvalidArgument("tool_routing", f"must be 'auto', True or False, got {tool_routing!r}")
        self.tool_routing: ToolRouting = tool_routing
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

    def _system_prompt(self, tools: dict[str, Tool] | None = None, own: str | None = None) -> str | None:
        """The system message's text: `own` (the run's system prompt), then what the tool
        prompt and the output type add."""
        parts = [own] if own else []
        return "\n\n".join(parts + self._instructions(self.tools if tools is None else tools)) or None

    def _instructions(self, tools: dict[str, Tool]) -> list[str]:
        """What the agent adds to the system message: the tools listed (`tool_prompt="python"`)
        and how to give the output type. Grounded arguments are not held to them."""
        parts = []
        if self.tool_prompt == "python" and tools:
            parts.append(tool_instructions([t.to_openai() for t in tools.values()], "python"))
        if self.output is not None:
            lead = "When you have the final answer, give it as" if tools else "Give your answer as"
            parts.append(f"{lead} described here. {self.output.instructions()}")
        return parts

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
            async with contextlib.aclosing(TurnLoop(self).events(state, stream=False)) as events:
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
            async with contextlib.aclosing(TurnLoop(self).events(state, stream=True)) as events:
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

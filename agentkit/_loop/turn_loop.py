"""The turn loop of a run: each model turn held to its grammar, read, its calls validated, run
(or held for approval) and answered, until a final answer or a limit. `Agent` configures a run
and hands it here; the loop reads the agent's settings as the run goes."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from grammar import Grammar, numbers_in
from runtimes import Generation, Runtime

from .approvals import held_turn, pending_call
from .._bounds import UnreadableTurn
from .._outputs.confidence import call_argument_confidences
from .calls import count_failures, run_calls, tool_feedback, validated
from .conversation import conversation_text
from .._errors import (
    CallDenied,
    IncompleteOutput,
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
from .._inputs import check_text
from .._messages import (
    Envelope,
    Message,
    ToolCall,
    Turn,
    assistant_message,
    call_envelopes,
    for_model,
    initial_messages,
    parse_turn,
    tool_message,
)
from .._outputs.partial import PartialOutputs
from .._outputs.output import correction
from .repeats import ANSWER_NOW, ValidCall
from .._runtime import budget_reached, model_written_calls
from .state import RunState
from .._tools.tool import Tool
from .results import calling_messages, routed_answer_messages
from .routing import DECLINE_THRESHOLD, Route, declines, fallback, plausible, route, routes
from .turns import GroundedTurn, TurnKind, preamble

if TYPE_CHECKING:
    from .agent import Agent

logger = logging.getLogger("agentkit")


class TurnLoop:
    """One agent's runs, turn by turn: `events(state)` yields a run's events up to its
    `FinalResult`. It keeps nothing of its own between runs; what holds a run is its `RunState`."""

    def __init__(self, agent: Agent[Any]):
        self.agent = agent

    def _preamble(self, kind: TurnKind, envelopes: tuple[Envelope, ...]) -> bool:
        return preamble(kind, envelopes, self.agent.output is not None)

    def _turn_kind(self, state: RunState, route: Route | None = None) -> TurnKind:
        """`tool_choice` and `answer_on_repeat` (see `Agent`'s docstring); a routed turn calls
        the tool routing chose, or answers where it chose none."""
        if route is not None:
            return "calls" if route.tool is not None else "answer"
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

    def _turn_grammar(self, state: RunState, runtime: Runtime, envelopes: tuple[Envelope, ...], kind: TurnKind,
                      budget: int, route: Route | None = None,
                      offered: frozenset[str] | None = None) -> GroundedTurn:
        """The grammar this turn is held to, and the kind it holds it to. A runtime that cannot
        close a turn itself gets one that fits its budget; one that decodes in process gets the
        tools' chosen arguments held to the conversation (`grounded_arguments`). A typed answer
        is held to the form of JSON the runtime's model was shown (`OutputSpec.form_for`)."""
        grammars, tools = self.agent._grammars, self._turn_tools(state, route, offered)
        output = self.agent.output
        answer = output.grammar_in(output.form_for(runtime)) if output is not None else None
        calls = 1 if route is not None else None  # routing chose one call
        if kind == "answer" and answer is None and self._holds_answer_numbers(state):
            max_bytes = None if getattr(runtime, "steers_budget", True) else budget
            return grammars.held_answer(envelopes, numbers_in(self._conversation_text(state)), max_bytes)
        if not getattr(runtime, "steers_budget", True):
            return GroundedTurn(grammars.get(tools, envelopes, kind, budget, answer, calls), kind)
        mode = state.settings.model.get("grounded_arguments", self.agent.grounded_arguments)
        if route is not None and mode is False:  # a routed model copies examples, or runs out of tokens
            mode = "auto"
        if not grammars.holds_arguments(tools, mode):
            return GroundedTurn(grammars.get(tools, envelopes, kind, answer=answer, max_calls=calls), kind)
        turn = grammars.grounded(tools, envelopes, kind, mode, self._conversation_text(state), answer, calls)
        if turn.ungrounded:
            state.ungrounded_turns.append(state.step)
            logger.info("turn %d: the conversation holds no value for a required argument of %s, and a call is "
                        "required: the turn's arguments are not held to the conversation", state.step,
                        ", ".join(turn.withheld))
        return turn

    def _conversation_text(self, state: RunState) -> str:
        """What a turn's held values come from: the system prompt, the user's messages and the
        tool results so far."""
        return conversation_text(state.shown(), self.agent._instructions(state.settings.tools))

    def _holds_answer_numbers(self, state: RunState) -> bool:
        """Whether an answer turn writes only the conversation's numbers (`grounded_answers`),
        once the run has called a tool (a failed call too: its answer invents no number
        either): an answer asked the routed way under "auto", any under True."""
        mode = state.settings.model.get("grounded_answers", self.agent.grounded_answers)
        if mode is False or not state.records:
            return False
        return mode is True or state.answers_routed

    def _turn_tools(self, state: RunState, route: Route | None = None,
                    offered: frozenset[str] | None = None) -> dict[str, Tool]:
        """The tools a turn may call: the routed or forced one alone, those routing left
        plausible (`offered`), else the run's."""
        choice, tools = state.settings.tool_choice, state.settings.tools
        if route is not None and route.tool is not None:
            return {route.tool: tools[route.tool]}
        if offered is not None:
            return {name: t for name, t in tools.items() if name in offered}
        if choice in tools and self._needs_a_success(state):
            return {choice: tools[choice]}
        return tools

    def _envelope(self, runtime: Runtime) -> Envelope:
        """How this agent's model writes calls: as the runtime's template teaches, or the
        Python list the system prompt asks for (`tool_prompt="python"`)."""
        return "python" if self.agent.tool_prompt == "python" else runtime.tool_call_envelope

    async def events(self, state: RunState, *, stream: bool) -> AsyncIterator[Event]:
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

    async def _route(self, state: RunState, runtime: Runtime) -> None:
        """Where the run's model never starts a call by itself (`tool_routing`), decide the
        first turn's call from the user's request (`routing`); where it calls by itself, only
        whether the first turn answers without a call (`routing.declines`) and, where it does
        not, which tools it may call (`routing.plausible`)."""
        if state.request_at is None:
            return
        mode, choice, tools = self.agent.tool_routing, state.settings.tool_choice, state.settings.tools
        request = state.messages[state.request_at]["content"]
        if routes(mode, runtime, choice, tools):
            state.route = await state.within(route(runtime, request, tools), runtime.name)
        elif declines(mode, runtime, choice, tools):
            found = await state.within(route(runtime, request, tools, DECLINE_THRESHOLD), runtime.name)
            if found.tool is None:
                state.route = found
            else:
                state.offered = plausible(found)

    async def _instruct(self, state: RunState) -> None:
        """A system prompt made per run: called with the run's context, its text leading the
        messages; what it raises, or a result that is no text, ends the run (`CallbackFailed`)."""
        if not callable(self.agent.system_prompt):
            return
        context: RunContext[Any] = RunContext(deps=state.deps, messages=tuple(state.messages), usage=state.usage)
        text = await state.callback("system_prompt", self.agent.system_prompt, context)
        text = await state.callback("system_prompt", _prompt_text, text)
        state.messages = initial_messages(state.messages, self.agent._system_prompt(state.settings.tools, text))

    async def _turns(self, state: RunState, *, stream: bool) -> AsyncIterator[Event]:
        await self._instruct(state)
        with state.model_errors("the default runtime"):
            runtime = state.runtime or self.agent._own_runtime()
        # With the python tool prompt the system message lists the tools; the template does not.
        tools = state.settings.tools
        tools_json = None if self.agent.tool_prompt == "python" else [t.to_openai() for t in tools.values()] or None
        envelopes = call_envelopes(self._envelope(runtime))
        async for event in self._resume(state):
            yield event
        last = state.messages[-1] if state.messages else None
        if not state.resumed and last is not None and last.get("role") == "user" and isinstance(last.get("content"), str):
            state.request_at = len(state.messages) - 1
        await self._route(state, runtime)
        while True:
            route, state.route = state.route, None
            offered, state.offered = state.offered, None
            kind = self._turn_kind(state, route)
            state.limits.before_request(state.step, state.context())
            state.step += 1
            budget = self._turn_budget(state)
            with state.model_errors(runtime.name):
                turn_grammar = self._turn_grammar(state, runtime, envelopes, kind, budget, route, offered)
            g, kind = turn_grammar.grammar, turn_grammar.kind
            declined = route is not None and route.tool is None  # no tool is listed to an answer routing chose
            listed = None if state.answers_routed or declined else tools_json
            options = dict(grammar=g, max_tokens=budget, tools=listed, **state.settings.generation_options())
            request = state.trace.model_request(runtime, state.step, options, withheld=turn_grammar.withheld,
                                                ungrounded=turn_grammar.ungrounded)
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
            state.shown_until = None  # a fallback turn's view of the conversation was for it alone
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
                    if stream and self.agent.output is not None:
                        yield PartialOutput(state.step, output, complete=True)
                    yield FinalResult(self._result(state, output))
                    return
                continue
            state.messages.append(assistant_message(turn))
            if route is not None:  # a model routed to its call answers from its result next
                _answer_routed(state)
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
            if route is not None and route.tool is not None and not held:
                self._fall_back(state, route, turn.calls)

    def _fall_back(self, state: RunState, route: Route, calls: tuple[ToolCall, ...]) -> None:
        """Where every call of the run's first routed turn failed, the next turn calls the next
        tool routing found plausible instead of answering (`routing.fallback`), asked as the
        first was: the failed call and its error are kept but not shown (shown, the model
        wrote the refused argument again: `get_price(product="does")`), nor held from."""
        ids = {c.id for c in calls}
        if state.request_at is None or any(r.ok for r in state.records) or len(state.records) != len(ids):
            return
        following = fallback(route, {c.name for c in calls})
        if following is not None:
            logger.info("turn %d: the routed call of %s failed; the next turn calls %s", state.step,
                        ", ".join(sorted({c.name for c in calls})), following.tool)
            state.route, state.must_answer, state.answers_routed = following, False, False
            state.shown_until = state.request_at + 1

    def _answers_as_routed(self, state: RunState) -> bool:
        """Whether the forced call (`tool_choice="required"` or a tool's name) has just
        succeeded on a model routing serves (`tool_routing`): its answer is then asked as a
        routed one is. Such a model, shown its own calls, calls on until `max_steps`."""
        return (not state.answers_routed and state.request_at is not None and state.settings.tool_choice != "auto"
                and not self._needs_a_success(state)
                and routes(self.agent.tool_routing, state.runtime or self.agent._own_runtime(), "auto",
                           state.settings.tools))

    async def _waits(self, state: RunState, valid: ValidCall) -> bool:
        """Whether a valid call waits for approval: its tool says so, or the agent's predicate
        does (asked here, once: the decision is stored with the call)."""
        if valid.tool.requires_approval:
            return True
        if self.agent.requires_approval is None:
            return False
        verdict = await state.callback("requires_approval", self.agent.requires_approval,
                                       pending_call(valid, state.confidence.get(valid.call.id), state.validation_context))
        return bool(await state.callback("requires_approval", bool, verdict))  # a truth value may raise too

    async def _answer_calls(self, state: RunState, items: list[ValidCall | ToolCallRecord], *,
                            pausing: bool = False) -> AsyncIterator[Event]:
        """Run a turn's calls (records given stand), answer each in a tool message, and count
        repeats and corrections. Where the run then stops for approval (`pausing`), no message
        may follow the tool messages: the turn's waiting calls are those no tool message answers."""
        if not items:
            return
        records = await state.within(run_calls(state, items, self.agent.tool_timeout))
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
        if not pausing and self._answers_as_routed(state):
            _answer_routed(state)
        if (self.agent.answer_on_repeat and not pausing and not state.must_answer and not self._needs_a_success(state)
                and state.ledger.goes_in_circles(records)):
            if state.request_at is not None:  # asked about the request, the results as context
                _answer_routed(state)
            else:
                state.must_answer = True
                state.messages.append({"role": "user", "content": ANSWER_NOW})
        count_failures(state, records, self.agent.max_retries)

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
        teaches a Python list of calls, which holds several calls already. A routed answer, and
        a model that calls by itself once a call succeeded, are sent the results as context
        (`results`)."""
        if state.answers_routed and state.request_at is not None:
            return routed_answer_messages(state.messages, state.request_at)
        listed = self.agent.tool_prompt == "json_list" and runtime.tool_call_envelope != "python"
        shown = state.shown()
        if state.request_at is not None and self._results_as_context(state, runtime):
            shown = calling_messages(state.messages, state.request_at)
        return for_model(shown, self.agent.tool_note if listed and state.settings.tools else None)

    @staticmethod
    def _results_as_context(state: RunState, runtime: Runtime) -> bool:
        """Whether a turn of a model that calls by itself (its template takes tools) is sent
        the run's results as context (`results.calling_messages`): once a call of the run
        succeeded, where the run shows the whole conversation."""
        return runtime.template_takes_tools is True and state.shown_until is None and any(r.ok for r in state.records)

    async def _request(self, state: RunState, runtime: Runtime, options: dict[str, Any],
                       stream: bool) -> AsyncIterator[Event | Generation]:
        """One model request: when streaming, its `TextDelta`s (and `PartialOutput`s of an
        answer); then the `Generation`."""
        if not stream:
            yield await state.within(runtime.generate(self._model_messages(state, runtime), **options), runtime.name)
            return
        with state.model_errors(runtime.name):
            pieces = runtime.stream(self._model_messages(state, runtime), **options)
        partials = PartialOutputs(state.step, self.agent.reasoning, state.settings.tools) if self.agent.output else None
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
        if count > self.agent.max_retries:
            raise UnreadableOutput(f"turn {state.step}: the model's answer {reason}", text=text, reason=reason,
                                   **state.context())
        logger.info("correction %d of %d asked for: the turn %s", count, self.agent.max_retries, reason)
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
        if self.agent.reasoning is not None:  # the turn is what follows the model's reasoning
            text = self.agent.reasoning.split(text)[1]
        state.limits.after_request(state.usage, state.context())
        if kind == "answer":  # its grammar admits no calls
            return Turn("output" if self.agent.output is not None else "text", text)
        try:
            return parse_turn(
                text,
                envelope=envelopes,
                tool_names=set(state.settings.tools),
                step=state.step + state.earlier_turns,  # call ids stay unique in a continued conversation
                run=state.run_id,
                expect_output=self.agent.output is not None,
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
            if self.agent.output is not None:  # its type's own validators are the user's code too
                validate = functools.partial(self.agent.output.validate, validation_context=state.validation_context)
                value = await state.callback("output_type", validate, turn.text, passes=(OutputValidationError,))
            if self.agent.output_validator is not None:
                value = await state.callback("output_validator", self.agent.output_validator, value,
                                             passes=(OutputValidationError, ModelRetry))
        except (OutputValidationError, ModelRetry) as exc:
            violations, kind, told = correction(exc)
        else:
            state.fixed("output")
            return value
        count = state.retry("output", kind, told)
        if count > self.agent.max_retries:
            error = OutputRetriesExceeded(violations, turn.text, **state.context())
            error.retries = list(state.retries)
            raise error from None
        logger.info("correction %d of %d asked for: %s", count, self.agent.max_retries, log_text(told))
        state.messages.append({"role": "user", "content": told})
        return _RETRY

    def _result(self, state: RunState, output: Any) -> RunResult[Any]:
        return RunResult(output, list(state.messages), state.usage, list(state.records), state.step, list(state.retries),
                         list(state.pending))

_RETRY = object()


def _answer_routed(state: RunState) -> None:
    """The next turn answers, asked about the run's request with the results as context
    (`results.routed_answer_messages`)."""
    state.must_answer = True
    state.answers_routed = True


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

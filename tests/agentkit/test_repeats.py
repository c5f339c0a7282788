"""Repeated tool calls: duplicates in a turn run once, a call already answered is answered from
its earlier result (or refused, or run again, as `repeat_calls` says), tools declared
`idempotent=False` always run, and a run ends with an answer after a repeat."""

from __future__ import annotations

import datetime
import decimal
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, PlainSerializer

from agentkit import Agent, RepeatedCall, RunUsage, StepLimitExceeded, Tool, ToolResultEvent, tool
from agentkit._loop.repeats import ANSWER_NOW
from runtimes.testing import ScriptedRuntime


def call(name: str, arguments: str) -> str:
    return f'{{"name":"{name}","arguments":{arguments}}}'


def weather_tool(runs: list[str], **options: Any) -> Tool:
    """A weather lookup that records each time it runs."""

    def get_weather(city: str, unit: str = "c") -> str:
        """The weather in a city.

        Args:
            city: City name.
            unit: "c" or "f".
        """
        runs.append(city)
        return f"12 degrees {unit} in {city}"

    return tool(get_weather, **options)


PARIS = call("get_weather", '{"city":"Paris"}')
PARIS_EXPLICIT = call("get_weather", '{"city":"Paris","unit":"c"}')  # equal once defaults are filled in
OSLO = call("get_weather", '{"city":"Oslo"}')


async def test_duplicates_in_one_turn_run_once() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS + "\n" + PARIS_EXPLICIT, "12 degrees."])
    result = await Agent([weather_tool(runs)], rt).run("Paris?")
    assert runs == ["Paris"]
    first, second = result.tool_calls
    assert (first.repeat_of, first.reused) == (None, False)
    assert (second.repeat_of, second.reused) == (first.call.id, True)
    assert second.result == first.result == "12 degrees c in Paris"
    assert second.call.id != first.call.id  # the repeat keeps its own call in the records
    tool_messages = [m for m in result.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [first.call.id]  # answered once (issue #65)
    assert [c["id"] for c in result.messages[1]["tool_calls"]] == [first.call.id]
    assert tool_messages[0]["content"] == "12 degrees c in Paris"
    assert isinstance(result.usage, RunUsage)
    assert (result.usage.tool_runs, result.usage.repeated_calls) == (1, 1)


async def test_a_call_answered_in_an_earlier_turn_is_not_run_again() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS, PARIS_EXPLICIT, PARIS, "12 degrees."])
    result = await Agent([weather_tool(runs)], rt, answer_on_repeat=False).run("Paris?")
    assert runs == ["Paris"]
    first = result.tool_calls[0].call.id
    assert [(r.repeat_of, r.reused) for r in result.tool_calls] == [(None, False), (first, True), (first, True)]
    assert all(r.result == "12 degrees c in Paris" for r in result.tool_calls)
    assert result.messages[4]["content"] == "(again) 12 degrees c in Paris"
    assert (result.usage.tool_runs, result.usage.repeated_calls) == (1, 2)


async def test_other_arguments_are_not_a_repeat() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS + "\n" + OSLO, "Both mild."])
    result = await Agent([weather_tool(runs)], rt).run("Paris and Oslo?")
    assert runs == ["Paris", "Oslo"]
    assert all(r.repeat_of is None for r in result.tool_calls)
    assert (result.usage.tool_runs, result.usage.repeated_calls) == (2, 0)


async def test_a_call_that_failed_runs_again() -> None:
    attempts: list[int] = []

    @tool
    def flaky(x: int) -> int:
        """Fails the first time."""
        attempts.append(x)
        if len(attempts) == 1:
            raise ConnectionError("try again")
        return x

    again = call("flaky", '{"x":1}')
    rt = ScriptedRuntime([again, again, again, "1."])
    result = await Agent([flaky], rt, grounded_arguments=False).run("go")
    assert attempts == [1, 1]  # the retry after the failure ran; the third call reused it
    failed, retried, repeated = result.tool_calls
    assert isinstance(failed.error, ConnectionError) and failed.repeat_of is None
    assert retried.result == 1 and retried.repeat_of is None
    assert (repeated.repeat_of, repeated.reused) == (retried.call.id, True)


async def test_repeat_calls_refuse_answers_a_repeat_with_an_error() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS + "\n" + PARIS, PARIS, "12 degrees."])
    result = await Agent([weather_tool(runs)], rt, repeat_calls="refuse", answer_on_repeat=False).run("Paris?")
    assert runs == ["Paris"]
    first, in_turn, next_turn = result.tool_calls
    assert first.ok
    for refused in (in_turn, next_turn):
        assert isinstance(refused.error, RepeatedCall) and refused.error.original == first.call.id
        assert (refused.repeat_of, refused.reused, refused.result) == (first.call.id, False, None)
    assert result.messages[3]["content"].startswith("Error: RepeatedCall: get_weather was already called")
    assert (result.usage.tool_runs, result.usage.repeated_calls) == (1, 2)


async def test_repeat_calls_run_runs_every_call_and_still_records_repeats() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS + "\n" + PARIS, PARIS, "12 degrees."])
    result = await Agent([weather_tool(runs)], rt, repeat_calls="run", answer_on_repeat=False).run("Paris?")
    assert runs == ["Paris"] * 3
    first = result.tool_calls[0].call.id
    assert [(r.repeat_of, r.reused, r.ok) for r in result.tool_calls] == [
        (None, False, True), (first, False, True), (first, False, True)
    ]
    assert all("Same result" not in m["content"] for m in result.messages if m["role"] == "tool")
    assert (result.usage.tool_runs, result.usage.repeated_calls) == (3, 2)


@pytest.mark.parametrize("policy", ["reuse", "refuse", "run"])
async def test_a_tool_that_is_not_idempotent_always_runs(policy: str) -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS + "\n" + PARIS, PARIS, "12 degrees."])
    result = await Agent([weather_tool(runs, idempotent=False)], rt, repeat_calls=policy).run("Paris?")
    assert runs == ["Paris"] * 3
    assert all(r.ok and r.repeat_of is None and not r.reused for r in result.tool_calls)
    assert (result.usage.tool_runs, result.usage.repeated_calls) == (3, 0)


def test_the_idempotent_flag() -> None:
    assert weather_tool([]).idempotent is True
    assert weather_tool([], idempotent=False).idempotent is False
    schema_tool = Tool.from_json_schema("ping", {"type": "object"}, lambda args: "pong", idempotent=False)
    assert schema_tool.idempotent is False


def test_an_unknown_repeat_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="repeat_calls"):
        Agent([weather_tool([])], ScriptedRuntime([]), repeat_calls="skip")  # type: ignore[arg-type]


async def test_events_show_reused_calls() -> None:
    rt = ScriptedRuntime([PARIS, PARIS, "12 degrees."])
    events = [e async for e in Agent([weather_tool([])], rt).run_stream("Paris?")]
    results = [e.record for e in events if isinstance(e, ToolResultEvent)]
    assert [r.reused for r in results] == [False, True]


# --- tool_choice="required" ------------------------------------------------------------------


async def test_required_answers_after_a_duplicate_in_the_first_turn() -> None:
    """The loop small models fall into: the same call twice per turn, turn after turn."""
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS + "\n" + PARIS, "It is 12 degrees in Paris."])
    result = await Agent([weather_tool(runs)], rt, tool_choice="required").run("Paris?")
    assert result.output == "It is 12 degrees in Paris." and result.steps == 2
    assert runs == ["Paris"]
    calls_only, answer_only = (r.grammar for r in rt.calls)
    assert calls_only.accepts(PARIS) and not calls_only.accepts("It is mild.")
    assert answer_only.accepts("It is mild.") and not answer_only.accepts(PARIS)
    assert not answer_only.accepts(" " + PARIS)


async def test_required_answers_after_a_repeat_across_turns() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS, OSLO, PARIS, "Paris 12, Oslo 12."])
    result = await Agent([weather_tool(runs)], rt, tool_choice="required").run("Paris and Oslo?")
    assert result.output == "Paris 12, Oslo 12." and result.steps == 4
    assert runs == ["Paris", "Oslo"]
    grammars = [r.grammar for r in rt.calls]
    assert not grammars[0].accepts("Mild.")  # nothing has succeeded yet: calls only
    assert grammars[1].accepts(OSLO) and grammars[1].accepts("Mild.")  # a new call is progress
    assert grammars[2].accepts(PARIS) and grammars[2].accepts("Mild.")
    assert not grammars[3].accepts(PARIS) and grammars[3].accepts("Mild.")  # after the repeat


async def test_auto_answers_after_a_repeat_too() -> None:
    """A model free to call or answer that asks again for what it holds is held to an answer."""
    runs: list[str] = []
    rt = ScriptedRuntime([PARIS, OSLO, PARIS, "Paris 12, Oslo 12."])
    result = await Agent([weather_tool(runs)], rt).run("Paris and Oslo?")
    assert result.output == "Paris 12, Oslo 12." and result.steps == 4
    assert runs == ["Paris", "Oslo"]
    grammars = [r.grammar for r in rt.calls]
    assert all(g.accepts(PARIS) and g.accepts("Mild.") for g in grammars[:3])
    assert not grammars[3].accepts(PARIS) and grammars[3].accepts("Mild.")
    asked = [m["content"] for m in rt.calls[3].messages if m["role"] == "user"][-1]
    assert asked == ('Context: get_weather(city="Paris") = 12 degrees c in Paris\n'
                     'get_weather(city="Oslo") = 12 degrees c in Oslo\nQuestion: Paris and Oslo?')
    assert ANSWER_NOW not in [m["content"] for m in result.messages]  # asked, not kept


async def test_a_run_resumed_without_a_request_is_asked_by_the_note() -> None:
    """A run whose history ends in tool results has no request of its own to ask again: going
    in circles, it gets the note asking for the answer."""
    rt = ScriptedRuntime([PARIS, PARIS, "Paris 12."])
    first = await Agent([weather_tool([])], ScriptedRuntime([PARIS, "Paris 12."])).run("Paris?")
    history = first.messages[:-1]  # the request, the call and its result: no answer yet
    result = await Agent([weather_tool([])], rt).run(message_history=history)
    assert result.output == "Paris 12." and result.usage.repeated_calls == 1
    assert [m["content"] for m in rt.calls[2].messages if m["role"] == "user"][-1] == ANSWER_NOW


async def test_a_call_that_fails_again_alike_is_answered_too() -> None:
    """Retrying what the tool said fails, with the same arguments and the same error, is a loop
    as well; a retry that fails otherwise (or succeeds) is not."""

    @tool
    def get_population(city: str) -> int:
        """Population of a known city."""
        raise KeyError(f"no population for {city!r}")

    kenya = call("get_population", '{"city":"Kenya"}')
    nairobi = call("get_population", '{"city":"Nairobi"}')
    rt = ScriptedRuntime([kenya, nairobi, kenya, "I could not find it."])
    result = await Agent([get_population], rt, grounded_arguments=False).run("How many live in Kenya's capital?")
    assert result.output == "I could not find it." and result.steps == 4
    grammars = [r.grammar for r in rt.calls]
    assert all(g.accepts(kenya) for g in grammars[:3]) and not grammars[3].accepts(kenya)


async def test_without_the_answer_turn_the_same_loop_hits_the_step_limit() -> None:
    """What the answer turn prevents: with `answer_on_repeat=False` a looping model is never
    forced to answer."""
    rt = ScriptedRuntime([PARIS + "\n" + PARIS] * 3)
    with pytest.raises(StepLimitExceeded):
        await Agent([weather_tool([])], rt, max_steps=3, answer_on_repeat=False).run("Paris?")
    assert all(r.grammar.accepts(PARIS) for r in rt.calls)


async def test_required_holds_to_calls_while_the_repeated_call_failed() -> None:
    @tool
    def broken(x: int) -> int:
        """Always fails."""
        raise ValueError("down")

    twice = call("broken", '{"x":1}') + "\n" + call("broken", '{"x":1}')
    rt = ScriptedRuntime([twice, twice, twice])
    with pytest.raises(StepLimitExceeded) as info:
        await Agent([broken], rt, tool_choice="required", max_steps=3).run("go")
    assert not any(r.grammar.accepts("Sorry.") for r in rt.calls)
    assert ANSWER_NOW not in [m["content"] for m in info.value.messages]  # no answer is asked for


class Forecast(BaseModel):
    city: str
    degrees: int


async def test_required_answer_turn_is_the_output_type() -> None:
    rt = ScriptedRuntime([PARIS, PARIS, '{"city":"Paris","degrees":12}'])
    agent = Agent([weather_tool([])], rt, tool_choice="required", output_type=Forecast)
    result = await agent.run("Paris?")
    assert result.output == Forecast(city="Paris", degrees=12) and result.steps == 3
    answer_only = rt.calls[2].grammar
    assert answer_only.accepts('{"city":"Oslo","degrees":3}') and not answer_only.accepts(PARIS)


async def test_the_text_answer_turn_admits_no_hermes_call() -> None:
    hermes_paris = "<tool_call>\n" + PARIS + "\n</tool_call>"
    rt = ScriptedRuntime([hermes_paris + "\n" + hermes_paris, "12 degrees {sunny}"], tool_call_envelope="hermes")
    result = await Agent([weather_tool([])], rt, tool_choice="required").run("Paris?")
    assert result.output == "12 degrees {sunny}"
    answer = rt.calls[1].grammar
    assert not any(answer.accepts(call) for call in (hermes_paris, PARIS, "```json\n" + PARIS + "\n```"))


async def test_a_call_in_a_fence_the_template_never_taught_runs_like_a_tagged_one() -> None:
    runs: list[str] = []
    pretty = '```json\n{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}\n```'
    rt = ScriptedRuntime([pretty, "12 degrees."], tool_call_envelope="hermes")
    result = await Agent([weather_tool(runs)], rt).run("Paris?")
    assert runs == ["Paris"] and result.output == "12 degrees."
    assert rt.calls[0].grammar.accepts("<tool_call>\n" + PARIS + "\n</tool_call>")


def _hidden(value: str) -> str:
    return "hidden"


UNLOCKED: list[str] = []  # each run of the unlock tools below


def _unlock_excluded(secret: str = Field(exclude=True)) -> str:
    """Unlock with a secret that serialisation leaves out."""
    UNLOCKED.append(secret)
    return f"opened with {secret}"


def _unlock_serialised(secret: Annotated[str, PlainSerializer(_hidden)]) -> str:
    """Unlock with a secret that serialises as one text whatever it is."""
    UNLOCKED.append(secret)
    return f"opened with {secret}"


@pytest.mark.parametrize("fn", [_unlock_excluded, _unlock_serialised], ids=["exclude", "plain_serializer"])
def test_calls_that_serialise_alike_but_differ_are_not_repeats(fn: Any) -> None:
    UNLOCKED.clear()
    first, second = call("unlock", '{"secret":"A"}'), call("unlock", '{"secret":"B"}')
    rt = ScriptedRuntime([first + "\n" + second + "\n" + first, "done"])
    result = Agent([tool(fn, name="unlock")], rt, grounded_arguments=False).run_sync("open")
    assert UNLOCKED == ["A", "B"]  # the third call repeats the first, and only it
    assert [r.result for r in result.tool_calls] == ["opened with A", "opened with B", "opened with A"]
    assert [r.repeat_of for r in result.tool_calls] == [None, None, result.tool_calls[0].call.id]


def test_equal_values_that_the_tool_sees_differently_are_not_repeats() -> None:
    runs: list[str] = []

    def schedule(at: datetime.datetime, amount: decimal.Decimal, ratio: float) -> str:
        """Schedule a payment."""
        runs.append(f"{at.isoformat()} {amount} {ratio}")
        return runs[-1]

    calls = [
        call("schedule", '{"at":"2026-01-01T12:00:00+00:00","amount":"1.0","ratio":0.0}'),
        call("schedule", '{"at":"2026-01-01T13:00:00+01:00","amount":"1.0","ratio":0.0}'),  # the same instant
        call("schedule", '{"at":"2026-01-01T12:00:00+00:00","amount":"1.00","ratio":0.0}'),  # an equal Decimal
        call("schedule", '{"at":"2026-01-01T12:00:00+00:00","amount":"1.0","ratio":-0.0}'),  # an equal float
    ]
    rt = ScriptedRuntime(["\n".join(calls), "done"])
    result = Agent([tool(schedule)], rt, max_calls_per_turn=4, grounded_arguments=False).run_sync("pay")
    assert len(runs) == 4 and all(r.repeat_of is None for r in result.tool_calls)


"""The agent loop with scripted and random test models: calls validated and run, results and
errors fed back, limits enforced, and no error that loses the messages so far."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel

from agentkit import (
    Agent,
    FinalResult,
    IncompleteOutput,
    ModelRequestFailed,
    OutputValidationError,
    RunContext,
    RunError,
    RunTimeout,
    StepLimitExceeded,
    TextDelta,
    TokenLimitExceeded,
    ToolArgumentsError,
    ToolCallEvent,
    ToolDefinitionError,
    ToolResultEvent,
    ToolRetriesExceeded,
    ToolTimeout,
    UsageLimitExceeded,
    tool,
)
from grammar import ReasoningSpan
from runtimes import Generation, Usage
from runtimes.testing import RandomRuntime, ScriptedRuntime


def call(name: str, arguments: str) -> str:
    return f'{{"name":"{name}","arguments":{arguments}}}'


@tool
def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """The weather in a city.

    Args:
        city: City name.
        days: Days ahead.
    """
    return {"city": city, "temp_c": 21, "days": days}


@tool
async def to_fahrenheit(celsius: float) -> float:
    """Convert Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


def _no_digits(value: str) -> str:
    if any(ch.isdigit() for ch in value):
        raise ValueError("must not contain digits")
    return value


@tool
def greet(name: Annotated[str, AfterValidator(_no_digits)]) -> str:
    """Greet someone by name."""
    return f"hello {name}"


async def test_calls_run_and_results_go_back_until_a_text_answer() -> None:
    answers = [call("get_weather", '{"city":"Oslo"}'), call("to_fahrenheit", '{"celsius":21}'), "It is 69.8 F."]
    rt = ScriptedRuntime(list(answers))
    result = await Agent([get_weather, to_fahrenheit], rt).run("Weather in Oslo, in F?")
    assert result.output == "It is 69.8 F."
    assert result.steps == 3
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert result.messages[2]["content"] == '{"city":"Oslo","temp_c":21,"days":1}'
    assert result.messages[4]["content"] == "69.8"
    first, second = result.tool_calls
    assert isinstance(first.arguments, get_weather.args_type) and first.arguments.city == "Oslo"
    assert second.result == 69.8
    assert result.usage.completion_tokens == sum(len(a.encode()) for a in answers)
    # the runtime was shown the tools and held to the turn grammar
    assert rt.calls[0].tools == [get_weather.to_openai(), to_fahrenheit.to_openai()]
    assert rt.calls[0].grammar is not None


def test_run_sync_and_continuing_a_conversation() -> None:
    rt = ScriptedRuntime(["Hi.", "Bye."])
    agent = Agent([get_weather], rt, system_prompt="Be brief.")
    first = agent.run_sync("Hello")
    assert first.messages[0] == {"role": "system", "content": "Be brief."}
    second = agent.run_sync(first.messages + [{"role": "user", "content": "Goodbye"}])
    assert second.output == "Bye."
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user", "assistant"]


async def test_hermes_envelope() -> None:
    text = "<tool_call>\n" + call("get_weather", '{"city":"Rome","days":2}') + "\n</tool_call>"
    rt = ScriptedRuntime([text, "Sunny."], tool_call_envelope="hermes")
    result = await Agent([get_weather], rt).run("Rome?")
    assert result.tool_calls[0].arguments.days == 2
    assert result.messages[1] == {"role": "assistant", "content": text, "tool_calls": [
        {"id": result.tool_calls[0].call.id, "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Rome", "days": 2}'}}
    ]}
    # the model is shown its turn as it wrote it, without the structured copy of its calls
    assert rt.calls[1].messages[2] == {"role": "assistant", "content": text}


async def test_the_default_tool_prompt_asks_for_a_list_of_calls_and_takes_one() -> None:
    """`tool_prompt="json_list"` (the default): the template shows the tools, the model is sent
    a note asking for every call in one JSON list (joined to the system message, kept out of
    the conversation), and a bare list of calls is the turn's calls."""
    from agentkit._loop.agent import JSON_LIST_NOTE

    listed = "[" + call("get_weather", '{"city":"Rome"}') + ", " + call("get_weather", '{"city":"Oslo"}') + "]"
    rt = ScriptedRuntime([listed, "Both sunny."])
    result = await Agent([get_weather], rt, system_prompt="Be brief.").run("Rome and Oslo?")
    assert [r.arguments.city for r in result.tool_calls] == ["Rome", "Oslo"]
    assert rt.calls[0].messages[0] == {"role": "system", "content": "Be brief.\n\n" + JSON_LIST_NOTE}
    assert rt.calls[0].tools is not None  # the chat template renders the tools
    assert result.messages[0] == {"role": "system", "content": "Be brief."}
    plain = ScriptedRuntime(["Hi."])
    await Agent([get_weather], plain, tool_prompt="template").run("Hello")
    assert [m["role"] for m in plain.calls[0].messages] == ["user"]
    bare = ScriptedRuntime(["Hi."])
    await Agent([], bare).run("Hello")  # no tools: no note
    assert [m["role"] for m in bare.calls[0].messages] == ["user"]
    pythonic = ScriptedRuntime(["Hi."], tool_call_envelope="python")
    await Agent([get_weather], pythonic).run("Hello")  # its template's own list holds several calls
    assert [m["role"] for m in pythonic.calls[0].messages] == ["user"]


async def test_a_tool_note_of_ones_own_replaces_the_list_note() -> None:
    """`tool_note=`: the json_list note in the user's words, sent as the default one is; it
    needs the json_list mode and some text."""
    from agentkit import JSON_LIST_NOTE

    note = "Answer with every call the request needs, in one JSON list."
    listed = "[" + call("get_weather", '{"city":"Rome"}') + "]"
    rt = ScriptedRuntime([listed, "Sunny."])
    result = await Agent([get_weather], rt, tool_note=note).run("Rome?")
    assert [r.arguments.city for r in result.tool_calls] == ["Rome"]
    assert rt.calls[0].messages[0] == {"role": "system", "content": note}
    assert all(JSON_LIST_NOTE not in str(m.get("content")) for c in rt.calls for m in c.messages)
    with pytest.raises(ValueError, match="tool_note.*template"):
        Agent([get_weather], rt, tool_note=" ")
    with pytest.raises(ValueError, match="tool_note.*python"):
        Agent([get_weather], rt, tool_prompt="python", tool_note=note)
    with pytest.raises(ValueError, match="tool_note"):
        Agent([get_weather], rt, tool_note=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("opening, closing", [("<tool_call>\n", "\n</tool_call>"), ("```json\n", "\n```")])
async def test_text_before_a_call_is_a_preamble_and_the_call_runs(opening: str, closing: str) -> None:
    """Tool models often say what they will do first; the call after it is a call, not part
    of a final answer."""
    text = "I will look up the weather in Rome.\n\n" + opening + call("get_weather", '{"city":"Rome"}') + closing
    rt = ScriptedRuntime([text, "Sunny."], tool_call_envelope="hermes")
    agent = Agent([get_weather], rt)
    result = await agent.run("Rome?")
    assert [r.arguments.city for r in result.tool_calls] == ["Rome"] and result.output == "Sunny."
    assert result.messages[1]["content"] == text
    assert [c["function"]["name"] for c in result.messages[1]["tool_calls"]] == ["get_weather"]
    assert agent.turn_grammar("hermes").accepts(text)
    assert not agent.turn_grammar("hermes").accepts("I will call <tool_call> now.")


async def test_a_required_call_begins_the_turn() -> None:
    """No preamble where a call is required: a small model would spend the budget on it."""
    agent = Agent([get_weather], ScriptedRuntime([]), tool_choice="required")
    g = agent.turn_grammar("hermes", "calls")
    assert g.accepts("<tool_call>\n" + call("get_weather", '{"city":"Rome"}') + "\n</tool_call>")
    assert not g.accepts("Checking.\n<tool_call>\n" + call("get_weather", '{"city":"Rome"}') + "\n</tool_call>")


async def test_no_preamble_beside_a_typed_output() -> None:
    class Answer(BaseModel):
        city: str

    agent = Agent([get_weather], ScriptedRuntime([]), output_type=Answer)
    assert not agent.turn_grammar("hermes").accepts("Checking.\n<tool_call>\n" + call("get_weather", '{"city":"R"}')
                                                     + "\n</tool_call>")


async def test_several_calls_in_one_turn_run_concurrently() -> None:
    both_started = asyncio.Event()
    started: list[str] = []

    async def wait_for_the_other(name: str) -> str:
        started.append(name)
        if len(started) == 2:
            both_started.set()
        await both_started.wait()  # only returns if the other call runs at the same time
        return name

    @tool(timeout=5)
    async def left() -> str:
        """Left."""
        return await wait_for_the_other("left")

    @tool(timeout=5)
    async def right() -> str:
        """Right."""
        return await wait_for_the_other("right")

    rt = ScriptedRuntime([call("left", "{}") + "\n" + call("right", "{}"), "done"])
    result = await Agent([left, right], rt).run("go")
    assert [r.result for r in result.tool_calls] == ["left", "right"]


async def test_a_tool_that_raises_is_reported_to_the_model() -> None:
    @tool
    def broken(x: int) -> int:
        """Always fails."""
        raise ValueError(f"cannot handle {x}")

    rt = ScriptedRuntime([call("broken", '{"x":3}'), "Sorry."])
    result = await Agent([broken], rt).run("try it with 3")
    assert result.output == "Sorry."
    [record] = result.tool_calls
    assert isinstance(record.error, ValueError)
    assert result.messages[2] == {
        "role": "tool", "tool_call_id": record.call.id, "name": "broken", "content": "Error: ValueError: cannot handle 3"
    }


async def test_a_tool_that_hangs_past_its_timeout_is_reported() -> None:
    @tool
    async def slow() -> str:
        """Never finishes."""
        await asyncio.sleep(3600)
        return "late"

    rt = ScriptedRuntime([call("slow", "{}"), "Gave up."])
    result = await Agent([slow], rt, tool_timeout=0.05).run("go")
    assert isinstance(result.tool_calls[0].error, ToolTimeout)
    assert "did not finish within" in result.messages[2]["content"]


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event a blocked sync tool waits on; set at teardown, so its thread ends."""
    event = threading.Event()
    yield event
    event.set()


def test_run_sync_returns_at_a_sync_tools_timeout(release: threading.Event) -> None:
    """The tool's thread cannot be stopped and runs on; `run_sync` still returns at the timeout
    with the same `ToolTimeout` that `run` reports."""

    @tool(timeout=0.2)
    def hang() -> str:
        """Blocks until released."""
        release.wait()
        return "late"

    agent = Agent([hang], ScriptedRuntime([call("hang", "{}"), "Gave up."]))
    outcome: dict[str, Any] = {}
    caller = threading.Thread(target=lambda: outcome.setdefault("result", agent.run_sync("go")), daemon=True)
    caller.start()
    caller.join(timeout=10)  # 50 times the tool's timeout: a guard, not a measurement
    assert not caller.is_alive(), "run_sync waited for the tool's thread instead of returning at its timeout"
    result = outcome["result"]
    assert isinstance(result.tool_calls[0].error, ToolTimeout)
    assert result.output == "Gave up."
    assert not release.is_set()  # the tool was still blocked when run_sync returned


async def test_invalid_arguments_are_fed_back_and_corrected() -> None:
    rt = ScriptedRuntime([call("greet", '{"name":"R2D2"}'), call("greet", '{"name":"Artoo"}'), "Done."])
    result = await Agent([greet], rt, grounded_arguments=False).run("greet R2D2")
    bad, good = result.tool_calls
    assert isinstance(bad.error, ToolArgumentsError)
    assert bad.error.violations[0].field == "name"
    assert "must not contain digits" in result.messages[2]["content"]
    assert good.result == "hello Artoo"


async def test_invalid_arguments_retries_are_bounded() -> None:
    bad = call("greet", '{"name":"R2D2"}')
    rt = ScriptedRuntime([bad, bad, bad, "never reached"])
    with pytest.raises(ToolRetriesExceeded) as info:
        await Agent([greet], rt, max_retries=2).run("greet R2D2")
    assert info.value.tool == "greet"
    roles = [m["role"] for m in info.value.messages]
    assert roles == ["user"] + ["assistant", "tool"] * 3
    assert rt.responses == ["never reached"]


class Opaque:
    """A class pydantic has no schema for."""


def test_an_unknown_type_is_refused_when_the_agent_is_built() -> None:
    def use(thing: Opaque) -> None:
        """Uses a thing."""

    with pytest.raises(ToolDefinitionError) as info:
        Agent([use], ScriptedRuntime([]))
    assert info.value.parameter == "thing"


async def test_hitting_the_token_limit_keeps_the_messages() -> None:
    rt = ScriptedRuntime([call("get_weather", '{"city":"Oslo"}'), "x" * 100])
    with pytest.raises(IncompleteOutput) as info:
        await Agent([get_weather], rt, max_tokens=60).run("weather in Oslo?")
    error = info.value
    assert isinstance(error, UsageLimitExceeded)
    assert [m["role"] for m in error.messages] == ["user", "assistant", "tool"]
    assert error.text == "x" * 60
    assert error.usage.completion_tokens > 0


async def test_calls_the_model_finished_before_a_steered_close_still_run() -> None:
    """A small model repeating a call until the budget runs out: the runtime closed the repeat
    early; the call written before it is intact and runs, the cut one is dropped."""
    whole = call("get_weather", '{"city":"Oslo","days":2}')
    text = whole + "\n" + call("get_weather", '{"city":"O"}')
    steered = Generation(text, "grammar_complete", Usage(10, 40), steered_from=len(whole) + 20)
    rt = ScriptedRuntime([steered, "Mild."])
    result = await Agent([get_weather], rt, max_tokens=40).run("Weather in Oslo?")
    assert [r.arguments.days for r in result.tool_calls] == [2]
    assert result.messages[1]["content"] == whole  # what ran is what the history says was written
    assert result.output == "Mild."


async def test_a_thinking_model_reasons_before_each_turn() -> None:
    """With a reasoning span the turn may open with `<think>…</think>`; the turn is what follows,
    and the reasoning stays out of the conversation."""
    span = ReasoningSpan(max_tokens=64)
    rt = ScriptedRuntime(["<think>I need the weather.</think>\n" + call("get_weather", '{"city":"Oslo"}'),
                          "<think>21 degrees.</think>\nIt is 21 degrees in Oslo."])
    agent = Agent([get_weather], rt, reasoning=span)
    result = await agent.run("Weather in Oslo?")
    assert result.output == "It is 21 degrees in Oslo." and result.tool_calls[0].arguments.city == "Oslo"
    assert all("<think>" not in str(m.get("content")) for m in result.messages)
    g = rt.calls[0].grammar
    assert g.reasoning == span and g.accepts("<think>x</think>Mild.") and g.accepts("<think></think>Mild.")
    assert not g.accepts("Mild.")  # the span opens every turn: else an unclosed one would read as text
    assert not g.accepts("<think>x") and not g.accepts("<think>x</think>")


async def test_calls_finished_after_reasoning_before_a_steered_close_still_run() -> None:
    whole = call("get_weather", '{"city":"Oslo","days":2}')
    text = "<think>Oslo.</think>" + whole + "\n" + call("get_weather", '{"city":"O"}')
    steered = Generation(text, "grammar_complete", Usage(10, 40), steered_from=len(text) - 10)
    rt = ScriptedRuntime([steered, "<think></think>Mild."])
    result = await Agent([get_weather], rt, max_tokens=40, reasoning=ReasoningSpan()).run("Weather in Oslo?")
    assert [r.arguments.days for r in result.tool_calls] == [2]
    assert result.messages[1]["content"] == whole


async def test_a_runtime_taught_python_calls_gets_them_parsed_and_run() -> None:
    """A pythonic template's model writes every call of a turn in one list; no preamble, no
    JSON fallback, since a list stands alone."""
    rt = ScriptedRuntime(['[get_weather(city="Oslo", days=2), to_fahrenheit(celsius=21)]', "Mild."],
                         tool_call_envelope="python")
    agent = Agent([get_weather, to_fahrenheit], rt)
    result = await agent.run("Weather in Oslo, and 21 °C in Fahrenheit?")
    assert [(r.call.name, r.result) for r in result.tool_calls] == [
        ("get_weather", {"city": "Oslo", "temp_c": 21, "days": 2}), ("to_fahrenheit", 69.8)]
    g = agent.turn_grammar("python")
    assert g.accepts('[get_weather(city="x")]') and g.accepts("Mild.")
    assert not g.accepts(call("get_weather", '{"city":"x"}'))


async def test_python_calls_finished_before_a_steered_close_still_run() -> None:
    whole = '[get_weather(city="Oslo", days=2)'
    text = whole + ', get_weather(city="O")]'
    steered = Generation(text, "grammar_complete", Usage(10, 40), steered_from=len(whole) + 14)
    rt = ScriptedRuntime([steered, "Mild."], tool_call_envelope="python")
    result = await Agent([get_weather], rt, max_tokens=40).run("Weather in Oslo?")
    assert [r.arguments.days for r in result.tool_calls] == [2]
    assert result.messages[1]["content"] == whole + "]"


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_random_models_writing_python_calls_end_in_a_result_or_a_typed_error(seed: int) -> None:
    agent = Agent([get_weather, to_fahrenheit], RandomRuntime(seed=seed, tool_call_envelope="python"),
                  max_steps=3, max_tokens=48)
    try:
        result = agent.run_sync("weather?")
    except RunError as error:
        assert error.messages[0] == {"role": "user", "content": "weather?"}
        return
    for record in result.tool_calls:
        assert isinstance(record.arguments, agent.tools[record.call.name].args_type)


async def test_a_steered_close_with_no_finished_call_is_incomplete() -> None:
    text = call("get_weather", '{"city":"O"}')
    rt = ScriptedRuntime([Generation(text, "grammar_complete", Usage(10, 20), steered_from=25)])
    with pytest.raises(IncompleteOutput) as caught:
        await Agent([get_weather], rt, max_tokens=20).run("Weather in Oslo?")
    assert caught.value.text == text and caught.value.messages[0]["role"] == "user"


async def test_the_run_token_budget() -> None:
    steps = [call("get_weather", f'{{"city":"{city}"}}') for city in ("Oslo", "Rome", "Lima")]
    step = steps[0]
    rt = ScriptedRuntime(steps)
    with pytest.raises(TokenLimitExceeded) as info:
        await Agent([get_weather], rt, token_budget=len(step) * 2 + 5).run("weather in Oslo, Rome and Lima?")
    assert len(info.value.messages) == 5
    assert rt.calls[-1].max_tokens == 5


async def test_the_step_limit() -> None:
    rt = ScriptedRuntime([call("get_weather", f'{{"city":"{city}"}}') for city in ("Oslo", "Rome", "Lima")])
    with pytest.raises(StepLimitExceeded) as info:
        await Agent([get_weather], rt, max_steps=3).run("weather in Oslo, Rome and Lima?")
    assert len(info.value.messages) == 1 + 3 * 2
    assert info.value.limit == "steps"


async def test_the_run_timeout_keeps_the_messages() -> None:
    @tool
    async def stuck() -> None:
        """Waits forever."""
        await asyncio.Event().wait()

    rt = ScriptedRuntime([call("stuck", "{}")])
    with pytest.raises(RunTimeout) as info:
        await Agent([stuck], rt, timeout=0.1, tool_timeout=None).run("go")
    assert [m["role"] for m in info.value.messages] == ["user", "assistant"]


async def test_a_cancelled_run_keeps_the_messages() -> None:
    entered = asyncio.Event()

    @tool
    async def block() -> None:
        """Blocks until cancelled."""
        entered.set()
        await asyncio.Event().wait()

    rt = ScriptedRuntime([call("block", "{}")])
    task = asyncio.create_task(Agent([block], rt, tool_timeout=None).run("go"))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    assert task.cancelled()
    assert [m["role"] for m in info.value.messages] == ["user", "assistant"]


class City(BaseModel):
    name: str
    population: Annotated[int, AfterValidator(lambda n: n if n > 0 else (_ for _ in ()).throw(ValueError("must be positive")))]


async def test_typed_output_after_tool_calls() -> None:
    rt = ScriptedRuntime([call("get_weather", '{"city":"Oslo"}'), '{"name":"Oslo","population":700000}'])
    result = await Agent([get_weather], rt, output_type=City).run("Oslo?")
    assert result.output == City(name="Oslo", population=700000)
    assert "Answer with one JSON value of this form" in result.messages[0]["content"]


async def test_invalid_output_is_corrected_then_bounded() -> None:
    rt = ScriptedRuntime(['{"name":"Oslo","population":0}', '{"name":"Oslo","population":5}'])
    result = await Agent([], rt, output_type=City).run("Oslo?")
    assert result.output.population == 5
    assert "must be positive" in result.messages[3]["content"]

    rt = ScriptedRuntime(['{"name":"Oslo","population":0}'] * 2)
    with pytest.raises(OutputValidationError) as info:
        await Agent([], rt, output_type=City, max_retries=1).run("Oslo?")
    assert len(info.value.messages) == 1 + 1 + 3


async def test_run_stream_events_in_order() -> None:
    rt = ScriptedRuntime([call("get_weather", '{"city":"Oslo"}'), "Mild."])
    events = [e async for e in Agent([get_weather], rt).run_stream("Oslo?")]
    kinds = [type(e) for e in events]
    first_call = kinds.index(ToolCallEvent)
    assert set(kinds[:first_call]) == {TextDelta}
    assert kinds[first_call + 1] is ToolResultEvent
    assert isinstance(events[-1], FinalResult)
    assert events[-1].result.output == "Mild."
    text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.step == 2)
    assert text == "Mild."


async def test_deps_reach_tools_through_the_context() -> None:
    @tool
    def whoami(ctx: RunContext[str]) -> str:
        """Who is asking."""
        return f"{ctx.deps} at step {ctx.step}"

    rt = ScriptedRuntime([call("whoami", "{}"), "ok"])
    result = await Agent([whoami], rt).run("?", deps="ann")
    assert result.tool_calls[0].result == "ann at step 1"


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_random_models_end_in_a_result_or_a_typed_error(seed: int) -> None:
    """Whatever a (random) model writes, the run ends in a result or a `RunError`, with every
    executed call's arguments validated into the tool's typed class."""
    agent = Agent([get_weather, to_fahrenheit], RandomRuntime(seed=seed), max_steps=3, max_tokens=48)
    try:
        result = agent.run_sync("weather?")
    except RunError as error:
        assert error.messages[0] == {"role": "user", "content": "weather?"}
        return
    assert isinstance(result.output, str) and result.output.strip()
    for record in result.tool_calls:
        assert not isinstance(record.error, ToolArgumentsError)
        assert isinstance(record.arguments, agent.tools[record.call.name].args_type)


def test_the_system_prompt_joins_a_given_system_message_once() -> None:
    rt = ScriptedRuntime(["a", "b"])
    agent = Agent([], rt, system_prompt="Be brief.")
    first = agent.run_sync([{"role": "system", "content": "You are Ann."}, {"role": "user", "content": "hi"}])
    assert first.messages[0]["content"] == "You are Ann.\n\nBe brief."
    second = agent.run_sync(first.messages + [{"role": "user", "content": "again"}])
    assert second.messages[0]["content"] == "You are Ann.\n\nBe brief."


async def test_a_failing_runtime_keeps_the_messages() -> None:
    rt = ScriptedRuntime([call("get_weather", '{"city":"Oslo"}')])  # no second answer: the runtime fails
    with pytest.raises(ModelRequestFailed) as info:
        await Agent([get_weather], rt).run("weather in Oslo?")
    assert [m["role"] for m in info.value.messages] == ["user", "assistant", "tool"]
    assert info.value.__cause__ is not None


async def test_the_python_tool_prompt_lists_the_tools_and_takes_a_list_of_calls() -> None:
    """`tool_prompt="python"`: the tools go into the system message (not to the template),
    and the turn is held to one list of calls, whatever envelope the runtime's template has."""
    rt = ScriptedRuntime(['[get_weather(city="Oslo"), get_weather(city="Bergen", days=2)]', "Mild in both."],
                         tool_call_envelope="hermes")
    agent = Agent([get_weather], rt, system_prompt="Be brief.", tool_prompt="python", grounded_arguments=False)
    result = await agent.run("Weather in Oslo and Bergen?")
    assert [r.arguments.city for r in result.tool_calls] == ["Oslo", "Bergen"]
    first = rt.calls[0]
    assert first.tools is None and first.grammar is not None
    system = first.messages[0]["content"]
    assert system.startswith("Be brief.") and "[tool_name(argument=value, ...)]" in system and "get_weather" in system
    assert first.grammar.accepts('[get_weather(city="x")]') and not first.grammar.accepts('[get_weather(town="x")]')
    with pytest.raises(ValueError, match="tool_prompt"):
        Agent([get_weather], rt, tool_prompt="xml")  # type: ignore[arg-type]


async def test_a_python_call_without_brackets_is_a_call_not_the_answer() -> None:
    """A small model asked for `[f(...)]` often writes `f(...)`: that runs, and is never
    the final answer."""
    rt = ScriptedRuntime(['get_weather(city="Oslo")', "Mild."])
    result = await Agent([get_weather], rt, tool_prompt="python").run("Weather in Oslo?")
    assert [r.arguments.city for r in result.tool_calls] == ["Oslo"] and result.output == "Mild."
    whole = 'get_weather(city="Oslo", days=2)'
    steered = Generation(whole + ', get_weather(city="O")', "grammar_complete", Usage(10, 40),
                         steered_from=len(whole) + 14)
    rt = ScriptedRuntime([steered, "Mild."])
    result = await Agent([get_weather], rt, max_tokens=40, tool_prompt="python").run("Weather in Oslo?")
    assert [r.arguments.days for r in result.tool_calls] == [2] and result.messages[2]["content"] == whole


async def test_a_runs_usage_keeps_every_count_of_its_generations() -> None:
    turns = [Generation(call("get_weather", '{"city":"Oslo"}'), "grammar_complete",
                        Usage(10, 6, forward_passes=4, drafted_tokens=3, accepted_tokens=2)),
             Generation("Mild.", "stop", Usage(20, 2, forward_passes=2))]
    result = await Agent([get_weather], ScriptedRuntime(turns)).run("Oslo?")
    u = result.usage
    assert (u.prompt_tokens, u.completion_tokens, u.forward_passes, u.drafted_tokens, u.accepted_tokens) == (30, 8, 6, 3, 2)
    assert u.tool_runs == 1

"""Per-run settings: model settings over the agent's, a run's own tools, and a forced tool."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator

from agentkit import Agent, InvalidArgument, UnexpectedModelOutput, tool
from runtimes.checks import GREEDY_BELOW
from runtimes.testing import ScriptedRuntime


def call(name: str, arguments: str) -> str:
    return f'{{"name":"{name}","arguments":{arguments}}}'


@tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temp_c": 21}


@tool
def get_time(city: str) -> str:
    """The local time in a city."""
    return "12:00"


def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: a word"


async def test_a_runs_model_settings_override_the_agents_key_by_key() -> None:
    rt = ScriptedRuntime(["one", "two"])
    agent = Agent([], rt, temperature=0.7, seed=3, max_tokens=64, model_settings={"top_p": 0.9})
    await agent.run("a")
    await agent.run("b", model_settings={"temperature": 0.2, "max_tokens": 32})
    first, second = rt.calls
    assert (first.temperature, first.top_p, first.seed, first.max_tokens) == (0.7, 0.9, 3, 64)
    assert (second.temperature, second.top_p, second.seed, second.max_tokens) == (0.2, 0.9, 3, 32)
    assert agent.model_settings == {"temperature": 0.7, "top_p": 0.9, "seed": 3, "max_tokens": 64}


@given(temperature=st.floats(0, 2), top_p=st.floats(0.01, 1), seed=st.none() | st.integers(0, 2**31 - 1),
       max_tokens=st.integers(8, 4096))
@settings(max_examples=25, deadline=None)
def test_every_valid_setting_reaches_the_runtime(temperature: float, top_p: float, seed: int | None,
                                                 max_tokens: int) -> None:
    rt = ScriptedRuntime(["ok"])
    chosen = {"temperature": temperature, "top_p": top_p, "seed": seed, "max_tokens": max_tokens}
    Agent([], rt).run_sync("a", model_settings=chosen)  # type: ignore[arg-type]
    request = rt.calls[0]
    expected = chosen | {"temperature": 0.0 if temperature < GREEDY_BELOW else temperature}  # below it: greedy
    assert {k: getattr(request, k) for k in chosen} == expected


@pytest.mark.parametrize("bad, where", [
    ({"temprature": 0.5}, "model_settings['temprature']"),
    ({"top_p": 0.0}, "model_settings['top_p']"),
    ({"max_tokens": 0}, "model_settings['max_tokens']"),
    ({"seed": 1.5}, "model_settings['seed']"),
    ([("temperature", 1)], "model_settings"),
])
async def test_a_bad_model_setting_is_named_before_the_model_is_asked(bad: Any, where: str) -> None:
    rt = ScriptedRuntime(["never"])
    with pytest.raises(InvalidArgument) as info:
        await Agent([], rt).run("a", model_settings=bad)
    assert info.value.argument == where
    assert rt.calls == []


async def test_extra_tools_are_the_runs_alone() -> None:
    rt = ScriptedRuntime([call("lookup", '{"term":"grammar"}'), "Done.", call("lookup", '{"term":"x"}')])
    agent = Agent([get_weather], rt)
    result = await agent.run("Define grammar", extra_tools=[lookup])
    assert result.tool_calls[0].result == "grammar: a word"
    assert [t["function"]["name"] for t in rt.calls[0].tools] == ["get_weather", "lookup"]
    with pytest.raises(UnexpectedModelOutput):  # the next run has the agent's tools only
        await agent.run("Define x")
    assert [t["function"]["name"] for t in rt.calls[-1].tools] == ["get_weather"]


async def test_allowed_tools_keep_a_run_to_some_tools() -> None:
    rt = ScriptedRuntime([call("get_weather", '{"city":"Oslo"}')])
    agent = Agent([get_weather, get_time], rt)
    with pytest.raises(UnexpectedModelOutput):
        await agent.run("Weather in Oslo?", allowed_tools=["get_time"])
    assert [t["function"]["name"] for t in rt.calls[0].tools] == ["get_time"]
    assert not rt.calls[0].grammar.accepts(call("get_weather", '{"city":"Oslo"}'))
    assert rt.calls[0].grammar.accepts(call("get_time", '{"city":"Oslo"}'))


@pytest.mark.parametrize("kwargs, where", [
    ({"allowed_tools": ["nope"]}, "allowed_tools"),
    ({"allowed_tools": "get_time"}, "allowed_tools"),
    ({"extra_tools": [get_weather]}, "extra_tools[0]"),
    ({"tool_choice": "lookup"}, "tool_choice"),
    ({"tool_choice": "required", "allowed_tools": []}, "tool_choice"),
])
async def test_bad_run_tools_are_named(kwargs: dict[str, Any], where: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        await Agent([get_weather, get_time], ScriptedRuntime([])).run("a", **kwargs)
    assert info.value.argument == where


async def test_a_forced_tool_holds_turns_to_its_calls_until_one_succeeds() -> None:
    weather, time = call("get_weather", '{"city":"Oslo"}'), call("get_time", '{"city":"Oslo"}')
    rt = ScriptedRuntime([weather, "It is 21 C."])
    agent = Agent([get_weather, get_time], rt)
    result = await agent.run("Anything about Oslo", tool_choice="get_weather")
    assert result.output == "It is 21 C." and result.tool_calls[0].call.name == "get_weather"
    forced, free = rt.calls[0].grammar, rt.calls[1].grammar
    assert forced.accepts(weather) and not forced.accepts(time) and not forced.accepts("It is 21 C.")
    assert free.accepts(time) and free.accepts("It is 21 C.")


async def test_an_agents_forced_tool_and_a_run_that_leaves_it_out() -> None:
    agent = Agent([get_weather, get_time], ScriptedRuntime([call("get_time", '{"city":"Oslo"}'), "Noon."]),
                  tool_choice="get_time")
    assert (await agent.run("Time in Oslo?")).output == "Noon."
    with pytest.raises(InvalidArgument) as info:
        await agent.run("Time in Oslo?", allowed_tools=["get_weather"])
    assert info.value.argument == "allowed_tools"
    with pytest.raises(InvalidArgument):
        Agent([get_weather], tool_choice="get_time")


def _no_digits(value: str) -> str:
    if any(ch.isdigit() for ch in value):
        raise ValueError("must not contain digits")
    return value


@tool
def greet(name: Annotated[str, AfterValidator(_no_digits)]) -> str:
    """Greet someone by name."""
    return f"hello {name}"


async def test_a_forced_tool_that_fails_stays_forced() -> None:
    bad, good = call("greet", '{"name":"R2"}'), call("greet", '{"name":"Ann"}')
    rt = ScriptedRuntime([bad, good, "Fine."])
    result = await Agent([greet, get_time], rt, tool_choice="greet", grounded_arguments=False).run("w")
    assert result.output == "Fine."
    assert not rt.calls[0].grammar.accepts("Fine.") and not rt.calls[1].grammar.accepts("Fine.")
    assert not rt.calls[1].grammar.accepts(call("get_time", '{"city":"Oslo"}'))
    assert [r.ok for r in result.tool_calls] == [False, True]


async def test_message_history_continues_an_earlier_run() -> None:
    rt = ScriptedRuntime(["Hi.", "Bye.", "Bye."])
    agent = Agent([get_weather], rt, system_prompt="Be brief.")
    first = await agent.run("Hello")
    continued = await agent.run("Goodbye", message_history=first.messages)
    by_list = await agent.run(first.messages + [{"role": "user", "content": "Goodbye"}])
    assert continued.messages == by_list.messages
    assert rt.calls[1].messages == rt.calls[2].messages
    with pytest.raises(InvalidArgument) as info:
        await agent.run()
    assert info.value.argument == "prompt"
    with pytest.raises(InvalidArgument) as info:
        await agent.run("x", message_history=[{"content": "no role"}])
    assert info.value.argument.startswith("message_history")

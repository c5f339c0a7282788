"""How a turn after tool calls is asked: a model that calls by itself is sent its results as
context once a call succeeded; the conversation kept is the one that happened."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from agentkit import Agent
from agentkit._loop.results import calling_messages, context_message
from runtimes.testing import ScriptedRuntime


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"Drizzle in {city}, 7.5 degrees."


def convert_temperature(celsius: float) -> float:
    """Convert a temperature in Celsius to Fahrenheit."""
    return round(celsius * 9 / 5 + 32, 2)


def get_forecast(city: str) -> str:
    """Get the weather forecast for a city."""
    raise ValueError(f"no forecast for {city!r}")


TOOLS = [get_weather, convert_temperature, get_forecast]


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"))


def scripted(responses: list[str], takes_tools: bool | None) -> ScriptedRuntime:
    rt = ScriptedRuntime(responses)
    rt.template_takes_tools = takes_tools
    return rt


def test_a_model_that_calls_by_itself_is_sent_its_results_as_context_after_a_success():
    rt = scripted([call("get_weather", city="Oslo"), call("convert_temperature", celsius=7.5), "45.5 F."], True)
    result = Agent(TOOLS, runtime=rt, system_prompt="Be brief.").run_sync("How warm is Oslo in Fahrenheit?")
    assert result.output == "45.5 F."
    second, third = rt.calls[1], rt.calls[2]
    assert [m["role"] for m in second.messages] == ["system", "user"]  # no call turn to write out again
    assert second.messages[0]["content"].startswith("Be brief.")
    assert second.messages[1]["content"] == ('Context: get_weather(city="Oslo") = Drizzle in Oslo, 7.5 degrees.\n'
                                             "Question: How warm is Oslo in Fahrenheit?")
    assert {t["function"]["name"] for t in second.tools} == {t.__name__ for t in TOOLS}  # it may call again
    assert second.grammar.accepts(call("convert_temperature", celsius=7.5))
    assert third.messages[1]["content"].splitlines()[:2] == [
        'Context: get_weather(city="Oslo") = Drizzle in Oslo, 7.5 degrees.', "convert_temperature(celsius=7.5) = 45.5"]
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]  # kept as they were


def test_before_any_success_the_conversation_is_sent_as_it_is():
    rt = scripted([call("get_forecast", city="Oslo"), "No forecast."], True)
    Agent(TOOLS, runtime=rt).run_sync("Will it rain in Oslo tomorrow?")
    assert [m["role"] for m in rt.calls[1].messages] == ["system", "user", "assistant", "tool"]


def test_a_model_whose_template_takes_no_tools_or_is_unknown_is_sent_the_conversation():
    for takes in (None, False):
        rt = scripted([call("get_weather", city="Oslo"), "Drizzle."], takes)
        Agent(TOOLS, runtime=rt, tool_routing=False).run_sync("What is the weather in Oslo?")
        assert [m["role"] for m in rt.calls[1].messages][-3:] == ["user", "assistant", "tool"]


def test_earlier_turns_of_a_continued_conversation_are_sent_as_they_were():
    history = [{"role": "user", "content": "I live in Oslo."}, {"role": "assistant", "content": "Noted."}]
    rt = scripted([call("get_weather", city="Oslo"), "Drizzle."], True)
    Agent(TOOLS, runtime=rt).run_sync("What is the weather where I live?", message_history=history)
    sent = rt.calls[1].messages
    assert [m for m in sent if m["role"] != "system"][:2] == history
    assert sent[-1]["content"].endswith("Question: What is the weather where I live?")


_names = st.sampled_from(["get_weather", "get_price", "multiply"])
_values = st.one_of(st.integers(-99, 99), st.text("abc xyz", max_size=6))


@settings(max_examples=100, deadline=None)
@given(before=st.lists(st.sampled_from(["user", "assistant", "system"]), max_size=3),
       calls=st.lists(st.tuples(_names, st.dictionaries(st.sampled_from("xyz"), _values, max_size=2),
                                st.text("0123456789 .,abc", min_size=1, max_size=12)), min_size=1, max_size=4))
def test_calling_messages_keep_what_came_before_and_state_every_result_once(before, calls):
    messages: list[dict[str, Any]] = [{"role": role, "content": f"{role} {i}"} for i, role in enumerate(before)]
    start = len(messages)
    messages.append({"role": "user", "content": "The request?"})
    for i, (name, arguments, result) in enumerate(calls):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": result})
    sent = calling_messages(messages, start)
    assert sent[:start] == messages[:start]
    context, later = context_message(messages, start)
    assert sent[start:] == [context] and later == []
    lines = context["content"].splitlines()
    assert lines[0].startswith("Context: ") and lines[-1] == "Question: The request?"
    written = [line.removeprefix("Context: ") for line in lines[:-1]]
    for name, arguments, result in calls:  # the latest outcome of each call as written, once
        shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
        last = [r for n, a, r in calls if n == name and a == arguments][-1]
        assert written.count(f"{name}({shown}) = {last}") == 1

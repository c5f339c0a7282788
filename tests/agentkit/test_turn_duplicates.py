"""A turn that writes one call again and again (issue #65: a server that cannot steer a turn
closed writes the same call six times): the call runs once and is answered once, and the note
on a call answered in an earlier turn is plain enough that a small model writing out the last
tool message writes out a result, not an instruction."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Agent, tool
from runtimes.testing import ScriptedRuntime

RUNS: list[str] = []


@tool
def get_weather(city: str, unit: str = "c") -> str:
    """The weather in a city."""
    RUNS.append(city)
    return f"12 degrees {unit} in {city}"


@given(copies=st.integers(1, 6), spellings=st.lists(st.booleans(), min_size=6, max_size=6),
       other=st.booleans())
@settings(max_examples=40, deadline=None)
def test_a_call_written_many_times_in_a_turn_runs_once_and_is_answered_once(
        copies: int, spellings: list[bool], other: bool) -> None:
    RUNS.clear()
    calls = [{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"} if explicit else {"city": "Paris"}}
             for explicit in spellings[:copies]]
    if other:
        calls.append({"name": "get_weather", "arguments": {"city": "Oslo"}})
    rt = ScriptedRuntime([json.dumps(calls), "Mild."])
    result = Agent([get_weather], rt, max_calls_per_turn=8).run_sync("Weather in Paris and Oslo?")
    assert RUNS == ["Paris"] + (["Oslo"] if other else [])
    stored = [c["id"] for c in result.messages[1]["tool_calls"]]
    answered = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert stored == answered and len(answered) == 1 + other  # each stored call answered once
    assert len(result.tool_calls) == copies + other  # every call written keeps its record
    assert result.usage.repeated_calls == copies - 1
    assert all("again" not in m["content"] for m in result.messages if m["role"] == "tool")


def test_a_call_answered_in_an_earlier_turn_gets_the_result_with_a_plain_note() -> None:
    RUNS.clear()
    paris = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    rt = ScriptedRuntime([paris, paris, "12 degrees in Paris."])
    result = Agent([get_weather], rt).run_sync("Weather in Paris?")
    assert RUNS == ["Paris"]
    again = [m["content"] for m in result.messages if m["role"] == "tool"][-1]
    assert again == "(again) 12 degrees c in Paris"

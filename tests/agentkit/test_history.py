"""A run's messages are typed (calls structured, with ids), dump to JSON and load back equal, and
a run continued from loaded history is the run continued in memory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Agent, InvalidArgument, messages_from_json, messages_to_json, tool
from runtimes.testing import ScriptedRuntime


@tool
def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temp_c": 21, "days": days}


@tool(requires_approval=True)
def book(city: str) -> str:
    """Book a trip."""
    return f"booked {city}"


def call(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
CALL_PART = st.builds(
    lambda i, name, args: {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}},
    TEXT, TEXT, st.dictionaries(TEXT, st.integers() | TEXT, max_size=3),
)
MESSAGE = st.one_of(
    st.builds(lambda c: {"role": "system", "content": c}, TEXT),
    st.builds(lambda c: {"role": "user", "content": c}, TEXT),
    st.builds(lambda c: {"role": "assistant", "content": c}, TEXT),
    st.builds(lambda c, calls: {"role": "assistant", "content": c, "tool_calls": calls}, TEXT, st.lists(CALL_PART, max_size=3)),
    st.builds(lambda i, n, c: {"role": "tool", "tool_call_id": i, "name": n, "content": c}, TEXT, TEXT, TEXT),
)


@given(st.lists(MESSAGE, max_size=8))
@settings(max_examples=100, deadline=None)
def test_messages_load_back_equal(messages: list[dict[str, Any]]) -> None:
    text = messages_to_json(messages)
    assert messages_from_json(text) == messages
    assert messages_to_json(messages_from_json(text)) == text


async def test_a_runs_messages_hold_structured_calls_and_round_trip() -> None:
    both = call("get_weather", {"city": "Oslo"}) + "\n" + call("get_weather", {"city": "Rome", "days": 2})
    result = await Agent([get_weather], ScriptedRuntime([both, "Cool in Oslo, warm in Rome."])).run("Weather in Oslo and Rome?")
    assistant = result.messages[1]
    assert assistant["content"] == both
    calls = assistant["tool_calls"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == [
        ("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome", "days": 2})]
    assert [m["tool_call_id"] for m in result.messages if m["role"] == "tool"] == [c["id"] for c in calls]
    assert [r.call.id for r in result.tool_calls] == [c["id"] for c in calls]
    assert messages_from_json(messages_to_json(result.messages)) == result.messages


async def test_a_run_continued_from_loaded_history_is_the_run_continued_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    first = await Agent([get_weather], ScriptedRuntime([call("get_weather", {"city": "Oslo"}), "21 C."])).run("Oslo?")
    monkeypatch.setattr("agentkit._loop.state.new_run_id", lambda: "0a1b2c3d")  # both runs' call ids alike
    loaded = messages_from_json(messages_to_json(first.messages))
    follow = [call("get_weather", {"city": "Oslo", "days": 2}), "21 C tomorrow too."]
    outcomes = []
    for history in (first.messages, loaded):
        rt = ScriptedRuntime(list(follow))
        result = await Agent([get_weather], rt, system_prompt="Be brief.").run("And tomorrow?", message_history=history)
        outcomes.append((result, rt.calls))
    (memory, memory_calls), (disk, disk_calls) = outcomes
    assert [c.messages for c in memory_calls] == [c.messages for c in disk_calls]
    assert [c.grammar.to_gbnf() for c in memory_calls] == [c.grammar.to_gbnf() for c in disk_calls]
    assert memory.messages == disk.messages and memory.output == disk.output
    assert [(r.call, r.result) for r in memory.tool_calls] == [(r.call, r.result) for r in disk.tool_calls]
    assert memory.tool_calls[0].call.id not in {c["id"] for m in first.messages for c in m.get("tool_calls", [])}


async def test_a_paused_run_resumes_from_loaded_history() -> None:
    agent = Agent([book], ScriptedRuntime([call("book", {"city": "Rome"}), "Booked."]))
    paused = await agent.run("Book Rome")
    stored = messages_to_json(paused.messages)
    done = await agent.run(message_history=messages_from_json(stored),
                           approvals={paused.pending[0].id: paused.pending[0].approve()})
    assert done.output == "Booked." and done.tool_calls[0].result == "booked Rome"


@pytest.mark.parametrize("text, where", [
    ("[1", "text"),
    ('{"role": "user"}', "text"),
    ('[{"role": 3, "content": "x"}]', "text[0]"),
    ('[{"role": "user", "content": 3}]', "text[0]['content']"),
    ('[{"role": "user", "content": "a"}, {"role": "tool", "content": "x", "tool_call_id": 1}]', "text[1]['tool_call_id']"),
    ('[{"role": "assistant", "content": "a", "tool_calls": [{"id": "c"}]}]', "text[0]['tool_calls'][0]['type']"),
])
def test_text_that_is_no_message_list_is_named(text: str, where: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        messages_from_json(text)
    assert info.value.argument == where


def test_dumping_checks_the_messages() -> None:
    with pytest.raises(InvalidArgument) as info:
        messages_to_json([{"role": "user", "content": object()}])  # type: ignore[list-item]
    assert info.value.argument == "messages[0]['content']"
    with pytest.raises(InvalidArgument):
        messages_to_json("not a list")  # type: ignore[arg-type]

"""Partial objects: every value shown while an answer is written is a prefix-consistent view of
the final one (never half a string or number), growing, and the last is the whole typed value;
with sync twins that need no event loop."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentkit import (
    Agent,
    FinalResult,
    IncompleteOutput,
    PartialOutput,
    RunError,
    TextDelta,
    astream_extract,
    stream_extract,
    tool,
)
from agentkit._outputs.partial import NO_VALUE, PartialJSON, consistent
from runtimes.testing import RandomRuntime, ScriptedRuntime

def partial_value(text: str) -> Any:
    """The partial value of the whole text, read in one piece."""
    reader = PartialJSON()
    reader.feed(text)
    return reader.value()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@given(value=JSON, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
@settings(max_examples=200, deadline=None)
def test_every_prefix_is_a_growing_consistent_view_of_the_document(value: Any, indent: int | None,
                                                                   ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    previous = NO_VALUE
    for cut in range(len(text) + 1):
        partial = partial_value(text[:cut])
        if partial is NO_VALUE:
            assert previous is NO_VALUE
            continue
        assert consistent(partial, value), (text[:cut], partial)
        if previous is not NO_VALUE:
            assert consistent(previous, partial)
        previous = partial
    if isinstance(value, (dict, list)):
        assert previous == value


def test_no_half_number_or_string_is_shown() -> None:
    text = '{"n": 12345, "s": "abcdef", "f": -1.5e-3, "ok": true}'
    seen = [partial_value(text[:cut]) for cut in range(len(text) + 1)]
    assert {v.get("n") for v in seen if v is not NO_VALUE} == {None, 12345}
    assert {v.get("s") for v in seen if v is not NO_VALUE} == {None, "abcdef"}
    assert {v.get("f") for v in seen if v is not NO_VALUE} == {None, -0.0015}
    assert {v.get("ok") for v in seen if v is not NO_VALUE} == {None, True}


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]
    active: bool


async def test_astream_extract_grows_then_gives_the_typed_value() -> None:
    answer = '{"name":"Ann Lee","age":31,"tags":["chess","go"],"active":true}'
    values = [v async for v in astream_extract(Person, "Ann Lee, 31", runtime=ScriptedRuntime([answer]),
                                              grounded=False)]
    *partials, final = values
    assert final == Person(name="Ann Lee", age=31, tags=["chess", "go"], active=True)
    assert partials[0] == {} and partials[-1] == json.loads(answer)
    assert all(consistent(a, b) and a != b for a, b in zip(partials, partials[1:]))
    assert all(isinstance(p, dict) and p.get("age") in (None, 31) for p in partials)


@given(seed=st.integers(0, 10_000))
@settings(max_examples=30, deadline=None)
def test_partials_of_a_random_model_are_prefixes_of_its_final_value(seed: int) -> None:
    try:
        values = list(stream_extract(Person, "x", runtime=RandomRuntime(seed=seed), max_tokens=200))
    except IncompleteOutput:
        return
    *partials, final = values
    assert isinstance(final, Person)
    whole = final.model_dump()
    assert all(consistent(p, whole) for p in partials)
    assert all(consistent(a, b) for a, b in zip(partials, partials[1:]))


@tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temp_c": 21}


class Forecast(BaseModel):
    city: str
    temp_c: int


@pytest.mark.parametrize("envelope, call", [
    ("json", '{"name":"get_weather","arguments":{"city":"Oslo"}}'),
    ("hermes", '<tool_call>\n{"name":"get_weather","arguments":{"city":"Oslo"}}\n</tool_call>'),
])
async def test_run_stream_shows_the_output_growing_and_no_call_as_output(envelope: str, call: str) -> None:
    answer = '{"city":"Oslo","temp_c":21}'
    rt = ScriptedRuntime([call, answer], tool_call_envelope=envelope)  # type: ignore[arg-type]
    events = [e async for e in Agent([get_weather], rt, output_type=Forecast).run_stream("Oslo?")]
    partials = [e for e in events if isinstance(e, PartialOutput)]
    assert all(p.step == 2 for p in partials)  # the call's turn showed none
    *growing, last = partials
    assert last.complete and last.value == Forecast(city="Oslo", temp_c=21)
    assert growing and all(not p.complete and consistent(p.value, json.loads(answer)) for p in growing)
    assert isinstance(events[-1], FinalResult) and events[-2] is last


def test_sync_twins_need_no_event_loop_and_close_when_left() -> None:
    rt = ScriptedRuntime(['{"name":"get_weather","arguments":{"city":"Oslo"}}', "Sunny."])
    events = list(Agent([get_weather], rt).run_stream_sync("Oslo?"))
    assert isinstance(events[-1], FinalResult) and events[-1].result.output == "Sunny."
    assert any(isinstance(e, TextDelta) for e in events)
    stream = stream_extract(Person, "x", runtime=ScriptedRuntime(['{"name":"A","age":1,"tags":[],"active":false}']),
                            grounded=False)
    assert next(stream) == {}
    stream.close()  # leaving early closes the stream


async def test_sync_twins_refuse_a_running_loop() -> None:
    with pytest.raises(RuntimeError, match="stream_extract"):
        next(stream_extract(Person, "x", runtime=ScriptedRuntime([])))
    with pytest.raises(RuntimeError, match="run_stream"):
        next(Agent([], ScriptedRuntime([])).run_stream_sync("x"))


def test_an_agents_partial_outputs_are_prefixes_of_its_output() -> None:
    """Random models (seeded) that call tools or answer: every answer's partials are prefixes of it."""
    finished = 0
    for seed in range(12):
        agent = Agent([get_weather], RandomRuntime(seed=seed), output_type=Person, max_tokens=200, max_steps=2,
                      max_retries=0)
        try:
            events = list(agent.run_stream_sync("x"))
        except RunError:  # a random model may end the run early: nothing to compare
            continue
        finished += 1
        final = events[-1]
        assert isinstance(final, FinalResult)
        partials = [e for e in events if isinstance(e, PartialOutput) and e.step == final.result.steps]
        *growing, last = partials
        assert last.complete and last.value == final.result.output
        whole = final.result.output.model_dump()
        assert growing and all(not p.complete and consistent(p.value, whole) for p in growing)
    assert finished >= 2

"""A tool called on its own earlier result, with nothing new from the user, is a repeat in
spirit: it is answered as a repeat of the call it feeds on, and the next turn is the answer."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agentkit import Agent, tool
from agentkit._loop.repeats import ANSWER_NOW, feeds_on
from agentkit._messages import ToolCall
from agentkit._outputs.events import ToolCallRecord
from runtimes.testing import ScriptedRuntime

runs: list[float] = []


@tool
def to_kelvin(celsius: float) -> float:
    """Convert a temperature from degrees Celsius to kelvin."""
    runs.append(celsius)
    return round(celsius + 273.15, 2)


def _call(value: float) -> str:
    return json.dumps({"name": "to_kelvin", "arguments": {"celsius": value}})


def test_a_chain_on_its_own_result_is_ended_and_the_answer_keeps_the_first_result():
    runs.clear()
    model = ScriptedRuntime([_call(25), _call(298.15), "It is 298.15 K."])
    result = Agent([to_kelvin], runtime=model).run_sync("What is 25 °C in kelvin?")
    assert runs == [25]  # the chained call did not run
    first, chained = result.tool_calls
    assert chained.repeat_of == first.call.id and chained.reused and chained.result == 298.15
    asked = model.calls[-1].messages[-1]["content"]  # the answer asked with the one result it has
    assert asked == "Context: to_kelvin(celsius=25) = 298.15\nQuestion: What is 25 °C in kelvin?"
    assert ANSWER_NOW not in [m["content"] for m in result.messages]
    assert not model.calls[-1].grammar.accepts(_call(571.3))  # the turn after it is the answer alone
    assert result.output == "It is 298.15 K." and result.usage.repeated_calls == 1


def test_a_chain_on_its_result_with_digits_dropped_is_ended_too():
    runs.clear()
    model = ScriptedRuntime([_call(3124), _call(3397), "It is 3397.15 K."])
    result = Agent([to_kelvin], runtime=model).run_sync("What is the temperature at the office of employee 3124?")
    assert runs == [3124] and result.tool_calls[1].reused and result.usage.repeated_calls == 1


def test_a_value_the_user_gave_is_new_information_and_runs():
    runs.clear()
    model = ScriptedRuntime([_call(25), _call(298.15), "Both done."])
    result = Agent([to_kelvin], runtime=model).run_sync("Convert 25 °C, then 298.15 °C, to kelvin.")
    assert runs == [25, 298.15]
    assert all(r.repeat_of is None for r in result.tool_calls)


def _record(arguments: dict, result: object) -> ToolCallRecord:
    return ToolCallRecord(ToolCall("c1", "f", arguments), None, result=result)


@given(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6), st.sampled_from([1, 0.25]))
def test_feeding_on_a_result_is_exactly_an_argument_taken_from_it_and_not_told(x, y, scale):
    x, y = x * scale, y * scale
    earlier = _record({"v": x}, {"out": y})
    told = f"please use {x}"
    assert feeds_on({"v": y}, earlier, told) is (abs(y) != abs(x))
    assert not feeds_on({"v": x}, earlier, told)  # the same call is a plain repeat, not this
    assert not feeds_on({"v": y}, earlier, f"{told} and {y}")  # the user gave it
    assert not feeds_on({"v": y + 1}, earlier, told)  # a value the result does not hold


@given(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6), st.integers(1, 99))
def test_a_result_written_with_fewer_decimals_is_still_fed_on(x, whole, hundredths):
    """3397 or 3397.2 for a result of 3397.15: the model copied the result, cutting digits."""
    y = whole + hundredths / 100 if whole >= 0 else whole - hundredths / 100
    earlier = _record({"v": x}, {"out": y})
    told = f"please use {x}"
    for cut in {float(whole), round(y, 1), float(int(y * 10)) / 10}:
        assert feeds_on({"v": cut}, earlier, told) is (abs(cut) != abs(x))
    assert not feeds_on({"v": whole + (2 if whole >= 0 else -2)}, earlier, told)  # not a cut of it


def test_a_changed_argument_from_elsewhere_is_no_chain():
    earlier = _record({"a": 4.35, "b": 12}, 52.2)
    assert feeds_on({"a": 52.2, "b": 12}, earlier, "What do 12 notebooks cost?")
    assert not feeds_on({"a": 52.2, "b": 1.1}, earlier, "What do 12 notebooks cost?")
    assert not feeds_on({"city": "Oslo"}, _record({"city": "Lima"}, {"temp": 7.5}), "Lima")

"""Answers that restate the tools' results (`Agent(grounded_answers=...)`, issue #67 item 4): an
answer turn held so writes only numbers the conversation holds."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Agent, InvalidArgument
from runtimes.testing import ScriptedRuntime
from test_routing import WEATHER_LINE, RoutedScripted, call, get_price, get_weather

TOOLS = [get_weather, get_price]  # the weather tool answers "Drizzle in {city}, 7.5 degrees."
REQUEST = "What is the weather in Oslo, in 2 words?"


def routed_answer_grammar(**options: Any):
    rt = RoutedScripted([call("get_weather", city="Oslo"), "Drizzle, 7.5 degrees."], {WEATHER_LINE: 10.0})
    result = Agent(TOOLS, runtime=rt, **options).run_sync(REQUEST)
    assert result.output == "Drizzle, 7.5 degrees."
    return rt.calls[1].grammar


@settings(max_examples=60, deadline=None)
@given(number=st.decimals(min_value=-1000, max_value=1000, places=1, allow_nan=False, allow_infinity=False))
def test_a_routed_answer_writes_only_the_numbers_the_conversation_holds(number):
    g = routed_answer_grammar()
    written = str(abs(number))
    held = written in {"7.5", "2"}
    assert g.accepts(f"It is {written} degrees.") == held
    assert g.accepts(f"It is -{written} degrees.") == held  # the sign is text: "-7.5" restates 7.5


def test_held_answers_take_the_results_and_the_requests_numbers_and_text_freely():
    g = routed_answer_grammar()
    assert g.accepts("Drizzle in Oslo, 7.5 degrees.")
    assert g.accepts("In 2 words: drizzle, mild.")
    assert not g.accepts("It is 8 degrees.")  # invented
    assert not g.accepts("It is 7.50 degrees.")  # not as any message writes it
    assert not g.accepts(call("get_weather", city="Oslo"))  # the answer, not another call


def test_grounded_answers_false_leaves_the_answer_free():
    assert routed_answer_grammar(grounded_answers=False).accepts("It is 8 degrees.")
    rt = RoutedScripted([call("get_weather", city="Oslo"), "Drizzle."], {WEATHER_LINE: 10.0})
    Agent(TOOLS, runtime=rt).run_sync(REQUEST, model_settings={"grounded_answers": False})  # per run as well
    assert rt.calls[1].grammar.accepts("It is 8 degrees.")


def test_an_answer_without_a_call_is_free():
    rt = RoutedScripted(["It is 12 degrees."], {})  # no tool stands out: answered without a call
    assert Agent(TOOLS, runtime=rt, grounded_answers=True).run_sync(REQUEST).output == "It is 12 degrees."
    assert rt.calls[0].grammar.accepts("It is 12 degrees.")


def weather_twice() -> ScriptedRuntime:
    weather = call("get_weather", city="Oslo")
    return ScriptedRuntime([weather, weather, "It is 7.5 degrees."])  # a repeat: the next turn answers


def test_an_answer_asked_after_the_run_went_in_circles_is_held_and_a_turn_that_may_call_is_not():
    rt = weather_twice()
    Agent(TOOLS, runtime=rt).run_sync(REQUEST)
    assert rt.calls[-1].grammar.accepts("It is 7.5 degrees.")
    assert not rt.calls[-1].grammar.accepts("It is 8 degrees.")
    assert rt.calls[1].grammar.accepts("It is 8 degrees.")  # after the first result, it may call or answer: free


def test_true_also_holds_the_answer_a_resumed_run_is_asked_by_the_note():
    first = Agent(TOOLS, runtime=ScriptedRuntime([call("get_weather", city="Oslo"), "Drizzle."])).run_sync(REQUEST)
    history = first.messages[:-1]  # the request, the call and its result: no answer yet
    auto, held = weather_twice(), weather_twice()
    Agent(TOOLS, runtime=auto).run_sync(message_history=history)
    Agent(TOOLS, runtime=held, grounded_answers=True).run_sync(message_history=history)
    assert auto.calls[-1].grammar.accepts("It is 8 degrees.")
    assert not held.calls[-1].grammar.accepts("It is 8 degrees.")
    assert held.calls[-1].grammar.accepts("It is 7.5 degrees.")


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_grounded_answers_must_be_a_mode(value):
    with pytest.raises(InvalidArgument, match="grounded_answers"):
        Agent(TOOLS, grounded_answers=value)
    with pytest.raises(InvalidArgument, match="grounded_answers"):
        Agent(TOOLS, model_settings={"grounded_answers": value})


def test_a_held_answers_grammar_is_kept_for_the_same_conversation():
    agent = Agent(TOOLS)
    first = agent._grammars.held_answer(("json",), ("7.5",))
    assert agent._grammars.held_answer(("json",), ("7.5",)) is first
    assert first.kind == "answer" and first.grammar.accepts("It is 7.5.") and not first.grammar.accepts("It is 8.")

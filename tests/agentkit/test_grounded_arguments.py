"""Tool arguments held to the conversation (`Agent(grounded_arguments=...)`, issue #67 item 3):
a held argument is a span of the system prompt, the user's messages and the tool results so
far, or a number they write; never a value the tool listing alone holds (a docstring's
example); a tool whose required held argument has no value there is not offered, and a turn
that must call with no tool left falls back to the plain arguments and says so."""

from __future__ import annotations

import datetime
import json
import logging
from decimal import Decimal
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit import Agent, Grounded, InvalidArgument, RunError
from agentkit._loop.conversation import conversation_text
from agentkit._loop.turns import GROUNDED_TURNS
from grammar import Grammar, Grounding
from runtimes.testing import FunctionRuntime, RandomRuntime, ScriptedRuntime

EXAMPLE = "Springfield"


def weather(city: str, units: Literal["metric", "imperial"] = "metric") -> str:
    """The weather in a city.

    Args:
        city: the city's name, as in weather(city="Springfield").
        units: metric or imperial.
    """
    return f"Sunny in {city}, 21.5 degrees."


def convert(celsius: float) -> float:
    """Celsius to Fahrenheit, as in convert(celsius=37.5)."""
    return celsius * 9 / 5 + 32


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"))


def grammars_seen(answers: list[str]) -> tuple[FunctionRuntime, list[Grammar]]:
    """A runtime answering `answers` in turn, keeping each turn's grammar."""
    seen: list[Grammar] = []

    def answer(messages: Any, info: Any) -> str:
        seen.append(info.grammar)
        return answers[info.call - 1]

    return FunctionRuntime(answer), seen


def held_text_before_each_call(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """Each call of the conversation, with the text of the system, user and tool messages
    before it: (tool name, arguments with numbers as Decimals, that text)."""
    found = []
    for i, message in enumerate(messages):
        for part in message.get("tool_calls") or ():
            arguments = json.loads(part["function"]["arguments"], parse_float=Decimal)
            found.append((part["function"]["name"], arguments, conversation_text(messages[:i])))
    return found


WORDS = st.sampled_from(["Paris", "Lyon", "the", "weather", "in", "12", "3.5", "é", ",", " ", "degrees", "Oslo"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(WORDS, min_size=1, max_size=8), st.integers(0, 2**16))
def test_every_call_a_random_model_makes_holds_its_arguments_to_the_conversation(words, seed):
    prompt = " ".join(words)
    agent = Agent([weather, convert], RandomRuntime(seed=seed), grounded_arguments=True, tool_choice="required",
                  max_steps=3, max_tokens=400)
    try:
        messages = agent.run_sync(prompt).messages
    except RunError as error:  # a random model may well run out of turns or tokens
        messages = error.messages
    for name, arguments, text in held_text_before_each_call(messages):
        if name == "weather":
            assert arguments["city"] in text and (EXAMPLE not in arguments["city"] or EXAMPLE in text)
        else:  # convert is offered only once the conversation writes a number
            assert Decimal(arguments["celsius"]) in set(Grounding(text).numbers)


def test_a_docstrings_example_is_no_value_until_the_user_writes_it():
    runtime = ScriptedRuntime([call("weather", city=EXAMPLE)])
    with pytest.raises(RunError) as info:
        Agent([weather], runtime, grounded_arguments=True, tool_choice="required").run_sync("The weather in Paris?")
    assert "not a sentence" in str(info.value.__cause__)
    runtime = ScriptedRuntime([call("weather", city=EXAMPLE), "Sunny."])
    result = Agent([weather], runtime, grounded_arguments=True).run_sync(f"The weather in {EXAMPLE}?")
    assert result.tool_calls[0].call.arguments == {"city": EXAMPLE}


def test_the_tool_listing_in_the_system_message_is_not_the_conversation():
    runtime, seen = grammars_seen(["Sunny."])
    runtime.tool_call_envelope = "python"
    agent = Agent([weather], runtime, system_prompt="You answer about the weather in Europe.",
                  tool_prompt="python", grounded_arguments=True)
    result = agent.run_sync("The weather in Paris?")
    assert EXAMPLE in result.messages[0]["content"]  # the listing shows the docstring
    (g,) = seen
    assert g.accepts('[weather(city="Paris")]') and g.accepts('[weather(city="Europe")]')
    assert not g.accepts(f'[weather(city="{EXAMPLE}")]')


def test_a_conversion_is_not_offered_until_a_number_is_in_the_conversation():
    runtime, seen = grammars_seen([call("weather", city="Lyon"), call("convert", celsius=21.5), "70.7 F"])
    result = Agent([weather, convert], runtime, grounded_arguments=True).run_sync("How warm is Lyon, in F?")
    first, second, _ = seen
    assert first.accepts(call("weather", city="Lyon"))
    assert not first.accepts(call("convert", celsius=21.5)) and not first.accepts(call("convert", celsius=0))
    assert second.accepts(call("convert", celsius=21.5))  # the weather's result wrote it
    assert not second.accepts(call("convert", celsius=37.5))  # the docstring's does not count
    assert result.output == "70.7 F"


def test_with_no_tool_left_an_auto_turn_may_only_answer():
    runtime, seen = grammars_seen(["Which temperature?"])
    result = Agent([convert], runtime, grounded_arguments="auto").run_sync("Convert the temperature, please.")
    assert result.output == "Which temperature?"
    assert not seen[0].accepts(call("convert", celsius=1))


@pytest.mark.parametrize("choice", ["required", "convert"])
def test_a_turn_that_must_call_with_no_tool_left_falls_back_and_says_so(choice, caplog):
    runtime, seen = grammars_seen([call("convert", celsius=100), "212 F"])
    agent = Agent([convert], runtime, grounded_arguments=True, tool_choice=choice)
    with caplog.at_level(logging.INFO, logger="agentkit"):
        result = agent.run_sync("Convert the boiling point of water.")
    assert seen[0].accepts(call("convert", celsius=100))  # plain arguments: never an empty grammar
    assert result.tool_calls[0].result == 212
    said = [r.getMessage() for r in caplog.records if r.name == "agentkit" and r.levelno == logging.INFO]
    assert any("turn 1" in s and "convert" in s and "not held" in s for s in said), said


def test_a_parameters_own_mark_wins_over_the_mode():
    def scale(factor: Annotated[float, Grounded()], label: Annotated[str, Grounded(False)] = "x") -> float:
        """Scale by a factor."""
        return factor

    runtime, seen = grammars_seen([call("scale", factor=2, label="anything"), "done"])
    Agent([scale], runtime, grounded_arguments=False).run_sync("Scale it by 2.")  # the mark holds
    assert seen[0].accepts(call("scale", factor=2, label="free text"))
    assert not seen[0].accepts(call("scale", factor=3))
    runtime, seen = grammars_seen(["done"])
    Agent([scale], runtime, grounded_arguments=True).run_sync("Scale it by 2.")
    assert seen[0].accepts(call("scale", factor=2, label="not in the conversation"))


def test_auto_holds_identifiers_and_numbers_not_enums_date_times_or_composed_text():
    def book(room: str, guests: int, start: datetime.datetime, reason: str, units: Literal["a", "b"]) -> str:
        """Book a room."""
        return "booked"

    runtime, seen = grammars_seen(["ok"])
    Agent([book], runtime, grounded_arguments="auto").run_sync("Room 12B for 3 guests.")
    g = seen[0]
    args = {"room": "12B", "guests": 3, "start": "2025-03-14T10:00:00Z", "reason": "a team meeting", "units": "b"}
    assert g.accepts(call("book", **args))
    assert not g.accepts(call("book", **{**args, "room": "14C"}))
    assert not g.accepts(call("book", **{**args, "guests": 4}))


def test_auto_leaves_optional_parameters_free():
    def area(radius: float, units: str = "meters") -> str:
        """The area of a circle."""
        return "ok"

    runtime, seen = grammars_seen(["ok"])
    Agent([area], runtime, grounded_arguments="auto").run_sync("Area of a circle of radius 10?")
    assert seen[0].accepts(call("area", radius=10, units="meters"))  # the default, which the text never writes
    assert not seen[0].accepts(call("area", radius=12, units="meters"))
    runtime, seen = grammars_seen(["ok"])
    Agent([area], runtime, grounded_arguments=True).run_sync("Area of a circle of radius 10?")
    assert not seen[0].accepts(call("area", radius=10, units="meters"))  # True holds every argument


def test_a_run_sets_its_own_mode_in_model_settings():
    runtime, seen = grammars_seen(["ok", "ok", "ok"])
    agent = Agent([weather], runtime)  # the default, "auto", holds the city
    agent.run_sync("Weather in Oslo?")
    agent.run_sync("Weather in Oslo?", model_settings={"grounded_arguments": False})
    agent.run_sync("Weather in Oslo?", model_settings={"grounded_arguments": True})
    auto, plain, held = seen
    assert auto.accepts(call("weather", city="Oslo")) and not auto.accepts(call("weather", city="Rome"))
    assert plain.accepts(call("weather", city="Rome")) and not held.accepts(call("weather", city="Rome"))
    with pytest.raises(InvalidArgument, match="grounded_arguments"):
        agent.run_sync("x", model_settings={"grounded_arguments": "yes"})
    with pytest.raises(InvalidArgument, match="grounded_arguments"):
        Agent([weather], runtime, grounded_arguments=1)  # type: ignore[arg-type]


def test_a_server_is_sent_the_plain_grammar():
    runtime, seen = grammars_seen(["ok"])
    runtime.steers_budget = False  # as a server runtime: it cannot steer a turn, nor take a grammar per turn
    Agent([weather], runtime, grounded_arguments=True).run_sync("Weather in Oslo?")
    assert seen[0].accepts(call("weather", city="Rome"))


def test_the_grounded_grammars_an_agent_keeps_are_bounded():
    answers = [call("weather", city=f"Oslo{i}") for i in range(GROUNDED_TURNS + 4)] + ["done"]
    runtime, seen = grammars_seen(answers)
    agent = Agent([weather], runtime, grounded_arguments=True, max_steps=len(answers), answer_on_repeat=False)
    agent.run_sync(" ".join(f"Oslo{i}" for i in range(GROUNDED_TURNS + 4)))
    assert len(seen) == len(answers)
    assert len(agent._grammars._grounded) == GROUNDED_TURNS


def test_the_same_conversation_text_reuses_its_grammar():
    runtime, seen = grammars_seen(["ok", "ok"])
    agent = Agent([weather], runtime, grounded_arguments=True)
    agent.run_sync("Weather in Oslo?")
    agent.run_sync("Weather in Oslo?")
    assert seen[0] is seen[1]


def test_the_conversation_is_the_system_user_and_tool_texts():
    messages = [
        {"role": "system", "content": "Be brief.\n\nLISTING"},
        {"role": "user", "content": [{"type": "text", "text": "in Paris"}, {"type": "image_url", "image_url": {}}]},
        {"role": "assistant", "content": "Rome", "tool_calls": []},
        {"role": "tool", "tool_call_id": "c1", "content": "21.5"},
    ]
    assert conversation_text(messages, ["LISTING"]) == "Be brief.\n\n\nin Paris\n21.5"


def test_a_date_waits_for_the_conversation_to_write_one():
    def schedule(day: datetime.date) -> str:
        """Book the meeting room, e.g. schedule(day="2030-01-01")."""
        return "booked"

    runtime, seen = grammars_seen(["Which day?", "ok"])
    agent = Agent([schedule], runtime, grounded_arguments="auto")
    agent.run_sync("Book the room.")
    agent.run_sync("Book the room for March 14th, 2025.")
    undated, dated = seen
    assert not undated.accepts(call("schedule", day="2025-03-14")) and undated.accepts("Which day?")
    assert dated.accepts(call("schedule", day="2025-03-14"))
    assert not dated.accepts(call("schedule", day="2030-01-01"))

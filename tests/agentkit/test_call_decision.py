"""The decision to call as a step of its own: a model whose chat template takes no tools is
asked which tool the turn calls (or none) before the turn, and the turn is held to that tool."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentkit import Agent, tool
from agentkit._loop.decision import NONE, choice_grammar, choice_messages, chooses_first, read_choice
from runtimes.testing import ScriptedRuntime


@tool
def get_weather(city: str) -> dict:
    """Get the current weather in a city.

    Args:
        city: The city's name, for example "Paris".
    """
    return {"city": city, "temperature_celsius": 7.5}


@tool
def get_price(product: str) -> float:
    """Get the price of a product in US dollars."""
    return 4.35


class _Template:
    def __init__(self, takes_tools: bool):
        self.takes_tools = takes_tools


def _untaught(responses: list[str]) -> ScriptedRuntime:
    """A scripted model whose chat template takes no tools, as the default model's."""
    runtime = ScriptedRuntime(responses)
    runtime.template = _Template(takes_tools=False)  # type: ignore[attr-defined]
    return runtime


def test_a_model_untaught_in_tools_is_asked_the_choice_and_the_turn_calls_that_tool():
    runtime = _untaught([
        "get_weather",
        '{"name":"get_weather","arguments":{"city":"Oslo"}}',
        NONE,
        "It is 7.5 °C in Oslo.",
    ])
    result = Agent([get_weather, get_price], runtime=runtime).run_sync("How warm is it in Oslo?")
    assert result.output == "It is 7.5 °C in Oslo."
    assert [r.call.name for r in result.tool_calls] == ["get_weather"]
    choice, turn, second_choice, answer = runtime.calls
    assert choice.messages[-1]["content"].startswith("Request: How warm is it in Oslo?")
    assert "Results so far" in second_choice.messages[-1]["content"]
    assert turn.grammar.accepts('{"name":"get_weather","arguments":{"city":"Oslo"}}')
    assert not turn.grammar.accepts('{"name":"get_price","arguments":{"product":"pen"}}')
    assert not turn.grammar.accepts("It is warm.")  # held to the call it chose
    assert answer.grammar.accepts("It is 7.5 °C in Oslo.")
    assert result.steps == 2  # the choice is no step of its own


def test_choosing_none_leaves_the_turn_free_and_no_tool_runs():
    runtime = _untaught([NONE, "Tokyo."])
    result = Agent([get_weather, get_price], runtime=runtime).run_sync("What is the capital of Japan?")
    assert result.output == "Tokyo." and result.tool_calls == []


@pytest.mark.parametrize("runtime", [ScriptedRuntime([]), _untaught([])])
def test_only_a_known_template_without_tools_chooses_first(runtime):
    assert chooses_first(runtime) is (runtime.__dict__.get("template") is not None)
    taught = ScriptedRuntime([])
    taught.template = _Template(takes_tools=True)  # type: ignore[attr-defined]
    assert not chooses_first(taught)


def test_forced_and_required_turns_are_not_asked():
    runtime = _untaught(['{"name":"get_weather","arguments":{"city":"Oslo"}}', NONE, "7.5 °C."])
    result = Agent([get_weather, get_price], runtime=runtime, tool_choice="get_weather").run_sync("Oslo?")
    assert result.output == "7.5 °C."
    forced, choice, _ = runtime.calls  # once the forced call has succeeded, turns are "auto"
    assert forced.tools and not choice.tools


@given(st.lists(st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True), min_size=1, max_size=6, unique=True))
def test_the_choice_grammar_holds_exactly_the_names_and_none(names):
    tools = {name: tool(name=name)(lambda: 1) for name in names}
    g = choice_grammar(tools)
    for name in [*names, NONE]:
        assert g.accepts(name)
        assert read_choice(name, tools) == (name if name in tools else None)
    assert not g.accepts("")
    assert not any(g.accepts(name + "x") for name in names if name + "x" not in names and name + "x" != NONE)


def test_the_choice_prompt_shows_summaries_never_the_argument_examples():
    text = choice_messages({"get_weather": get_weather}, [{"role": "user", "content": "Oslo?"}])[-1]["content"]
    assert "Get the current weather in a city." in text
    assert "Paris" not in text



def test_a_model_asked_the_choice_is_not_sent_the_list_note_unless_it_is_the_users_own():
    from agentkit import JSON_LIST_NOTE

    runtime = _untaught(["get_weather", '{"name":"get_weather","arguments":{"city":"Oslo"}}', NONE, "7.5 °C."])
    Agent([get_weather], runtime=runtime).run_sync("Oslo?")
    assert not any(JSON_LIST_NOTE in str(m.get("content")) for r in runtime.calls for m in r.messages)
    runtime = _untaught([NONE, "Hi."])
    Agent([get_weather], runtime=runtime, tool_note="Call tools.").run_sync("Hello")
    assert runtime.calls[1].messages[0]["content"].endswith("Call tools.")

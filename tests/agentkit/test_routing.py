"""Tool routing (`Agent(tool_routing=...)`, issue #67 item 2): where the model's chat template
takes no tools, the run's first turn calls the tool the request shares the most information
with, or answers without a call where no tool stands out; the turn after a routed call answers."""

from __future__ import annotations

import asyncio
import json
import statistics
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Agent, InvalidArgument, ModelRequestFailed, Tool
from agentkit._loop.results import ANSWERED_EXAMPLE
from agentkit._loop.routing import (DECLINE_THRESHOLD, PLAIN_LINE, PLAUSIBLE_MARGIN, READS_AT_ONCE, ROUTE_THRESHOLD,
                                    Route, plausible, route, tool_line)
from runtimes import ContinuationScore, RuntimeFailure, TokenScore, Usage
from runtimes.testing import RandomRuntime, ScriptedRuntime


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"Drizzle in {city}, 7.5 degrees."


def get_price(product: str) -> float:
    """Get the price of a product in US dollars."""
    return 4.35


def no_description(x: int) -> int:
    return x


def get_forecast(city: str) -> str:
    """Get the weather forecast for a city."""
    if city != "Oslo":
        raise ValueError(f"no forecast for {city!r}")
    return "Rain tomorrow."


class RoutedScripted(ScriptedRuntime):
    """A scripted model whose template takes no tools and that scores a request after each
    routing line with the log-probability `logprobs` gives that line (0 where none)."""

    template_takes_tools = False
    scores_continuations = True

    def __init__(self, responses: list[str], logprobs: dict[str, float], fail: bool = False):
        super().__init__(responses)
        self.logprobs = logprobs
        self.fail = fail
        self.scored: list[tuple[str, str]] = []

    async def score(self, prompt: Any, continuation: str) -> ContinuationScore:
        if self.fail:
            raise RuntimeFailure("scoring broke")
        self.scored.append((prompt, continuation))
        value = next((v for k, v in self.logprobs.items() if k in prompt), 0.0)
        return ContinuationScore(continuation, [TokenScore(continuation.encode(), value)], Usage(1, 1))


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"))


WEATHER_LINE = "get the current weather"
TOOLS = [get_weather, get_price]


def test_a_request_a_tool_stands_out_for_calls_it_and_then_answers():
    rt = RoutedScripted([call("get_weather", city="Oslo"), "It drizzles in Oslo, 7.5 degrees."], {WEATHER_LINE: 10.0})
    result = Agent(TOOLS, runtime=rt).run_sync("What is the weather in Oslo?")
    assert result.output == "It drizzles in Oslo, 7.5 degrees."
    first, second = rt.calls
    assert first.grammar.accepts(call("get_weather", city="Oslo"))
    assert not first.grammar.accepts(call("get_price", product="Oslo"))  # the routed tool alone
    assert not first.grammar.accepts("It is sunny.")  # a call, not an answer
    assert not second.grammar.accepts(call("get_weather", city="Oslo"))  # the answer, not another call
    assert second.grammar.accepts("It drizzles.")
    assert {c for _, c in rt.scored} == {"What is the weather in Oslo?"}
    assert {p for p, _ in rt.scored} == {PLAIN_LINE} | {tool_line(t) for t in Agent(TOOLS).tools.values()}


FORECAST_LINE = "get the weather forecast"


def test_a_routed_call_that_fails_is_followed_once_by_the_next_plausible_tool_asked_afresh():
    rt = RoutedScripted([call("get_forecast", city="pen"), call("get_price", product="pen"), "A pen costs 4.35."],
                        {FORECAST_LINE: 10.0, "get the price": 9.0, WEATHER_LINE: 0.0})
    result = Agent([get_forecast, get_price, get_weather], runtime=rt).run_sync("What does a pen cost?")
    assert result.output == "A pen costs 4.35."
    assert [(r.call.name, r.ok) for r in result.tool_calls] == [("get_forecast", False), ("get_price", True)]
    first, second, answer = rt.calls
    assert second.grammar.accepts(call("get_price", product="pen"))
    assert not second.grammar.accepts(call("get_forecast", city="pen"))  # the next tool alone
    assert second.messages == first.messages  # the failed call and its error are not shown
    assert any(m.get("role") == "tool" and "no forecast" in m["content"] for m in result.messages)  # but kept
    assert "get_price" in answer.messages[-1]["content"] and answer.tools is None


def test_a_routed_call_falls_back_once_and_only_to_a_tool_within_the_margin():
    failing = RoutedScripted([call("get_forecast", city="pen"), call("get_price", product="pen"), "No idea."],
                             {FORECAST_LINE: 10.0, "get the price": 9.0, WEATHER_LINE: 8.5})

    def get_price(product: str) -> float:
        """Get the price of a product in US dollars."""
        raise ValueError(f"unknown product {product!r}")

    result = Agent([get_forecast, get_price, get_weather], runtime=failing).run_sync("What does a pen cost?")
    assert [r.call.name for r in result.tool_calls] == ["get_forecast", "get_price"]  # not get_weather too
    far = RoutedScripted([call("get_forecast", city="pen"), "No idea."],
                         {FORECAST_LINE: 10.0, "get the price": 10.0 - PLAUSIBLE_MARGIN - 0.5})
    result = Agent([get_forecast, get_price], runtime=far).run_sync("What does a pen cost?")
    assert [r.call.name for r in result.tool_calls] == ["get_forecast"] and result.output == "No idea."


def test_a_routed_call_that_succeeds_is_answered():
    rt = RoutedScripted([call("get_forecast", city="Oslo"), "Rain."], {FORECAST_LINE: 10.0, "get the price": 9.9})
    result = Agent([get_forecast, get_price], runtime=rt).run_sync("Will it rain in Oslo?")
    assert result.output == "Rain." and [r.call.name for r in result.tool_calls] == ["get_forecast"]


def test_a_request_no_tool_stands_out_for_is_answered_without_a_call():
    rt = RoutedScripted(["A haiku about leaves."], {})
    result = Agent(TOOLS, runtime=rt).run_sync("Write a haiku.")
    assert result.output == "A haiku about leaves."
    (only,) = rt.calls
    assert not only.grammar.accepts(call("get_weather", city="Oslo"))


@pytest.mark.parametrize("options, takes_tools", [
    ({"tool_routing": False}, False),
    ({"tool_choice": "required"}, False),
    ({"tool_choice": "get_price"}, False),
    ({"tool_routing": False}, True),
    ({"tool_choice": "required"}, True),
    ({}, None),
])
def test_a_run_is_not_routed_where_the_model_or_the_caller_decides(options, takes_tools):
    rt = RoutedScripted([call("get_price", product="pen"), "4.35 dollars."], {WEATHER_LINE: 10.0})
    rt.template_takes_tools = takes_tools
    Agent(TOOLS, runtime=rt, **options).run_sync("What does a pen cost in Oslo?")
    assert not rt.scored
    assert rt.calls[0].grammar.accepts(call("get_price", product="pen"))


def both_lines(evidence: float) -> dict[str, float]:
    """Both tools' lines `evidence` over the plain one: the best's evidence, 2e - median, is e."""
    return {WEATHER_LINE: evidence, "get the price": evidence}


@pytest.mark.parametrize("evidence", [DECLINE_THRESHOLD, DECLINE_THRESHOLD + 0.5, 10.0])
def test_a_model_that_calls_by_itself_decides_where_a_tool_may_fit(evidence):
    rt = RoutedScripted([call("get_price", product="pen"), "4.35 dollars."], both_lines(evidence))
    rt.template_takes_tools = True
    result = Agent(TOOLS, runtime=rt).run_sync("What does a pen cost?")
    assert rt.scored and result.output == "4.35 dollars."
    first = rt.calls[0]
    assert first.grammar.accepts(call("get_price", product="pen")) and first.grammar.accepts("It is 4.35.")
    assert {t["function"]["name"] for t in first.tools} == {"get_weather", "get_price"}  # its own choice, listed


@pytest.mark.parametrize("below", [PLAUSIBLE_MARGIN + 0.01, 12.0])
def test_a_model_that_calls_by_itself_is_offered_only_the_tools_near_the_best_in_its_first_turn(below):
    rt = RoutedScripted([call("get_weather", city="Oslo"), call("get_price", product="pen"), "4.35 dollars."],
                        {WEATHER_LINE: 8.0, "get the price": 8.0 - below})
    rt.template_takes_tools = True
    result = Agent(TOOLS, runtime=rt).run_sync("What is the weather in Oslo, and what does a pen cost?")
    first, second = rt.calls[:2]
    assert first.grammar.accepts(call("get_weather", city="Oslo")) and first.grammar.accepts("It drizzles.")
    assert not first.grammar.accepts(call("get_price", product="pen"))  # too far below the best
    assert {t["function"]["name"] for t in first.tools} == {"get_weather", "get_price"}  # the listing stays whole
    assert second.grammar.accepts(call("get_price", product="pen"))  # later turns: every tool
    assert [r.call.name for r in result.tool_calls] == ["get_weather", "get_price"]


@settings(max_examples=100, deadline=None)
@given(values=st.dictionaries(st.sampled_from("abcdefgh"), st.integers(-40, 40).map(float), min_size=1),
       margin=st.integers(0, 20).map(float))
def test_the_plausible_tools_are_those_within_the_margin_of_the_best(values, margin):
    offered = plausible(Route("a", values, 0.0), margin)
    best = max(values.values())
    assert offered == {name for name, v in values.items() if best - v <= margin}
    assert max(values, key=values.__getitem__) in offered  # never empty


@pytest.mark.parametrize("evidence", [DECLINE_THRESHOLD - 0.01, -5.0])
def test_a_model_that_calls_by_itself_answers_without_a_call_where_no_tool_fits(evidence):
    rt = RoutedScripted(["Tokyo."], both_lines(evidence))
    rt.template_takes_tools = True
    result = Agent(TOOLS, runtime=rt).run_sync("What is the capital of Japan?")
    (only,) = rt.calls
    assert result.output == "Tokyo." and not result.tool_calls
    assert only.tools is None  # no listing: shown tools, it writes the call it wanted as text
    assert not only.grammar.accepts(call("get_weather", city="Tokyo"))


class Counting(RoutedScripted):
    """Scores as `RoutedScripted`, after a pause, counting the reads in flight at once."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.in_flight = self.most = 0

    async def score(self, prompt: Any, continuation: str) -> ContinuationScore:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.001)
        try:
            return await super().score(prompt, continuation)
        finally:
            self.in_flight -= 1


@given(st.integers(1, 12))
def test_a_routing_decision_reads_a_few_lines_at_once_every_one_once(count):
    tools = {f"t{i}": Tool.from_function(no_description, name=f"t{i}", description=f"do thing {i}")
             for i in range(count)}
    rt = Counting([], {})
    asyncio.run(route(rt, "a request", tools))
    assert rt.most == min(READS_AT_ONCE, count + 1)
    assert sorted(p for p, _ in rt.scored) == sorted([PLAIN_LINE, *(tool_line(t) for t in tools.values())])


def test_routing_true_routes_a_model_trained_to_call():
    rt = RoutedScripted([call("get_weather", city="Oslo"), "Drizzle."], {WEATHER_LINE: 10.0})
    rt.template_takes_tools = True
    Agent(TOOLS, runtime=rt, tool_routing=True).run_sync("What is the weather in Oslo?")
    assert rt.scored and not rt.calls[0].grammar.accepts(call("get_price", product="pen"))


def test_a_runtime_that_cannot_score_is_not_routed_even_when_asked():
    rt = ScriptedRuntime([call("get_price", product="pen"), "4.35 dollars."])
    Agent(TOOLS, runtime=rt, tool_routing=True).run_sync("What does a pen cost?")
    assert rt.calls[0].grammar.accepts(call("get_price", product="pen"))


def test_a_scoring_failure_ends_the_run_with_its_messages():
    rt = RoutedScripted(["unused"], {}, fail=True)
    with pytest.raises(ModelRequestFailed, match="scoring broke") as caught:
        Agent(TOOLS, runtime=rt).run_sync("What is the weather in Oslo?")
    assert caught.value.messages[-1]["content"] == "What is the weather in Oslo?"


@pytest.mark.parametrize("value", ["yes", None, 1])
def test_tool_routing_must_be_auto_true_or_false(value):
    with pytest.raises(InvalidArgument, match="tool_routing"):
        Agent(TOOLS, tool_routing=value)


def test_a_tool_without_a_description_is_named_by_its_words():
    assert tool_line(Agent([no_description]).tools["no_description"]) == (
        "A message to a chat assistant that can no description\n")


class Fixed(RoutedScripted):
    """Scores a request after a line by the line alone (`logprobs[line]`)."""

    async def score(self, prompt: Any, continuation: str) -> ContinuationScore:
        return ContinuationScore(continuation, [TokenScore(b"x", self.logprobs[prompt])], Usage(1, 1))


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-300, 300).map(lambda n: n / 10), min_size=1, max_size=8, unique=True),
       plain=st.integers(-600, 0).map(lambda n: n / 10), threshold=st.floats(-20, 40))
def test_the_route_is_the_tool_of_most_information_where_its_evidence_reaches_the_threshold(values, plain, threshold):
    tools = {f"t{i}": Tool.from_function(no_description, name=f"t{i}", description=f"do thing {i}")
             for i in range(len(values))}
    rt = Fixed([], {PLAIN_LINE: plain, **{tool_line(t): plain + v for t, v in zip(tools.values(), values)}})
    decided = asyncio.run(route(rt, "a request", tools, threshold))
    assert list(decided.information.values()) == pytest.approx(values, abs=1e-6)
    best = max(range(len(values)), key=values.__getitem__)
    assert decided.evidence == pytest.approx(2 * values[best] - statistics.median(values), abs=1e-6)
    assert decided.tool in (f"t{best}", None) and (decided.tool is None) == (decided.evidence < threshold)


def test_the_default_threshold_is_positive_and_above_declining():
    assert ROUTE_THRESHOLD > 0 > DECLINE_THRESHOLD


def test_a_random_model_scores_for_routing_through_the_runtime():
    rt = RandomRuntime(seed=1)
    rt.template_takes_tools = False
    tools = Agent(TOOLS).tools
    decided = asyncio.run(route(rt, "What is the weather in Oslo?", tools))
    assert set(decided.information) == set(tools)
    assert decided.tool in (None, *tools)


def test_a_routed_calls_arguments_are_held_to_the_conversation():
    rt = RoutedScripted([call("get_weather", city="Oslo"), "Drizzle."], {WEATHER_LINE: 10.0})
    Agent(TOOLS, runtime=rt).run_sync("What is the weather in Oslo?")
    assert not rt.calls[0].grammar.accepts(call("get_weather", city="Paris"))  # not in the conversation
    unrouted = RoutedScripted([call("get_weather", city="Paris"), "Drizzle."], {WEATHER_LINE: 10.0})
    Agent(TOOLS, runtime=unrouted, tool_routing=False, grounded_arguments=False).run_sync("What is the weather in Oslo?")
    assert unrouted.calls[0].grammar.accepts(call("get_weather", city="Paris"))  # the agent's own setting: free


def test_a_routed_answer_is_asked_with_the_results_as_context_and_no_tool_listing():
    rt = RoutedScripted([call("get_weather", city="Oslo"), "It drizzles in Oslo, 7.5 degrees."], {WEATHER_LINE: 10.0})
    result = Agent(TOOLS, runtime=rt, system_prompt="Be brief.").run_sync("What is the weather in Oslo?")
    answer = rt.calls[1]
    assert answer.tools is None
    assert answer.messages == [
        {"role": "system", "content": "Be brief."},
        *ANSWERED_EXAMPLE,
        {"role": "user", "content": 'Context: get_weather(city="Oslo") = Drizzle in Oslo, 7.5 degrees.\n'
                                    "Question: What is the weather in Oslo?"},
    ]
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "tool", "assistant"]  # kept as they were


def test_a_refused_routed_answer_is_asked_again_with_the_context_and_the_correction():
    from agentkit import ModelRetry

    def in_celsius(answer: str) -> str:
        if "degrees" not in answer:
            raise ModelRetry("say the temperature in degrees")
        return answer

    rt = RoutedScripted([call("get_weather", city="Oslo"), "It drizzles.", "7.5 degrees."], {WEATHER_LINE: 10.0})
    result = Agent(TOOLS, runtime=rt, output_validator=in_celsius).run_sync("What is the weather in Oslo?")
    assert result.output == "7.5 degrees."
    again = rt.calls[2].messages[len(ANSWERED_EXAMPLE):]
    assert again[0] == {"role": "user", "content": 'Context: get_weather(city="Oslo") = Drizzle in Oslo, 7.5 degrees.\n'
                                                   "Question: What is the weather in Oslo?"}
    assert again[1] == {"role": "assistant", "content": "It drizzles."}
    assert again[2]["role"] == "user" and "say the temperature in degrees" in again[2]["content"]
    assert len(again) == 3


def test_a_routed_turn_makes_one_call():
    two = f'[{call("get_weather", city="Oslo")}, {call("get_weather", city="Oslo")}]'
    rt = RoutedScripted([call("get_weather", city="Oslo"), "Drizzle."], {WEATHER_LINE: 10.0})
    Agent(TOOLS, runtime=rt).run_sync("What is the weather in Oslo?")
    assert rt.calls[0].grammar.accepts(call("get_weather", city="Oslo"))
    assert not rt.calls[0].grammar.accepts(two)
    unrouted = RoutedScripted([two, "Drizzle."], {WEATHER_LINE: 10.0})
    Agent(TOOLS, runtime=unrouted, tool_routing=False).run_sync("What is the weather in Oslo?")
    assert unrouted.calls[0].grammar.accepts(two)  # the agent's own max_calls_per_turn


def test_a_forced_call_on_a_model_routing_serves_is_answered_as_a_routed_one():
    rt = RoutedScripted([call("get_weather", city="Oslo"), "It drizzles in Oslo, 7.5 degrees."], {})
    result = Agent(TOOLS, runtime=rt, tool_choice="required").run_sync("What is the weather in Oslo?")
    assert result.output == "It drizzles in Oslo, 7.5 degrees."
    assert not rt.scored  # a forced call is not routed
    answer = rt.calls[1]
    assert not answer.grammar.accepts(call("get_weather", city="Oslo"))  # the answer, not another call
    assert answer.tools is None and answer.messages[-1]["content"].startswith('Context: get_weather(city="Oslo")')
    free = RoutedScripted([call("get_weather", city="Oslo"), "It drizzles."], {})
    Agent(TOOLS, runtime=free, tool_choice="required", tool_routing=False).run_sync("What is the weather in Oslo?")
    assert free.calls[1].grammar.accepts(call("get_weather", city="Oslo"))  # may call again, as before


def test_a_forced_calls_answer_is_asked_with_the_runs_request_after_it_went_in_circles():
    failing = RoutedScripted([call("get_price", product="Oslo")] * 2 + [call("get_weather", city="Oslo"), "Drizzle."], {})

    def get_price(product: str) -> float:
        """Get the price of a product in US dollars."""
        raise ValueError(f"unknown product {product!r}")

    Agent([get_weather, get_price], runtime=failing, tool_choice="required").run_sync("What is the weather in Oslo?")
    answer = failing.calls[-1].messages
    assert answer[-1]["content"].endswith("Question: What is the weather in Oslo?")


def test_a_forced_call_written_twice_is_answered_from_the_context_alone():
    twice = f'[{call("get_weather", city="Oslo")}, {call("get_weather", city="Oslo")}]'
    rt = RoutedScripted([twice, "Drizzle."], {})
    Agent(TOOLS, runtime=rt, tool_choice="required").run_sync("What is the weather in Oslo?")
    answer = rt.calls[-1].messages
    assert answer[-1]["content"].endswith("Question: What is the weather in Oslo?")  # no note after it

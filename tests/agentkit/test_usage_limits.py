"""`UsageLimits` per run: a request or tool-call limit stops the run before the request or the
calls that would pass it; a token limit after the request that passed it; the agent's
`max_steps` and `token_budget` are the defaults a run's limits leave alone."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import (
    Agent,
    InvalidArgument,
    StepLimitExceeded,
    TokenLimitExceeded,
    UsageLimitExceeded,
    UsageLimits,
    tool,
)
from runtimes import Generation, Usage
from runtimes.testing import ScriptedRuntime

CITIES = ["Oslo", "Rome", "Lima", "Kyiv", "Pune", "Doha", "Baku", "Suva"]


def call(city: str) -> str:
    return f'{{"name":"get_weather","arguments":{{"city":"{city}"}}}}'


def weather_agent(runs: list[str], rt: ScriptedRuntime, **options: object) -> Agent[str]:
    """An agent whose calls name any city: the limits, not the conversation, decide what runs."""

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        runs.append(city)
        return f"mild in {city}"

    return Agent([get_weather], rt, **{"grounded_arguments": False, **options})  # type: ignore[arg-type]


def test_a_request_limit_stops_the_run_before_the_request_that_would_pass_it() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([call("Oslo"), "Mild."])
    with pytest.raises(UsageLimitExceeded) as info:
        weather_agent(runs, rt).run_sync("Oslo?", usage_limits=UsageLimits(request_limit=1))
    assert isinstance(info.value, StepLimitExceeded) and info.value.limit == "steps"
    assert len(rt.calls) == 1 and runs == ["Oslo"]
    assert [m["role"] for m in info.value.messages] == ["user", "assistant", "tool"]


def test_a_run_limit_replaces_the_agents_default_and_leaves_the_others() -> None:
    rt = ScriptedRuntime([call("Oslo"), call("Rome"), "Mild."])
    result = weather_agent([], rt, max_steps=1).run_sync("?", usage_limits=UsageLimits(request_limit=3))
    assert result.output == "Mild." and result.steps == 3

    rt = ScriptedRuntime([call("Oslo"), "Mild."])
    with pytest.raises(StepLimitExceeded, match="max_steps"):  # request_limit left None: max_steps holds
        weather_agent([], rt, max_steps=1).run_sync("?", usage_limits=UsageLimits(tool_calls_limit=5))


def test_a_tool_call_limit_runs_none_of_a_turn_that_would_pass_it() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([call("Oslo"), call("Rome") + "\n" + call("Lima"), "Mild."])
    with pytest.raises(UsageLimitExceeded) as info:
        weather_agent(runs, rt).run_sync("?", usage_limits=UsageLimits(tool_calls_limit=2))
    assert info.value.limit == "tool_calls"
    assert runs == ["Oslo"]  # the second turn's two calls would make three: neither ran
    assert info.value.usage.tool_runs == 1


def test_calls_that_run_nothing_do_not_count_against_the_tool_call_limit() -> None:
    runs: list[str] = []
    rt = ScriptedRuntime([call("Oslo") + "\n" + call("Oslo"), "Mild."])  # the duplicate is answered once
    result = weather_agent(runs, rt).run_sync("?", usage_limits=UsageLimits(tool_calls_limit=1))
    assert result.output == "Mild." and runs == ["Oslo"]


def scripted(usages: list[tuple[int, int]]) -> ScriptedRuntime:
    """Turns of calls, each reporting its own prompt and completion tokens, then an answer."""
    turns = [Generation(call(c), "grammar_complete", Usage(p, n)) for c, (p, n) in zip(CITIES, usages)]
    return ScriptedRuntime([*turns, Generation("Mild.", "stop", Usage(1, 1))])


@pytest.mark.parametrize(
    ("limits", "name", "requests"),
    [
        (UsageLimits(input_tokens_limit=150), "input_tokens", 2),
        (UsageLimits(output_tokens_limit=25), "output_tokens", 3),
        (UsageLimits(total_tokens_limit=210), "total_tokens", 2),
    ],
)
def test_a_token_limit_stops_the_run_after_the_request_that_passed_it(
    limits: UsageLimits, name: str, requests: int
) -> None:
    runs: list[str] = []
    rt = scripted([(100, 10), (100, 10), (100, 10)])
    with pytest.raises(TokenLimitExceeded) as info:
        weather_agent(runs, rt).run_sync("?", usage_limits=limits)
    assert info.value.limit == name
    assert len(rt.calls) == requests and len(runs) == requests - 1  # the passing turn's call did not run
    assert info.value.usage.prompt_tokens == 100 * requests


def test_the_output_token_limit_holds_each_turn_to_what_is_left() -> None:
    rt = scripted([(10, 10), (10, 10), (10, 10)])
    with pytest.raises(TokenLimitExceeded):
        weather_agent([], rt, token_budget=1000).run_sync("?", usage_limits=UsageLimits(output_tokens_limit=25))
    assert [c.max_tokens for c in rt.calls] == [25, 15, 5]


def test_the_agents_token_budget_is_the_default_output_token_limit() -> None:
    rt = scripted([(10, 10), (10, 10)])
    with pytest.raises(TokenLimitExceeded) as info:
        weather_agent([], rt, token_budget=15).run_sync("?")
    assert info.value.limit == "output_tokens" and "token_budget" in str(info.value)


async def test_streamed_runs_take_limits_too() -> None:
    rt = ScriptedRuntime([call("Oslo"), "Mild."])
    with pytest.raises(StepLimitExceeded):
        async for _ in weather_agent([], rt).run_stream("?", usage_limits=UsageLimits(request_limit=1)):
            pass


def test_sync_streamed_runs_take_limits_too() -> None:
    rt = ScriptedRuntime([call("Oslo"), "Mild."])
    with pytest.raises(UsageLimitExceeded):
        list(weather_agent([], rt).run_stream_sync("?", usage_limits=UsageLimits(tool_calls_limit=0)))


@pytest.mark.parametrize("value", [-1, 1.5, True, "3"])
def test_a_limit_that_is_no_count_is_refused_by_name(value: object) -> None:
    with pytest.raises(InvalidArgument) as info:
        UsageLimits(request_limit=value)  # type: ignore[arg-type]
    assert info.value.argument == "usage_limits.request_limit"
    with pytest.raises(InvalidArgument) as bad:
        Agent([]).run_sync("?", usage_limits={"request_limit": 1})  # type: ignore[arg-type]
    assert bad.value.argument == "usage_limits"


@settings(max_examples=25, deadline=None)
@given(turns=st.lists(st.integers(1, 3), max_size=4), request_limit=st.integers(0, 6), calls_limit=st.integers(0, 8))
def test_no_run_passes_its_request_or_call_limit(turns: list[int], request_limit: int, calls_limit: int) -> None:
    """Turns of 1 to 3 distinct calls, then an answer: the run ends with its answer exactly where
    it fits both limits; otherwise it stops before the request or the calls that would pass one,
    having spent no more than either allows."""
    cities = iter([f"{city} {n}" for n in (1, 2) for city in CITIES])  # 16 names: every call distinct
    script = ["\n".join(call(next(cities)) for _ in range(n)) for n in turns] + ["Mild."]
    runs: list[str] = []
    rt = ScriptedRuntime(script)
    agent = weather_agent(runs, rt, max_calls_per_turn=3, answer_on_repeat=False)
    limits = UsageLimits(request_limit=request_limit, tool_calls_limit=calls_limit)
    fits = len(script) <= request_limit and sum(turns) <= calls_limit
    try:
        result = agent.run_sync("?", usage_limits=limits)
    except UsageLimitExceeded as error:
        assert not fits
        assert error.limit in ("steps", "tool_calls")
    else:
        assert fits and result.output == "Mild."
    assert len(rt.calls) <= request_limit and len(runs) <= calls_limit

"""`validation_context=` on a run reaches the pydantic validators of tool arguments and of the
output as `info.context`, in every way of running, and on resuming approved calls."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, BaseModel, ValidationInfo, field_validator

from agentkit import Agent, FinalResult, OutputValidationError, tool
from runtimes.testing import ScriptedRuntime

SEEN: list[Any] = []


def known_city(city: str, info: ValidationInfo) -> str:
    SEEN.append(info.context)
    if info.context is not None and city not in info.context["cities"]:
        raise ValueError(f"{city} is not one of {sorted(info.context['cities'])}")
    return city


@tool
def get_weather(city: Annotated[str, AfterValidator(known_city)]) -> str:
    """The weather in a city."""
    return f"mild in {city}"


@tool(requires_approval=True)
def book(city: Annotated[str, AfterValidator(known_city)]) -> str:
    """Book a trip to a city."""
    return f"booked {city}"


class Trip(BaseModel):
    city: str

    @field_validator("city")
    @classmethod
    def in_context(cls, city: str, info: ValidationInfo) -> str:
        SEEN.append(info.context)
        if info.context is not None and city not in info.context["cities"]:
            raise ValueError("not a city we serve")
        return city


def call(name: str, city: str) -> str:
    return f'{{"name":"{name}","arguments":{{"city":"{city}"}}}}'


@pytest.fixture(autouse=True)
def _clear() -> None:
    SEEN.clear()


def test_tool_arguments_see_the_runs_context() -> None:
    rt = ScriptedRuntime([call("get_weather", "Atlantis"), call("get_weather", "Oslo"), "Mild."])
    context = {"cities": {"Oslo"}}
    result = Agent([get_weather], rt).run_sync("Is it mild in Atlantis, or in Oslo?", validation_context=context)
    first, second = result.tool_calls
    assert not first.ok and "Atlantis is not one of ['Oslo']" in str(first.error)
    assert second.result == "mild in Oslo"
    assert SEEN == [context, context]


def test_without_a_context_validators_see_none() -> None:
    rt = ScriptedRuntime([call("get_weather", "Atlantis"), "Mild."])
    Agent([get_weather], rt).run_sync("Is it mild in Atlantis?")
    assert SEEN == [None]


def test_the_output_sees_the_runs_context() -> None:
    context = {"cities": {"Oslo"}}
    rt = ScriptedRuntime(['{"city":"Atlantis"}', '{"city":"Oslo"}'])
    result = Agent([], rt, output_type=Trip).run_sync("?", validation_context=context)
    assert SEEN == [context, context] and result.output.city == "Oslo"
    rt = ScriptedRuntime(['{"city":"Atlantis"}'])
    with pytest.raises(OutputValidationError):
        Agent([], rt, output_type=Trip, max_retries=0).run_sync("?", validation_context=context)


async def test_async_and_streamed_runs_pass_it_on() -> None:
    context = {"cities": {"Oslo"}}
    rt = ScriptedRuntime([call("get_weather", "Oslo"), '{"city":"Oslo"}'] * 2)
    agent = Agent([get_weather], rt, output_type=Trip)
    assert (await agent.run("A trip to Oslo?", validation_context=context)).output.city == "Oslo"
    events = [e async for e in agent.run_stream("A trip to Oslo?", validation_context=context)]
    assert isinstance(events[-1], FinalResult)
    assert SEEN == [context] * 4


def test_sync_streams_and_resumed_calls_pass_it_on() -> None:
    context = {"cities": {"Oslo"}}
    rt = ScriptedRuntime([call("book", "Oslo"), "Booked."])
    agent = Agent([book], rt)
    paused = [e for e in agent.run_stream_sync("Book Oslo.", validation_context=context) if isinstance(e, FinalResult)][0].result
    SEEN.clear()
    done = agent.run_sync(message_history=paused.messages, validation_context=context,
                          approvals={p.id: p.approve() for p in paused.pending})
    assert done.output == "Booked." and SEEN and all(c == context for c in SEEN)

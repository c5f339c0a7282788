"""The real default model (SmolLM2-135M on llama.cpp): structure and validity, not smartness."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

import grammar
from agentkit import Agent, IncompleteOutput, RunError, TextDelta, ToolArgumentsError, extract, tool

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def runtime(smollm2_gguf: Path):  # type: ignore[no-untyped-def]
    pytest.importorskip("llama_cpp")
    import runtimes

    return runtimes.default()


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]
    email: str | None = None


@tool
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, object]:
    """Get the current weather in a city.

    Args:
        city: The city name.
        unit: Temperature unit.
    """
    return {"city": city, "temperature": 18 if unit == "celsius" else 64, "unit": unit}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_extract_gives_a_person_or_a_typed_error(runtime) -> None:  # type: ignore[no-untyped-def]
    try:
        person = extract(Person, "Ann Lee is 31. She likes chess.", runtime=runtime, max_tokens=64)
    except IncompleteOutput as error:
        assert error.text and error.messages
        return
    assert isinstance(person, Person)
    assert isinstance(person.age, int) and all(isinstance(t, str) for t in person.tags)


def test_every_constrained_call_parses_and_validates(runtime) -> None:  # type: ignore[no-untyped-def]
    tools = {t.name: t for t in (get_weather, add)}
    g = grammar.tool_calls([t.tool_schema() for t in tools.values()], envelope=runtime.tool_call_envelope, lenient=True)
    prompts = ["What is the weather in Paris?", "Add 2 and 40."]
    for prompt in prompts:
        generation = asyncio.run(runtime.generate(
            [{"role": "user", "content": prompt}],
            grammar=g,
            tools=[t.to_openai() for t in tools.values()],
            max_tokens=48,
        ))
        [call] = grammar.parse_tool_calls(generation.text, envelope=runtime.tool_call_envelope) or [None]
        assert call is not None, generation.text
        args = tools[call["name"]].validate(call["arguments"])
        assert isinstance(args, tools[call["name"]].args_type)


def test_agent_with_required_tool_call(runtime) -> None:  # type: ignore[no-untyped-def]
    agent = Agent([get_weather, add], runtime, tool_choice="required", max_steps=2, max_tokens=48)
    try:
        result = agent.run_sync("What is the weather in Paris?")
    except RunError as error:
        assert error.messages[0]["role"] == "user"
        calls = [m for m in error.messages if m["role"] == "tool"]
        assert calls, "a required tool call must have been made before any limit"
        return
    assert result.tool_calls and result.tool_calls[0].ok
    for record in result.tool_calls:
        assert not isinstance(record.error, ToolArgumentsError)
    assert isinstance(result.output, str) and result.output.strip()


def test_stream_pieces_make_up_the_answer(runtime) -> None:  # type: ignore[no-untyped-def]
    pieces: list[str] = []

    async def collect() -> str:
        async for event in Agent([], runtime, max_tokens=24).run_stream("Say hello."):
            if isinstance(event, TextDelta):
                pieces.append(event.text)
            else:
                return event.result.output  # type: ignore[union-attr]
        raise AssertionError("no final result")

    try:
        answer = asyncio.run(collect())
    except IncompleteOutput as error:  # a 24-token budget may end the answer first
        answer = error.text
    assert pieces and "".join(pieces) == answer


def test_required_tool_choice_ends_with_an_answer_and_one_tool_run(runtime) -> None:  # type: ignore[no-untyped-def]
    """The loop of issue 26: this model repeats a call whose result it holds; the agent runs it
    once, answers the repeats from that result, then holds the next turn to a text answer."""
    runs: list[tuple[str, str]] = []

    @tool(name="get_weather")
    def current_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        """Current weather for a city.

        Args:
            city: The city name.
            unit: "c" for Celsius, "f" for Fahrenheit.
        """
        runs.append((city, unit))
        return f"12 degrees {unit} and cloudy in {city}"

    agent = Agent(tools=[current_weather], runtime=runtime, tool_choice="required")
    result = agent.run_sync("What is the weather in Paris right now? Use the tool.")
    assert isinstance(result.output, str) and result.output.strip()
    assert result.steps <= 3
    assert len(runs) == 1 == result.usage.tool_runs
    assert result.tool_calls[0].ok

"""A weather agent with two tools: a lookup and a unit conversion.

    python examples/weather_agent.py ["What is the temperature in Paris?"]

Runs on the embedded default model (SmolLM2-135M on llama.cpp). Every tool call the model
makes is held by a grammar built from the type hints below, so each one parses and validates.
This model was not trained to call tools: the agent routes the request to the tool it is
about (`tool_routing`, see docs/agents.md), holds the call's arguments to what the user wrote
(the city is one the question names), and asks for the answer from the tool's result. A
request that needs two calls in turn ("..., in Fahrenheit?": the weather, then the
conversion) gets the first only, on this model; what it answers is still the model's.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Literal

from agentkit import Agent, FinalResult, RunError, TextDelta, ToolCallEvent, ToolResultEvent, tool

FORECASTS = {
    "paris": (18.5, "light rain"),
    "london": (14.0, "overcast"),
    "tokyo": (24.0, "sunny"),
    "new york": (21.0, "clear"),
}


@tool
def get_weather(city: str) -> dict[str, object]:
    """Get today's weather for a city.

    Args:
        city: The city's name in English, for example "Paris".
    """
    temperature, sky = FORECASTS.get(city.strip().lower(), (20.0, "unknown"))
    return {"city": city, "temperature_celsius": temperature, "sky": sky}


@tool
async def convert_temperature(celsius: float, to: Literal["fahrenheit", "kelvin"]) -> float:
    """Convert a temperature from degrees Celsius.

    Args:
        celsius: The temperature in degrees Celsius.
        to: The unit to convert to.
    """
    return round(celsius * 9 / 5 + 32 if to == "fahrenheit" else celsius + 273.15, 2)


agent = Agent(
    [get_weather, convert_temperature],
    system_prompt="You are a weather assistant. Use the tools, then answer in one short sentence.",
    max_steps=4,
    max_tokens=160,
)


async def main(question: str) -> None:
    print(f"user: {question}")
    try:
        async for event in agent.run_stream(question):
            if isinstance(event, ToolCallEvent):
                print(f"call: {event.call.name}({event.call.arguments})")
            elif isinstance(event, ToolResultEvent):
                outcome = event.record.result if event.record.ok else f"error: {event.record.error}"
                print(f"  -> {outcome}")
            elif isinstance(event, FinalResult):
                print(f"answer: {event.result.output.strip()}")
                print(f"({event.result.steps} model turns, {event.result.usage.completion_tokens} tokens generated)")
            elif isinstance(event, TextDelta):
                pass  # print(event.text, end="") would stream each turn's text as it is written
    except RunError as error:
        print(f"stopped: {type(error).__name__}: {error}")
        print(f"({len(error.messages)} messages so far are kept on the error)")


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is the temperature in Paris?"))

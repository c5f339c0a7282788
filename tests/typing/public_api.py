"""A program written against the public API, type-checked with `mypy --strict` (never run).

`tests/test_typing.py` runs the check. `assert_type` pins what the public signatures give back,
so a signature that degrades to `Any` fails the check instead of passing silently.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Annotated, Any, assert_type

import numpy as np
from pydantic import BaseModel, Field

import agentkit
import grammar
import runtimes
from agentkit import Agent, FieldConstraints, RunResult, Tool, ToolArgumentsError, Violation, extract, tool
from grammar import CompiledGrammar, Grammar, Matcher, TokenMask, Vocabulary
from runtimes import Generation, LlamaCpp, Runtime
from runtimes.testing import ScriptedRuntime


class Person(BaseModel):
    name: str
    age: Annotated[int, Field(ge=0)]


@tool
def get_weather(city: str, days: int = 1) -> str:
    """The forecast for a city.

    Args:
        city: The city's name.
        days: How many days ahead.
    """
    return f"{city}: sunny for {days} days"


@tool(name="lookup", strict=True, timeout=5.0)
async def lookup(query: str) -> list[str]:
    """Search."""
    return [query]


def agent_features(rt: Runtime) -> None:
    """Per-run settings, asking again, approval, history, partial outputs and sync streams."""

    def adult(person: Person) -> Person:
        if person.age < 18:
            raise agentkit.ModelRetry("an adult, please")
        return person

    def costly(call: agentkit.PendingCall) -> bool:
        return call.tool == "get_weather"

    agent = Agent([get_weather], rt, output_type=Person, output_validator=adult, requires_approval=costly, top_p=0.9)
    settings: agentkit.ModelSettings = {"temperature": 0.2, "seed": 1}
    paused = agent.run_sync("Who?", model_settings=settings, tool_choice="get_weather", extra_tools=[lookup])
    pending: list[agentkit.PendingCall] = paused.pending
    retries: list[agentkit.RetryRecord] = paused.retries
    stored: str = agentkit.messages_to_json(paused.messages)
    history: list[agentkit.Message] = agentkit.messages_from_json(stored)
    done = agent.run_sync(message_history=history, approvals={p.id: p.approve() for p in pending})
    assert_type(done, RunResult[Person])
    for event in agent.run_stream_sync("Who?", allowed_tools=["get_weather"]):
        if isinstance(event, agentkit.PartialOutput):
            print(event.value, event.complete)
    for value in agentkit.stream_extract(Person, "Ann is 31.", runtime=rt, max_tokens=64):
        print(value)
    print(retries, agentkit.extract(Person, "Ann", runtime=rt, max_retries=0, output_validator=adult))
    run_limits(rt)


def run_limits(rt: Runtime) -> None:
    """Usage limits, an override for a block, a prompt made per run, a validation context,
    a tool's own retries, and the one error tree."""

    def prompt(ctx: agentkit.RunContext[str]) -> str:
        return f"The user is {ctx.deps}."

    async def async_prompt(ctx: agentkit.RunContext[str]) -> str:
        return "Be brief."

    @tool(retries=3)
    def lookup_city(city: str) -> str:
        """Look a city up."""
        return city

    own_retries: int | None = lookup_city.retries
    built: Tool = Tool(get_weather.fn, retries=1)
    agent = Agent([lookup_city, built], rt, system_prompt=prompt, output_type=Person)
    Agent([], rt, system_prompt=async_prompt)
    limits = agentkit.UsageLimits(request_limit=3, tool_calls_limit=2, input_tokens_limit=10_000,
                                  output_tokens_limit=500, total_tokens_limit=10_500)
    with agent.override(runtime=ScriptedRuntime(['{"name":"Ann","age":31}']), model_settings={"temperature": 0.0}):
        try:
            result = agent.run_sync("Who?", deps="Ann", usage_limits=limits, validation_context={"strict": True})
            assert_type(result, RunResult[Person])
        except agentkit.UsageLimitExceeded as exc:
            which: str = exc.limit
            print(which)
        except agentkit.RunError as exc:
            if isinstance(exc, agentkit.OutputRetriesExceeded):
                print(exc.violations, exc.messages)
    for event in agent.run_stream_sync("Who?", usage_limits=limits, validation_context=None):
        print(event)
    print(own_retries, limits.request_limit)


def tools_and_agents(rt: Runtime) -> None:
    assert_type(get_weather, Tool)
    assert_type(lookup, Tool)
    schema: dict[str, Any] = get_weather.schema
    constraints: FieldConstraints = get_weather.constraints["city"]
    assert_type(get_weather.grammar, Grammar)
    print(schema, constraints.after_decoding)
    try:
        get_weather.validate({"city": 3})
    except ToolArgumentsError as exc:
        violations: list[Violation] = exc.violations
        print([(v.field, v.keyword, v.enforced_by) for v in violations])

    agent = Agent([get_weather, lookup], rt, system_prompt="Be brief.", max_steps=4)
    listing: Agent[str] = Agent([get_weather], rt, tool_prompt="python")
    print(listing.tool_prompt, runtimes.tool_instructions([], "python"))
    result = agent.run_sync("Weather in Oslo?")
    assert_type(result, RunResult[str])
    typed = Agent([get_weather], rt, output_type=Person)
    person_result = asyncio.run(typed.run("Who?"))
    assert_type(person_result.output, Person)
    print(person_result.usage, person_result.messages)
    maybe = Agent([], rt, output_type=int | None)
    assert_type(maybe, Agent[Any])

    agent_features(rt)
    person = extract(Person, "Ann is 31.", runtime=rt)
    assert_type(person, Person)
    ages = extract(list[int], "1, 2 and 3", runtime=rt)
    print(person.name, ages)
    scored = extract(Person, "Ann is 31.", runtime=rt, confidence=True)
    assert_type(scored, agentkit.Extraction[Person])
    assert_type(scored.value, Person)
    for pointer, field in (scored.fields or {}).items():
        assert_type(field, agentkit.FieldConfidence)
        print(pointer, field.probability, field.min_token_probability, field.masked_mass)
    print(scored.doubtful(0.5), scored.missing)
    extraction_spellings(rt)


def forecast(city: str, days: int = 1) -> str:
    """The forecast for a city."""
    return city


def extraction_spellings(rt: Runtime) -> None:
    """The bare name sync, the `a` prefix async; details, usage, validation context, lists item by item."""
    detailed = extract(Person, "Ann is 31.", runtime=rt, details=True, validation_context={"oldest": 120})
    assert_type(detailed, agentkit.Extraction[Person])
    assert_type(detailed.usage, runtimes.Usage)
    assert_type(extract(Person, "Ann is 31.", runtime=rt, details=False), Person)
    assert_type(extract(Person, "Ann", runtime=rt, details=True, confidence=True), agentkit.Extraction[Person])
    for person in agentkit.extract_iter(Person, "Ann is 31, Bob 40.", runtime=rt, validation_context=None):
        assert_type(person, Person)
    assert_type(agentkit.extract_iter(int | None, "1, none", runtime=rt), Iterator[Any])
    built = Tool(forecast)
    assert_type(built, Tool)
    assert_type(Tool(forecast, name="weather", timeout=2.0, requires_approval=True), Tool)

    async def in_async_code() -> None:
        found = await agentkit.aextract(Person, "Ann is 31.", runtime=rt, details=True)
        assert_type(found, agentkit.Extraction[Person])
        async for person in agentkit.aextract_iter(Person, "Ann is 31.", runtime=rt):
            assert_type(person, Person)
        async for value in agentkit.astream_extract(Person, "Ann is 31.", runtime=rt):
            print(value)

    asyncio.run(in_async_code())


def grammars(vocab: Vocabulary) -> None:
    g = grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert_type(g, Grammar)
    assert_type(g.accepts('{"a":1}'), bool)
    print(grammar.from_regex(r"\d+").to_gbnf(), grammar.any_json(), grammar.arguments({"type": "object"}))
    calls = grammar.tool_calls([grammar.ToolSchema("f", {"type": "object"})], max_calls=2)
    assert_type(calls, Grammar)
    listed = grammar.tool_calls([grammar.ToolSchema("f", {"type": "object"})], envelope="python")
    assert_type(grammar.parse_tool_calls("[f()]", envelope="python", names=["f"]), list[dict[str, Any]] | None)
    assert_type(listed, Grammar)
    compiled = grammar.compile(g, vocab)
    assert_type(compiled, CompiledGrammar)
    matcher = Matcher(compiled, stop_when_complete=True)
    mask = matcher.next_token_mask()
    assert_type(mask, TokenMask)
    logits = np.zeros(vocab.size, dtype=np.float32)
    mask.apply(logits)
    token: int = mask.argmax(logits)
    assert_type(mask.allows(token), bool)
    assert_type(matcher.accept_token(token), bool)
    assert_type(matcher.is_complete(), bool)
    bitmask = grammar.allocate_token_bitmask(1, vocab.size)
    matcher.fill_next_token_bitmask(bitmask, 0)
    assert_type(matcher.fork(), Matcher)
    matcher.rollback(1)
    print(grammar.__version__, agentkit.__version__, runtimes.__version__)


def models() -> None:
    logging.getLogger("runtimes").setLevel(logging.INFO)
    rt = runtimes.default()
    assert_type(rt, LlamaCpp)
    vocab: Vocabulary = rt.vocabulary
    grammars(vocab)
    own = LlamaCpp(runtimes.default_model_path(), n_threads=2)
    generation = own.generate_sync("Say hi.", max_tokens=8)
    assert_type(generation, Generation)
    print(generation.text, generation.finish_reason, generation.usage.completion_tokens)
    tools_and_agents(ScriptedRuntime(['{"name":"Ann","age":31}']))

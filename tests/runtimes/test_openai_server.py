"""The HTTP runtime against a real OpenAI-compatible server: llama-cpp-python's, on 127.0.0.1,
serving the default model. `AGENTKIT_SERVER_GENERATIONS` sets how many constrained
generations run (default 8)."""

from __future__ import annotations

import asyncio
import json
import os

import jsonschema
import pytest
from runtime_cases import SCHEMAS, cases

import grammar
from runtimes import OpenAICompatible

pytestmark = [pytest.mark.server, pytest.mark.model]

GENERATIONS = int(os.environ.get("AGENTKIT_SERVER_GENERATIONS", "8"))


def chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("name, prompt, seed", cases(GENERATIONS))
async def test_constrained_generations_parse_and_validate(llama_server, name, prompt, seed):
    schema = SCHEMAS[name]
    async with OpenAICompatible(llama_server, model="smollm2", timeout=120) as rt:
        gen = await rt.generate(chat(prompt), grammar=grammar.from_json_schema(schema), max_tokens=256,
                                temperature=0.7, top_p=0.95, seed=seed)
    assert gen.finish_reason == "grammar_complete", gen
    jsonschema.validate(json.loads(gen.text), schema)
    assert gen.usage.completion_tokens > 0


async def test_a_constrained_stream_validates(llama_server):
    schema = SCHEMAS["order"]
    async with OpenAICompatible(llama_server, model="smollm2", timeout=120) as rt:
        stream = rt.stream(chat("Write an order for two books."), grammar=grammar.from_json_schema(schema), max_tokens=256)
        text = "".join([piece async for piece in stream])
    assert stream.generation.finish_reason == "grammar_complete"
    jsonschema.validate(json.loads(text), schema)


async def test_a_budget_too_small_is_length(llama_server):
    async with OpenAICompatible(llama_server, model="smollm2", timeout=120) as rt:
        gen = await rt.generate(chat("A person."), grammar=grammar.from_json_schema(SCHEMAS["person"]), max_tokens=3)
    assert gen.finish_reason == "length"


async def test_a_hundred_concurrent_requests_all_complete(llama_server):
    g = grammar.from_json_schema(SCHEMAS["answer"])
    async with OpenAICompatible(llama_server, model="smollm2", timeout=600, max_connections=32) as rt:
        results = await asyncio.gather(
            *(rt.generate(chat(f"Question {i}: is {i} even?"), grammar=g, max_tokens=6) for i in range(100))
        )
    assert len(results) == 100
    assert all(r.finish_reason == "grammar_complete" and json.loads(r.text) in ("yes", "no", "maybe") for r in results)
    assert all(r.usage.prompt_tokens > 0 for r in results)

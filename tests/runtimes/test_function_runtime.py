"""`FunctionRuntime`: answers decided by a function of the conversation, held to the request
as `ScriptedRuntime`'s are, and an agent that runs a tool and answers from its result."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import grammar
from agentkit import Agent, ModelRequestFailed, aextract, tool
from runtimes import Generation, GrammarIgnored, InvalidRequest, RuntimeFailure, Usage
from runtimes.testing import FunctionRuntime, RequestInfo

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}


class Count(BaseModel):
    n: int


async def test_a_sync_function_sees_the_messages_and_the_request() -> None:
    seen: list[tuple[Any, RequestInfo]] = []

    def answer(messages: Any, info: RequestInfo) -> str:
        seen.append((messages, info))
        return '{"n":3}'

    rt = FunctionRuntime(answer)
    g = grammar.from_json_schema(SCHEMA)
    generation = await rt.generate([{"role": "user", "content": "three"}], grammar=g, max_tokens=40, seed=7)
    assert generation.text == '{"n":3}' and generation.finish_reason == "grammar_complete"
    (messages, info), = seen
    assert messages[-1]["content"] == "three"
    assert (info.grammar, info.max_tokens, info.seed, info.call) == (g, 40, 7, 1)


async def test_an_async_function_answers_and_a_stream_gives_the_same_text() -> None:
    async def answer(messages: Any, info: RequestInfo) -> str:
        return f'{{"n":{info.call}}}'

    rt = FunctionRuntime(answer)
    assert (await rt.generate("x")).text == '{"n":1}'
    stream = rt.stream("x")
    pieces = [piece async for piece in stream]
    assert "".join(pieces) == '{"n":2}' == stream.generation.text


async def test_an_answer_the_grammar_rejects_is_grammar_ignored_and_a_long_one_is_cut() -> None:
    rt = FunctionRuntime(lambda messages, info: '{"n":"three"}')
    with pytest.raises(GrammarIgnored):
        await rt.generate("x", grammar=grammar.from_json_schema(SCHEMA))
    cut = await FunctionRuntime(lambda m, i: "é" * 10).generate("x", max_tokens=5)
    assert (cut.text, cut.finish_reason) == ("éé", "length")


async def test_a_generation_is_given_as_it_is() -> None:
    made = Generation('{"n":', "length", Usage(1, 2))
    assert await FunctionRuntime(lambda m, i: made).generate("x") is made


@given(st.one_of(st.integers(), st.none(), st.lists(st.text()), st.binary()))
def test_anything_but_a_text_or_generation_is_a_runtime_failure(value: object) -> None:
    import asyncio
    with pytest.raises(RuntimeFailure, match="not the answer's text"):
        asyncio.run(FunctionRuntime(lambda m, i: value).generate("x"))


def test_a_function_is_required() -> None:
    with pytest.raises(InvalidRequest, match="fn"):
        FunctionRuntime("not a function")  # type: ignore[arg-type]


async def test_extract_through_a_function() -> None:
    assert await aextract(Count, "four", runtime=FunctionRuntime(lambda m, i: '{"n":4}')) == Count(n=4)


async def test_an_agent_runs_the_tool_the_function_calls_and_answers_from_its_result() -> None:
    @tool
    def double(n: int) -> int:
        """Double a number."""
        return 2 * n

    def answer(messages: Any, info: RequestInfo) -> str:
        results = [m for m in messages if m["role"] == "tool"]
        if not results:
            return json.dumps([{"name": "double", "arguments": {"n": 21}}])
        return f"The answer is {results[-1]['content']}."

    result = await Agent([double], runtime=FunctionRuntime(answer)).run("Double 21.")
    assert [c.result for c in result.tool_calls] == [42]
    assert result.output == "The answer is 42."


async def test_what_the_function_raises_keeps_the_runs_messages() -> None:
    def answer(messages: Any, info: RequestInfo) -> str:
        raise ValueError("no answer")

    with pytest.raises(ModelRequestFailed) as caught:
        await Agent([], runtime=FunctionRuntime(answer)).run("hi")
    assert caught.value.messages and isinstance(caught.value.__cause__, ValueError)

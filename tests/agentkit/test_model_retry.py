"""Asking again: `ModelRetry` from a tool or an output validator, and `extract`'s corrections,
each counted against `max_retries` and recorded with the turn that fixed it."""

from __future__ import annotations

from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel

from agentkit import (
    Agent,
    InvalidArgument,
    ModelRetry,
    OutputValidationError,
    RetryRecord,
    ToolRetriesExceeded,
    aextract,
    extract,
    tool,
)
from runtimes.testing import ScriptedRuntime


def call(name: str, arguments: str) -> str:
    return f'{{"name":"{name}","arguments":{arguments}}}'


@tool
def find_user(name: str) -> str:
    """Find a user by full name."""
    if " " not in name:
        raise ModelRetry(f"{name!r} is not a full name; give first and last name")
    return f"user {name}"


class Answer(BaseModel):
    city: str


async def test_a_tools_model_retry_goes_back_and_a_later_call_fixes_it() -> None:
    rt = ScriptedRuntime([call("find_user", '{"name":"Ann"}'), call("find_user", '{"name":"Ann Lee"}'), "Found."])
    result = await Agent([find_user], rt).run("Find Ann Lee")
    assert result.output == "Found."
    first, second = result.tool_calls
    assert isinstance(first.error, ModelRetry) and second.result == "user Ann Lee"
    told = result.messages[2]["content"]
    assert "'Ann' is not a full name" in told and "Fix this and try again." in told
    assert result.retries == [RetryRecord(1, "find_user", "model_retry", told, first.call.id, 2, second.call.id)]


@given(retries=st.integers(0, 3))
@settings(max_examples=8, deadline=None)
def test_a_tools_model_retries_count_against_max_retries(retries: int) -> None:
    rt = ScriptedRuntime([call("find_user", '{"name":"Ann"}')] * (retries + 1))
    with pytest.raises(ToolRetriesExceeded) as info:
        Agent([find_user], rt, max_retries=retries, answer_on_repeat=False).run_sync("Find Ann")
    assert isinstance(info.value.error, ModelRetry)
    assert len(rt.calls) == retries + 1 and rt.responses == []
    assert "asked for a retry too often" in str(info.value)


async def test_an_output_validator_asks_again_and_the_record_says_which_turn_fixed_it() -> None:
    seen = []

    async def known_city(answer: Answer) -> Answer:
        seen.append(answer.city)
        if answer.city not in {"Paris", "Oslo"}:
            raise ModelRetry(f"{answer.city} is not a city I know")
        return Answer(city=answer.city.upper())

    rt = ScriptedRuntime(['{"city":"Atlantis"}', '{"city":"Oslo"}'])
    result = await Agent([], rt, output_type=Answer, output_validator=known_city).run("Where?")
    assert result.output == Answer(city="OSLO") and seen == ["Atlantis", "Oslo"]
    [retry] = result.retries
    assert (retry.step, retry.subject, retry.kind, retry.fixed_at) == (1, "output", "model_retry", 2)
    assert [m["role"] for m in result.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert "Atlantis is not a city I know" in result.messages[3]["content"]


async def test_a_text_answers_validator_and_the_limit() -> None:
    def polite(text: str) -> str:
        if "please" not in text:
            raise ModelRetry("say please")
        return text

    rt = ScriptedRuntime(["No.", "No.", "No."])
    with pytest.raises(OutputValidationError) as info:
        await Agent([], rt, max_retries=2, output_validator=polite).run("Ask")
    assert [v.keyword for v in info.value.violations] == ["output_validator"]
    assert len(rt.calls) == 3
    ok = await Agent([], ScriptedRuntime(["No.", "Yes please."]), output_validator=polite).run("Ask")
    assert ok.output == "Yes please." and ok.retries[0].fixed_at == 2


async def test_a_validation_failure_is_recorded_and_fixed() -> None:
    class Even(BaseModel):
        n: Annotated[int, AfterValidator(lambda n: n if n % 2 == 0 else (_ for _ in ()).throw(ValueError("odd")))]

    rt = ScriptedRuntime(['{"n":3}', '{"n":4}'])
    result = await Agent([], rt, output_type=Even).run("Even?")
    assert result.output.n == 4
    assert [(r.kind, r.fixed_at) for r in result.retries] == [("validation", 2)]


def _even(n: int) -> int:
    if n % 2:
        raise ValueError("must be even")
    return n


class EvenNumber(BaseModel):
    n: Annotated[int, AfterValidator(_even)]


def test_extract_retries_with_the_error_in_the_next_prompt() -> None:
    rt = ScriptedRuntime(['{"n":3}', '{"n":4}'])
    assert extract(EvenNumber, "four", runtime=rt) == EvenNumber(n=4)
    retry_prompt = rt.calls[1].messages
    assert retry_prompt[-2] == {"role": "assistant", "content": '{"n":3}'}
    assert "must be even" in retry_prompt[-1]["content"] and retry_prompt[-1]["role"] == "user"


@given(retries=st.integers(0, 3))
@settings(max_examples=8, deadline=None)
def test_extract_gives_up_after_max_retries_with_the_record(retries: int) -> None:
    rt = ScriptedRuntime(['{"n":3}'] * (retries + 1))
    with pytest.raises(OutputValidationError) as info:
        extract(EvenNumber, "odd", runtime=rt, max_retries=retries)
    assert len(rt.calls) == retries + 1
    assert [r.step for r in info.value.retries] == list(range(1, retries + 2))
    assert not any(r.fixed for r in info.value.retries)
    assert info.value.usage.completion_tokens == 7 * (retries + 1)


async def test_extracts_output_validator() -> None:
    def not_zero(value: EvenNumber) -> EvenNumber:
        if value.n == 0:
            raise ModelRetry("zero is not an answer")
        return value

    rt = ScriptedRuntime(['{"n":0}', '{"n":2}'])
    assert await aextract(EvenNumber, "two", runtime=rt, output_validator=not_zero) == EvenNumber(n=2)
    assert "zero is not an answer" in rt.calls[1].messages[-1]["content"]
    with pytest.raises(InvalidArgument):
        await aextract(EvenNumber, "x", runtime=rt, max_retries=-1)
    with pytest.raises(InvalidArgument):
        Agent([], rt, output_validator="no")  # type: ignore[arg-type]

"""`extract(T, text, details=True)` returns an `Extraction` with the run's usage (scores only
with `confidence=True`), and `validation_context=` reaches pydantic validators as
`info.context` in every extraction spelling."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationInfo, field_validator

from agentkit import (
    Extraction,
    InvalidArgument,
    OutputValidationError,
    aextract,
    astream_extract,
    extract,
    stream_extract,
)
from runtimes import Generation, TokenScore, Usage
from runtimes.testing import FunctionRuntime, ScriptedRuntime


class Order(BaseModel):
    item: str
    quantity: int

    @field_validator("quantity")
    @classmethod
    def in_stock(cls, quantity: int, info: ValidationInfo) -> int:
        if info.context is not None and quantity > info.context["stock"]:
            raise ValueError(f"only {info.context['stock']} in stock")
        return quantity


ANSWER = '{"item":"pen","quantity":3}'


def _scored(text: str) -> Generation:
    return Generation(text, "grammar_complete", Usage(50, 4),
                      token_scores=[TokenScore(text.encode()[:-1], -0.1, 0.0), TokenScore(text.encode()[-1:], -0.2, 0.0)])


def test_details_gives_the_value_text_and_usage_without_scores() -> None:
    runtime = ScriptedRuntime([ANSWER])
    got = extract(Order, "Three pens.", runtime=runtime, details=True, grounded=False)
    assert isinstance(got, Extraction)
    assert got.value == Order(item="pen", quantity=3) and got.text == ANSWER
    assert got.fields is None and got.missing is not None and "confidence" in got.missing
    assert got.doubtful() == []
    assert got.usage.completion_tokens == len(ANSWER) and got.usage.prompt_tokens > 0


@settings(max_examples=25, deadline=None)
@given(refused=st.integers(0, 3))
def test_the_usage_counts_every_correction(refused: int) -> None:
    bad = '{"item":"pen","quantity":30}'
    runtime = ScriptedRuntime([bad] * refused + [ANSWER])
    got = extract(Order, "Three pens.", runtime=runtime, details=True, grounded=False, max_retries=3, validation_context={"stock": 5})
    assert got.value.quantity == 3
    assert got.usage.completion_tokens == refused * len(bad) + len(ANSWER)
    prompts = [len(c.messages) for c in runtime.calls]
    assert len(prompts) == refused + 1 and got.usage.prompt_tokens > 0


def test_confidence_carries_the_usage_too() -> None:
    got = extract(Order, "x", runtime=ScriptedRuntime([_scored(ANSWER)]), grounded=False, confidence=True)
    assert got.fields is not None and set(got.fields) == {"/item", "/quantity"}
    assert got.usage == Usage(50, 4)
    both = extract(Order, "x", runtime=ScriptedRuntime([_scored(ANSWER)]), grounded=False, confidence=True, details=True)
    assert both.fields == got.fields and both.usage == got.usage


def test_a_plain_extract_still_gives_the_value() -> None:
    assert extract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False) == Order(item="pen", quantity=3)
    assert extract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False, details=False) == Order(item="pen", quantity=3)


async def test_the_async_spelling_gives_details_too() -> None:
    got = await aextract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False, details=True)
    assert isinstance(got, Extraction) and got.usage.completion_tokens == len(ANSWER)


@pytest.mark.parametrize("given_value", [1, "yes", None])
def test_details_must_be_a_bool(given_value: Any) -> None:
    with pytest.raises(InvalidArgument, match="details"):
        extract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False, details=given_value)


def test_the_validation_context_reaches_the_validators_and_a_refusal_is_corrected() -> None:
    runtime = ScriptedRuntime(['{"item":"pen","quantity":30}', ANSWER])
    got = extract(Order, "Pens, please.", runtime=runtime, grounded=False, validation_context={"stock": 5})
    assert got.quantity == 3
    assert "only 5 in stock" in runtime.calls[1].messages[-1]["content"]
    with pytest.raises(OutputValidationError, match="only 2 in stock"):
        extract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False, validation_context={"stock": 2}, max_retries=0)


async def test_the_validation_context_reaches_aextract_and_both_streams() -> None:
    with pytest.raises(OutputValidationError, match="only 2 in stock"):
        await aextract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False, validation_context={"stock": 2}, max_retries=0)
    with pytest.raises(OutputValidationError, match="only 2 in stock"):
        async for _ in astream_extract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False, validation_context={"stock": 2}):
            pass
    values = [v async for v in astream_extract(Order, "x", runtime=FunctionRuntime(lambda m, i: ANSWER), grounded=False,
                                                validation_context={"stock": 9})]
    assert values[-1] == Order(item="pen", quantity=3)


def test_the_validation_context_reaches_the_sync_stream() -> None:
    with pytest.raises(OutputValidationError, match="only 2 in stock"):
        list(stream_extract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False, validation_context={"stock": 2}))
    assert list(stream_extract(Order, "x", runtime=ScriptedRuntime([ANSWER]), grounded=False, validation_context={"stock": 3}))[-1] \
        == Order(item="pen", quantity=3)

"""A reasoning span's token budget, kept by the local decode loop: once the model has spent
the span's tokens the decoder writes the close, and the constrained part follows in full."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from grammar import ReasoningSpan, after_reasoning
from runtimes import OpenAICompatible, RuntimeFailure
from runtimes.testing import RandomRuntime

BODY = grammar.from_json_schema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                                 "additionalProperties": False})


def tokens_inside(runtime: RandomRuntime, token_ids: list[int], span: ReasoningSpan) -> int:
    """Tokens after the open up to and including the one that completes the close."""
    text = ""
    opened_at = closed_at = None
    for i, token in enumerate(token_ids):
        text += runtime.vocabulary.token_bytes(token).decode("utf-8", "replace")
        if opened_at is None and len(text) >= len(span.open):
            opened_at = i
        if closed_at is None and span.close in text[len(span.open):]:
            closed_at = i
            break
    assert opened_at is not None and closed_at is not None
    return closed_at - opened_at


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(0, 12))
def test_the_span_closes_within_its_budget_and_the_body_follows(seed: int, budget: int) -> None:
    runtime = RandomRuntime(seed=seed)
    span = ReasoningSpan(max_tokens=budget)
    g = after_reasoning(BODY, span)
    generation = runtime.generate_sync("Think, then answer.", grammar=g, max_tokens=400)
    assert generation.finish_reason == "grammar_complete"
    assert g.accepts(generation.text)
    reasoning, rest = span.split(generation.text)
    assert reasoning is not None and isinstance(json.loads(rest)["n"], int)
    # Random logits never choose to close: the budget, the rest of a character begun (up to three
    # more bytes, one token each), then the close's bytes, one token each at most.
    assert tokens_inside(runtime, generation.token_ids, span) <= budget + 3 + len(span.close)


def test_a_budget_of_zero_closes_at_once() -> None:
    span = ReasoningSpan(max_tokens=0)
    generation = RandomRuntime(seed=3).generate_sync("Answer.", grammar=after_reasoning(BODY, span),
                                                     max_tokens=200)
    assert span.split(generation.text)[0] == ""


def test_without_a_budget_the_span_runs_on() -> None:
    """What the budget changes: random logits left alone write far past twelve tokens."""
    span = ReasoningSpan()
    runtime = RandomRuntime(seed=5)
    generation = runtime.generate_sync("Think.", grammar=after_reasoning(BODY, span), max_tokens=120)
    reasoning, _ = span.split(generation.text)
    assert reasoning is not None and len(generation.token_ids) > 60


async def test_a_server_refuses_a_budget_it_cannot_keep() -> None:
    runtime = OpenAICompatible("http://127.0.0.1:9", model="m", max_retries=0)
    g = after_reasoning(BODY, ReasoningSpan(max_tokens=8))
    with pytest.raises(RuntimeFailure, match="reasoning span's token budget"):
        await runtime.generate([{"role": "user", "content": "hi"}], grammar=g)

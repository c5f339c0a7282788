"""Per-field confidence: token scores gathered per leaf of the JSON an extraction or a call wrote."""

from __future__ import annotations

import json
import math
from typing import Literal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentkit import Agent, Extraction, FieldConfidence, IncompleteOutput, InvalidArgument, extract, tool
from agentkit._outputs.confidence import TokenSpans, json_leaves
from runtimes import Generation, TokenScore, Usage
from runtimes.testing import RandomRuntime, ScriptedRuntime

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


def _leaf_pointers(value, pointer=""):
    """The leaves of a Python JSON value by pointer, found without reading any text."""
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from _leaf_pointers(child, f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list) and value:
        for i, child in enumerate(value):
            yield from _leaf_pointers(child, f"{pointer}/{i}")
    else:
        yield pointer, value


@settings(max_examples=200, deadline=None)
@given(value=JSON, indent=st.sampled_from([None, 0, 2]), separators=st.sampled_from([(",", ":"), (", ", ": ")]),
       ascii_only=st.booleans(), lead=st.sampled_from(["", " ", "\n  "]))
def test_every_leaf_is_found_with_the_text_that_spells_it(value, indent, separators, ascii_only, lead):
    text = lead + json.dumps(value, indent=indent, separators=separators, ensure_ascii=ascii_only)
    leaves, end = json_leaves(text)
    assert end == len(text)
    expected = dict(_leaf_pointers(value))
    assert [leaf.pointer for leaf in leaves] == list(expected)
    for leaf in leaves:
        assert json.loads(text[leaf.start:leaf.end]) == expected[leaf.pointer]


@settings(max_examples=100, deadline=None)
@given(value=JSON, data=st.data())
def test_a_leaf_gets_the_tokens_over_its_text_and_the_byte_after(value, data):
    text = json.dumps(value, ensure_ascii=False)
    raw = text.encode()
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(raw) - 1)), max_size=len(raw))) - {len(raw)})
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)]) if b > a]
    logprobs = data.draw(st.lists(st.floats(-8, 0), min_size=len(pieces), max_size=len(pieces)))
    scores = [TokenScore(p, lp, 0.25) for p, lp in zip(pieces, logprobs)]
    spans = TokenSpans(text, scores)
    starts = [sum(len(p) for p in pieces[:i]) for i in range(len(pieces))]
    for leaf in json_leaves(text)[0]:
        first = len(text[: leaf.start].encode()) + (1 if leaf.string and leaf.end - leaf.start > 2 else 0)
        last = len(text[: leaf.end].encode()) + (0 if leaf.string else 1)
        last = min(last, len(raw))
        mine = [i for i, s in enumerate(starts) if s < last and s + len(pieces[i]) > first]
        got = spans.confidence(leaf)
        assert got.tokens == len(mine) >= 1
        assert got.probability == pytest.approx(math.exp(sum(logprobs[i] for i in mine)))
        assert got.min_token_probability == pytest.approx(math.exp(min(logprobs[i] for i in mine)))
        assert got.masked_mass == pytest.approx(1 - 0.75 ** len(mine))


def test_scores_that_do_not_spell_the_text_are_refused():
    with pytest.raises(ValueError, match="spell"):
        TokenSpans('{"a":1}', [TokenScore(b'{"a":2}', -1.0)])


class Person(BaseModel):
    name: Literal["Ann", "Bob", "Cy"]
    age: int
    tags: list[Literal["x", "yz"]]
    ok: bool


@pytest.mark.parametrize("seed", range(6))
def test_an_extraction_scores_every_leaf_of_its_value(seed):
    rt = RandomRuntime(seed=seed)
    got = extract(Person, "Ann is 31.", runtime=rt, confidence=True, max_tokens=120)
    assert isinstance(got, Extraction)
    assert got.value == extract(Person, "Ann is 31.", runtime=RandomRuntime(seed=seed), max_tokens=120)
    assert set(got.fields) == {p for p, _ in _leaf_pointers(json.loads(got.text))}
    for field in got.fields.values():
        assert isinstance(field, FieldConfidence)
        assert 0.0 < field.probability <= field.min_token_probability <= 1.0
        assert 0.0 <= field.masked_mass <= 1.0
    assert got.doubtful(1.01) == sorted(got.fields, key=lambda p: got.fields[p].probability)
    assert got.missing is None


def test_an_extraction_from_a_runtime_without_scores_says_why():
    got = extract(Person, "Ann", runtime=ScriptedRuntime(['{"name":"Ann","age":3,"tags":[],"ok":true}']),
                  confidence=True)
    assert got.value.name == "Ann" and got.fields is None and "scripted" in got.missing
    assert got.doubtful() == []


def test_given_scores_are_read_per_field():
    text = '{"name":"Bob","age":42,"tags":["yz"],"ok":false}'
    pieces = [b'{"name":"', b'Bob', b'","age":', b'4', b'2', b',"tags":["', b'yz', b'"],"ok":', b'false', b'}']
    logprobs = [-0.1, -0.5, -0.01, -1.0, -2.0, -0.2, -0.3, -0.05, -0.7, 0.0]
    scores = [TokenScore(p, lp, 0.0) for p, lp in zip(pieces, logprobs)]
    rt = ScriptedRuntime([Generation(text, "grammar_complete", Usage(1, len(pieces)), token_scores=scores)])
    got = extract(Person, "Bob, 42", runtime=rt, confidence=True)
    assert got.fields["/name"].probability == pytest.approx(math.exp(-0.5 - 0.01))  # "Bob" and its closing quote
    assert got.fields["/age"].probability == pytest.approx(math.exp(-1.0 - 2.0 - 0.2))  # digits and the comma ending them
    assert got.fields["/tags/0"].probability == pytest.approx(math.exp(-0.3 - 0.05))
    assert got.fields["/ok"].probability == pytest.approx(math.exp(-0.7 + 0.0))
    assert got.doubtful(0.5) == ["/age", "/ok"]  # least sure first


def test_confidence_must_be_a_bool():
    with pytest.raises(InvalidArgument, match="confidence"):
        extract(Person, "Ann", runtime=ScriptedRuntime([]), confidence="yes")
    with pytest.raises(InvalidArgument, match="confidence"):
        Agent([], ScriptedRuntime([]), model_settings={"confidence": 1})


@tool
def weather(city: Literal["Paris", "Rome"], metric: bool, days: list[Literal[1, 2]]) -> str:
    """The weather."""
    return "sunny"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 50), prompt=st.sampled_from(["template", "python"]))
def test_each_call_scores_every_leaf_of_its_arguments(seed, prompt):
    rt = RandomRuntime(seed=seed, tool_call_envelope="hermes")
    agent = Agent([weather], rt, max_steps=2, tool_choice="required", max_tokens=300, tool_prompt=prompt,
                  model_settings={"confidence": True})
    try:
        result = agent.run_sync("The weather in Paris?")
    except IncompleteOutput:  # a random model may write blanks until the budget runs out
        assume(False)
    assert result.tool_calls
    for record in result.tool_calls:
        assert set(record.confidence) == {p for p, _ in _leaf_pointers(record.call.arguments)}
    plain = Agent([weather], RandomRuntime(seed=seed, tool_call_envelope="hermes"), max_steps=2, tool_choice="required",
                  max_tokens=300, tool_prompt=prompt).run_sync("The weather in Paris?")
    assert [(r.call.name, r.call.arguments) for r in plain.tool_calls] == [
        (r.call.name, r.call.arguments) for r in result.tool_calls]  # ids differ: each holds its run's
    assert all(r.confidence is None for r in plain.tool_calls)

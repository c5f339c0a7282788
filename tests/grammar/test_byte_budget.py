"""Grammars held to a byte budget (`within_bytes`, `max_bytes`): for a server, which cannot close
a turn at max_tokens, the grammar's longest sentence must fit the budget (issue #65), without
letting in anything the tools' schemas refuse and without becoming empty where a call fits."""

from __future__ import annotations

import json
import random

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_sampling import sentence

import grammar
from grammar import LimitError, ToolSchema, longest_bytes, parse_tool_calls, shortest_bytes, within_bytes
from grammar._ir import Alt, Chars, Lit, Node, Ref, Repeat, Seq

ENVELOPE = ("json", "fenced")

leaf = st.one_of(
    st.just({"type": "string"}),
    st.integers(0, 30).map(lambda n: {"type": "string", "maxLength": n}),
    st.just({"type": "integer"}),
    st.just({"type": "integer", "minimum": 0, "maximum": 1000}),
    st.just({"type": "number"}),
    st.just({"type": "boolean"}),
    st.just({"enum": ["red", "green", "blue"]}),
)
value = st.recursive(leaf, lambda inner: st.one_of(
    st.builds(lambda items: {"type": "array", "items": items}, inner),
    st.builds(lambda props: {"type": "object", "properties": props, "required": sorted(props)[:1],
                             "additionalProperties": False},
              st.dictionaries(st.sampled_from("abcd"), inner, min_size=1, max_size=3)),
), max_leaves=4)
arguments = st.builds(
    lambda props, free, n: {"type": "object", "properties": props, "required": sorted(props)[:n],
                            "additionalProperties": free},
    st.dictionaries(st.sampled_from(["city", "n", "tags", "when"]), value, min_size=1, max_size=3),
    st.booleans(), st.integers(0, 3))
tools = st.lists(arguments, min_size=1, max_size=2).map(
    lambda schemas: [ToolSchema(f"tool_{i}", s) for i, s in enumerate(schemas)])


def longest_derivation(g: grammar.Grammar, rng: random.Random) -> str:
    """A sentence taken as long as the grammar lets it be: repeats at their most, characters
    at their widest, a random alternative (the bounded grammar has no recursion left)."""
    rules = g.rules
    out: list[str] = []

    def grow(node: Node) -> None:
        if isinstance(node, Lit):
            out.append(node.text)
        elif isinstance(node, Chars):
            out.append(chr(node.ranges[-1][1]))
        elif isinstance(node, Seq):
            for item in node.items:
                grow(item)
        elif isinstance(node, Alt):
            grow(rng.choice(node.items))
        elif isinstance(node, Repeat):
            assert node.max is not None, "an unbounded repeat is left"
            for _ in range(node.max):
                grow(node.item)
        elif isinstance(node, Ref):
            grow(rules[node.name])
        else:
            raise AssertionError(f"unexpected node {type(node).__name__}")

    grow(rules[g.root])
    return "".join(out)


def turn(schemas, budget, max_calls, preamble=False):
    return grammar.tool_calls(schemas, envelope=ENVELOPE, max_calls=max_calls, lenient=True, whitespace=12,
                              preamble=preamble, max_bytes=budget)


@settings(max_examples=60, deadline=None)
@given(tools, st.integers(0, 400), st.sampled_from([1, 3, None]), st.randoms(use_true_random=False))
def test_a_bounded_turns_sentences_fit_the_budget_and_keep_to_the_schemas(schemas, budget, max_calls, rng):
    unbounded = grammar.tool_calls(schemas, envelope=ENVELOPE, max_calls=max_calls, lenient=True, whitespace=12)
    fits = shortest_bytes(unbounded) <= budget
    if not fits:
        with pytest.raises(LimitError, match="fits"):
            turn(schemas, budget, max_calls)
        return
    g = turn(schemas, budget, max_calls)  # never empty where the shortest call fits
    assert shortest_bytes(g) is not None and longest_bytes(g) <= budget
    by_name = {t.name: t.schema for t in schemas}
    for _ in range(3):
        for text in (longest_derivation(g, rng), sentence(g.rule_set(), rng)):
            assert len(text.encode()) <= budget
            assert unbounded.accepts(text), text  # a sub-language: nothing the turn refused before
            for call in parse_tool_calls(text, envelope=ENVELOPE):
                jsonschema.validate(call["arguments"], by_name[call["name"]])


@settings(max_examples=30, deadline=None)
@given(tools, st.integers(60, 400), st.randoms(use_true_random=False))
def test_a_bounded_answer_or_calls_fits_the_budget(schemas, budget, rng):
    g = grammar.tool_calls_or_text(schemas, envelope=ENVELOPE, max_calls=2, lenient=True, whitespace=12,
                                   preamble=True, max_bytes=budget) if shortest_bytes(
        grammar.tool_calls(schemas, envelope=ENVELOPE, lenient=True)) <= budget else None
    if g is None:
        return
    assert longest_bytes(g) <= budget
    for _ in range(3):
        assert len(longest_derivation(g, rng).encode()) <= budget


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 300), st.randoms(use_true_random=False))
def test_any_json_is_bounded_through_its_recursion(budget, rng):
    g = within_bytes(grammar.any_json(whitespace=2), budget)
    assert longest_bytes(g) <= budget
    for _ in range(3):
        text = longest_derivation(g, rng)
        assert len(text.encode()) <= budget
        json.loads(text)


def test_a_budget_too_small_for_one_call_is_a_limit_error_before_anything_is_sent():
    weather = [ToolSchema("get_weather", {"type": "object", "properties": {"city": {"type": "string"}},
                                          "required": ["city"]})]
    with pytest.raises(LimitError, match="shortest is 46 bytes"):
        grammar.tool_calls(weather, max_bytes=45)
    g = grammar.tool_calls(weather, max_bytes=46)
    assert g.accepts('{"name":"get_weather","arguments":{"city":""}}')


def test_a_budget_leaves_the_arguments_most_of_the_room():
    weather = [ToolSchema("get_weather", {"type": "object", "properties": {"city": {"type": "string"}},
                                          "required": ["city"]})]
    g = turn(weather, 256, 8)
    assert g.accepts('```json\n{\n  "name": "get_weather",\n  "arguments": {\n  "city": "Paris"\n  }\n}\n```')
    assert g.accepts('{"name":"get_weather","arguments":{"city":"' + "x" * 60 + '"}}')
    assert not g.accepts('{"name":"get_weather","arguments":{"city":"Paris"}}\n{"name":"get_weather",'
                         '"arguments":{"city":"Paris"}}')  # one call fits the room of four times its shortest

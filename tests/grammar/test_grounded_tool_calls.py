"""Tool-call turns with grounded arguments (`tool_calls(..., grounding=Grounding(text))`): an
argument whose schema says `"grounded": true` is a span of the source (a string) or a number it
writes, in every envelope; one the source cannot fill keeps its plain grammar, and the turn's
`Grammar.grounding` says so under the tool's name."""

from __future__ import annotations

import json
import random
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from grammar import CompileError, Grounding, ToolSchema
from grammar._jsonschema.grounding import numbers_in
from ir_sampling import sentence

ALPHABET = 'ab 1,.2"\\\né:'

CONVERT = ToolSchema("convert", {
    "type": "object",
    "properties": {"celsius": {"type": "number", "grounded": True}},
    "required": ["celsius"],
})
LOOKUP = ToolSchema("lookup", {
    "type": "object",
    "properties": {"city": {"type": "string", "grounded": True},
                   "units": {"enum": ["metric", "imperial"]},
                   "note": {"type": "string"}},
    "required": ["city", "units"],
})
ENVELOPES = ["json", "python", ("hermes", "fenced")]


def _calls(g: grammar.Grammar, text: str, envelope) -> list[dict]:
    calls = grammar.parse_tool_calls(text, envelope=envelope, preamble=True, names=["convert", "lookup"])
    assert calls is not None, text
    return calls


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.sampled_from(ALPHABET), max_size=30), st.sampled_from(ENVELOPES),
       st.randoms(use_true_random=False))
def test_every_call_a_grounded_turn_accepts_holds_its_marked_arguments_to_the_source(source, envelope, rng):
    g = grammar.tool_calls([CONVERT, LOOKUP], envelope=envelope, max_calls=3, grounding=Grounding(source))
    held = {n.pointer: n for n in g.grounding}
    assert set(held) == {"/convert/properties/celsius", "/lookup/properties/city"}
    numbers = set(numbers_in(source))
    for _ in range(8):
        text = sentence(g.rule_set(), random.Random(rng.random()))
        assert text is not None and g.accepts(text)
        for call in _calls(g, text, envelope):
            if call["name"] == "lookup":
                assert call["arguments"]["city"] in source  # the free `note` and the enum are not held
            elif held["/convert/properties/celsius"].grounded:
                assert Decimal(str(call["arguments"]["celsius"])) in numbers


@pytest.mark.parametrize("envelope", ENVELOPES)
def test_a_call_whose_grounded_argument_the_source_does_not_hold_is_refused(envelope):
    source = "What is the weather in Lyon? It is 21.5 degrees."
    g = grammar.tool_calls([CONVERT, LOOKUP], envelope=envelope, grounding=Grounding(source))
    plain = grammar.tool_calls([CONVERT, LOOKUP], envelope=envelope)

    def written(name: str, arguments: dict) -> str:
        if envelope == "python":
            return f"[{name}({', '.join(f'{k}={json.dumps(v)}' for k, v in arguments.items())})]"
        call = json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"))
        return call if envelope == "json" else f"<tool_call>\n{call}\n</tool_call>"

    for name, arguments, in_source in [
        ("lookup", {"city": "Lyon", "units": "metric"}, True),
        ("lookup", {"city": "Springfield", "units": "metric"}, False),  # a docstring's example, say
        ("lookup", {"city": "Lyon", "units": "imperial", "note": "Springfield"}, True),  # `note` is free
        ("convert", {"celsius": 21.5}, True),
        ("convert", {"celsius": 22}, False),
    ]:
        text = written(name, arguments)
        assert plain.accepts(text), text
        assert g.accepts(text) == in_source, text


def test_an_argument_the_source_cannot_fill_keeps_its_plain_grammar_and_the_turn_says_why():
    g = grammar.tool_calls_or_text([CONVERT, LOOKUP], grounding=Grounding("Convert the temperature in Lyon."))
    held = {n.pointer: n for n in g.grounding}
    celsius = held["/convert/properties/celsius"]
    assert not celsius.grounded and celsius.reason == "the source writes no number"
    assert held["/lookup/properties/city"].grounded
    assert g.accepts('{"name":"convert","arguments":{"celsius":37}}')  # never an empty grammar
    assert not g.accepts('{"name":"lookup","arguments":{"city":"Paris","units":"metric"}}')
    assert g.accepts("Which temperature?")


def test_without_a_source_the_mark_is_an_annotation_and_nothing_is_recorded():
    g = grammar.tool_calls([CONVERT, LOOKUP])
    assert g.grounding == ()
    assert g.accepts('{"name":"lookup","arguments":{"city":"Paris","units":"metric"}}')


def test_a_byte_budget_keeps_the_turns_grounding_record():
    g = grammar.tool_calls([CONVERT], max_bytes=120, grounding=Grounding("it is 21.5"))
    assert [n.pointer for n in g.grounding] == ["/convert/properties/celsius"]
    assert g.accepts('{"name":"convert","arguments":{"celsius":21.5}}')
    assert not g.accepts('{"name":"convert","arguments":{"celsius":20}}')


def test_arguments_alone_take_a_grounding_too():
    g = grammar.arguments(LOOKUP.schema, grounding=Grounding("in Lyon"))
    assert g.accepts('{"city":"Lyon","units":"metric"}')
    assert not g.accepts('{"city":"Paris","units":"metric"}')


@pytest.mark.parametrize("build", [grammar.tool_calls, grammar.tool_calls_or_text])
def test_grounding_must_be_a_grounding(build):
    with pytest.raises(CompileError, match="grounding must be a Grounding"):
        build([CONVERT], grounding="21.5")

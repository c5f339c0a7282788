"""Tool-call and `either` grammars carry a JSON Schema of what a schema can state of them (one
bare call; any part), for servers that take schemas only. Moving each part's schema under the
union keeps its meaning: the union accepts a value exactly when the part it names accepts it."""

from __future__ import annotations

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

import grammar
from grammar import ToolSchema

ADD = {"type": "object", "properties": {"a": {"$ref": "#/$defs/N"}, "b": {"$ref": "#/definitions/M/properties/m"}},
       "required": ["a"], "$defs": {"N": {"type": "integer", "minimum": 0}},
       "definitions": {"M": {"type": "object", "properties": {"m": {"enum": ["x", "y"]}}}}}
ECHO = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 5}, "self": {"$ref": "#/properties/text"}},
        "additionalProperties": False}
TOOLS = [ToolSchema("add", ADD), ToolSchema("echo", ECHO)]
OUTPUT = {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}, "required": ["n"], "$defs": {"N": {"type": "integer"}}}

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["x", "y", "long text", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "text", "self", "n"]), inner, max_size=3),
    max_leaves=8,
)


def valid(schema, value) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


@given(name=st.sampled_from(["add", "echo", "other"]), arguments=VALUES)
def test_a_call_is_valid_exactly_when_its_tool_takes_the_arguments(name, arguments):
    schema = grammar.tool_calls(TOOLS, envelope=("json", "fenced"), max_calls=4).schema
    tool = {t.name: t.schema for t in TOOLS}.get(name)
    expected = tool is not None and isinstance(arguments, dict) and valid(tool, arguments)
    assert valid(schema, {"name": name, "arguments": arguments}) == expected


@given(value=VALUES | st.fixed_dictionaries({"name": st.sampled_from(["add", "echo"]), "arguments": VALUES}))
def test_either_is_valid_exactly_when_a_part_is(value):
    calls = grammar.tool_calls(TOOLS)
    union = grammar.either(calls, grammar.from_json_schema(OUTPUT))
    assert valid(union.schema, value) == (valid(calls.schema, value) or valid(OUTPUT, value))


def test_a_call_sentence_of_the_grammar_is_valid_against_its_schema():
    g = grammar.tool_calls(TOOLS)
    sentence = '{"name":"add","arguments":{"a":2,"b":"x"}}'
    assert g.accepts(sentence) and valid(g.schema, {"name": "add", "arguments": {"a": 2, "b": "x"}})


def test_grammars_whose_schema_cannot_be_moved_have_none():
    with_id = [ToolSchema("t", {"type": "object", "$id": "https://example.com/t", "properties": {}})]
    anchored = [ToolSchema("t", {"type": "object", "properties": {"a": {"$ref": "#here"}},
                                 "$defs": {"A": {"$anchor": "here"}}})]
    assert grammar.tool_calls(with_id).schema is None
    assert grammar.tool_calls(anchored, lenient=True).schema is None


def test_only_the_bare_json_envelope_has_a_schema():
    assert grammar.tool_calls(TOOLS, envelope="hermes").schema is None
    assert grammar.tool_calls(TOOLS, envelope="python").schema is None
    assert grammar.tool_calls_or_text(TOOLS).schema is None  # free text has no schema
    assert grammar.either(grammar.tool_calls(TOOLS), grammar.from_regex("[a-z]+")).schema is None


def test_values_that_look_like_references_are_data():
    schema = {"type": "object", "properties": {"k": {"enum": [{"$ref": "#/x"}]}}}
    moved = grammar.tool_calls([ToolSchema("t", schema)]).schema
    assert moved["anyOf"][0]["properties"]["arguments"]["properties"]["k"] == {"enum": [{"$ref": "#/x"}]}

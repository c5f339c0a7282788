"""minProperties over keys the schema does not name: two members may spell one key (the
validator reads `{"a":1,"a":2}` after `json.loads`, which keeps the last: one member), and no
grammar here tells keys apart. So where extra members must make up two or more of the minimum,
strict compiles refuse it, naming the keyword and its place, and lenient ones leave it to the
validator while still asking for that many members."""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammar
from grammar import CompileError, LimitError

FREE_KEYED = {  # schema, the keyword and the place a refusal names (None: not checked)
    "plain": ({"type": "object", "minProperties": 2}, "minProperties", ""),
    "additionalProperties": ({"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 2},
                             "minProperties", ""),
    "patternProperties": ({"type": "object", "patternProperties": {"^[ab]": {}}, "minProperties": 2},
                          "minProperties", ""),
    "propertyNames": ({"type": "object", "propertyNames": {"maxLength": 3}, "minProperties": 2}, "minProperties", ""),
    # The count comes from the negated keyword: the error names it, where the schema has it.
    "not maxProperties": ({"type": "object", "not": {"maxProperties": 1}}, "maxProperties", "/not"),
    "nested not maxProperties": ({"properties": {"m": {"not": {"maxProperties": 4}}}}, "maxProperties",
                                 "/properties/m/not"),
    "nested": ({"type": "object", "properties": {"m": {"type": "object", "minProperties": 3}}}, "minProperties",
               "/properties/m"),
    "huge": ({"type": "object", "minProperties": 10**9}, "minProperties", ""),
    "one declared, optional": ({"type": "object", "properties": {"a": {}}, "minProperties": 2}, "minProperties", ""),
}


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("case", list(FREE_KEYED))
def test_strict_refuses_and_names_the_keyword_and_place(case):
    schema, keyword, pointer = FREE_KEYED[case]
    with pytest.raises(CompileError) as info:
        grammar.from_json_schema(schema)
    assert not isinstance(info.value, LimitError)
    assert info.value.keyword == keyword
    assert info.value.pointer == pointer


@pytest.mark.parametrize("case", list(FREE_KEYED))
def test_lenient_leaves_it_to_the_validator(case):
    schema, keyword, pointer = FREE_KEYED[case]
    g = grammar.from_json_schema(schema, lenient=True)
    assert (keyword, pointer) in {(d.keyword, d.pointer) for d in g.dropped}


def test_lenient_grammar_asks_for_the_members_and_leaves_distinctness_over():
    g = grammar.from_json_schema({"type": "object", "minProperties": 2}, lenient=True)
    assert g.accepts('{"a":1,"b":2}') and g.accepts('{"a":1,"b":2,"c":3}')
    assert not g.accepts('{"a":1}') and not g.accepts("{}")
    assert g.accepts('{"a":1,"a":2}')  # one member once parsed: the validator refuses it
    assert not jsonschema.Draft202012Validator({"minProperties": 2}).is_valid(json.loads('{"a":1,"a":2}'))


@settings(max_examples=150, deadline=None)
@given(
    low=st.integers(0, 4),
    declared=st.lists(st.sampled_from("abc"), unique=True, max_size=3),
    required=st.lists(st.sampled_from("abc"), unique=True, max_size=3),
    additional=st.sampled_from([True, False, {"type": "integer"}]),
    value=st.dictionaries(st.sampled_from("abcxy"), st.integers(0, 2), max_size=5),
)
def test_what_compiles_is_exact_and_what_is_lenient_holds_every_valid_value(low, declared, required, additional, value):
    schema = {
        "type": "object",
        "properties": {name: {"type": "integer"} for name in declared},
        "required": [r for r in required if r in declared],
        "additionalProperties": additional,
        "minProperties": low,
    }
    valid = jsonschema.Draft202012Validator(schema).is_valid(value)
    text = compact({k: value[k] for k in sorted(value, key=lambda k: (k not in declared, declared.index(k) if k in declared else k))})
    try:
        strict = grammar.from_json_schema(schema)
    except CompileError as e:
        assert e.keyword == "minProperties"
    else:
        assert strict.accepts(text) == valid, (schema, text)
    lenient = grammar.from_json_schema(schema, lenient=True)
    if valid:
        assert lenient.accepts(text), (schema, text)
    elif lenient.accepts(text):
        assert "minProperties" in {d.keyword for d in lenient.dropped}


def test_declared_members_are_counted_exactly():
    g = grammar.from_json_schema(
        {"type": "object", "properties": {k: {} for k in "abc"}, "additionalProperties": False, "minProperties": 2}
    )
    for size in range(4):
        for keys in itertools.combinations("abc", size):
            assert g.accepts(compact({k: 1 for k in keys})) == (size >= 2)


def test_one_extra_member_on_top_of_required_ones_is_counted():
    g = grammar.from_json_schema({"type": "object", "properties": {"a": {}}, "required": ["a"], "minProperties": 2})
    assert g.accepts('{"a":1,"b":2}') and not g.accepts('{"a":1}')


def test_too_many_optional_properties_name_the_properties():
    schema = {"type": "object", "properties": {"o": {"type": "object", "properties": {f"p{i}": {} for i in range(10_000)}}}}
    with pytest.raises(LimitError) as info:
        grammar.from_json_schema(schema)
    assert info.value.keyword == "properties" and info.value.pointer == "/properties/o"
    assert "maxProperties" not in str(info.value) and "10000 properties" in str(info.value)

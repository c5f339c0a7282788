"""The JSON Schema front end against its oracle, the `jsonschema` validator.

Soundness: no text the grammar accepts is a document the validator rejects (checked on random
sentences of compiled grammars, on edits of them, and on the corpus instances). Completeness
where the grammar is exact: canonical texts of valid values are accepted.
"""

from __future__ import annotations

import json
import random
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import Draft202012Validator, validator_for

from grammar import CompileError, Dropped, Grammar, Ignored, LimitError, any_json, from_json_schema
from ir_sampling import edited, sentence


def oracle(schema):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls = validator_for(schema, default=Draft202012Validator)
        return cls(schema, format_checker=cls.FORMAT_CHECKER)


def valid(schema, text: str) -> bool:
    """The oracle's verdict on a JSON text (False where it is not JSON)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return oracle(schema).is_valid(value)


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def assert_sound_sentences(schema, grammar: Grammar, n: int = 40, seed: int = 0) -> None:
    """Random sentences of the grammar, and one-character edits of them, never get past the
    grammar unless the oracle accepts them."""
    rng = random.Random(seed)
    rules = grammar.rule_set()
    for _ in range(n):
        text = sentence(rules, rng)
        if text is None:
            return
        assert valid(schema, text), f"grammar produced an invalid document: {text!r}"
        for _ in range(3):
            mutant = edited(text, '{}[]",:0123456789.-eE truefalsnul\\ab', rng)
            if grammar.accepts(mutant):
                assert valid(schema, mutant), f"grammar accepted an invalid edit: {mutant!r}"


# --- types and values --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema, good, bad",
    [
        ({"type": "null"}, ["null"], ["0", '""', "nul"]),
        ({"type": "boolean"}, ["true", "false"], ["null", "1"]),
        ({"type": "integer"}, ["0", "-7", "12345678901234567890"], ["1.0", "01", "-0.5", "1e3", "+1"]),
        ({"type": "number"}, ["0", "-1.5", "1e-3", "2E+10"], ["01", ".5", "1.", "NaN"]),
        ({"type": "string"}, ['""', '"a\\"b"', '"\\n"', '"\\u0001"', '"é"'], ['"\n"', "'a'", '"\\x"']),
        ({"type": ["string", "null"]}, ['"x"', "null"], ["1"]),
        ({"enum": ["a", 1, None, [1, {"b": 2}]]}, ['"a"', "1", "1.0", "null", '[1,{"b":2}]'], ['"b"', "2", "true"]),
        ({"const": {"x": [True]}}, ['{"x":[true]}'], ['{"x":[1]}', '{"x":[true],"y":1}']),
        ({"type": "integer", "enum": [1, "a", 2.5]}, ["1"], ['"a"', "2.5"]),
        (True, ["1", '{"a":[null,{}]}', '"x"'], ["", "{", "[1,]"]),
        (False, [], ["1", "null", "{}"]),
    ],
)
def test_values(schema, good, bad):
    grammar = from_json_schema(schema)
    for text in good:
        assert valid(schema, text) and grammar.accepts(text), text
    for text in bad:
        assert not grammar.accepts(text), text


def test_integer_bounds_are_exact():
    schema = {"type": "integer", "minimum": -15, "exclusiveMaximum": 1003}
    grammar = from_json_schema(schema)
    for n in range(-40, 1040):
        assert grammar.accepts(str(n)) == (-15 <= n < 1003), n


def test_multiple_of_integers():
    schema = {"type": "integer", "multipleOf": 7, "minimum": -50, "maximum": 100}
    grammar = from_json_schema(schema)
    for n in range(-80, 130):
        assert grammar.accepts(str(n)) == (n % 7 == 0 and -50 <= n <= 100), n
    unbounded = from_json_schema({"type": "integer", "multipleOf": 12})
    for n in (0, 12, -24, 1200, 12 * 10**15):
        assert unbounded.accepts(str(n))
    for n in (1, 13, -25, 12 * 10**15 + 1):
        assert not unbounded.accepts(str(n))


@given(
    low=st.one_of(st.none(), st.integers(-1000, 1000), st.floats(-1000, 1000)),
    high=st.one_of(st.none(), st.integers(-1000, 1000), st.floats(-1000, 1000)),
    exclusive=st.booleans(),
    value=st.one_of(st.integers(-1100, 1100), st.floats(-1100, 1100).map(lambda x: round(x, 3)), st.floats(-1100, 1100)),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_number_bounds_never_accept_outside(low, high, exclusive, value):
    schema: dict = {"type": "number"}
    if low is not None:
        schema["exclusiveMinimum" if exclusive else "minimum"] = low
    if high is not None:
        schema["maximum"] = high
    grammar = from_json_schema(schema)
    text = compact(value)
    if grammar.accepts(text):
        assert valid(schema, text)
    # Texts at the very edge of a float bound: decimals that round onto the bound.
    for bound in (low, high):
        if isinstance(bound, float):
            for edge in (repr(bound) + "0000000001", repr(bound) + "9999999999"):
                if "e" not in edge and grammar.accepts(edge):
                    assert valid(schema, edge), edge


def test_number_bounds_accept_plain_values_inside():
    schema = {"type": "number", "exclusiveMinimum": 0, "maximum": 7.1}
    grammar = from_json_schema(schema)
    for text in ("7.1", "7", "0.0001", "3.14159", "7.09"):
        assert grammar.accepts(text) == valid(schema, text), text
    for text in ("0", "0.0", "-1", "7.2", "7.1000000001"):
        assert not grammar.accepts(text), text


@pytest.mark.parametrize("keyword", ["minimum", "maximum"])
def test_a_bound_of_zero_is_a_small_rule(keyword):
    """`minimum: 0` once spelled every decimal that underflows to -0.0 (324 zeros and more);
    now zero's own texts stand for them, and values either side still follow the bound."""
    schema = {"type": "number", keyword: 0}
    grammar = from_json_schema(schema)
    assert len(grammar.to_gbnf()) < 1000
    sign = "" if keyword == "minimum" else "-"
    for text in ("0", "-0", "0.0", "-0.0", "0.000", sign + "1.5", sign + "2e3", sign + "7"):
        assert grammar.accepts(text) == valid(schema, text), text
    outside = "-" if keyword == "minimum" else ""
    for text in (outside + "0.5", outside + "1", outside + "1e-300"):
        assert not grammar.accepts(text), text


def test_non_integer_multiple_of_is_refused():
    with pytest.raises(CompileError) as e:
        from_json_schema({"type": "number", "multipleOf": 0.01})
    assert e.value.keyword == "multipleOf" and e.value.pointer == ""
    lenient = from_json_schema({"type": "number", "multipleOf": 0.01}, lenient=True)
    assert lenient.dropped == (Dropped("multipleOf", "", lenient.dropped[0].reason),)


def test_equal_leaf_schemas_keep_their_own_notes():
    # Equal subschemas are lowered once; each place still reports what it dropped or ignored,
    # and a leaf that only looks alike (1.0 beside 1, true beside 1) gets its own language.
    leaf = {"type": "number", "multipleOf": 0.01, "title": "t"}
    schema = {"type": "object", "properties": {"a": leaf, "b": dict(leaf), "c": {"const": 1}, "d": {"const": True}}}
    lenient = from_json_schema(schema, lenient=True)
    assert [(d.keyword, d.pointer) for d in lenient.dropped] == [("multipleOf", "/properties/a"), ("multipleOf", "/properties/b")]
    assert {(i.keyword, i.pointer) for i in lenient.ignored} == {("title", "/properties/a"), ("title", "/properties/b")}
    assert lenient.accepts('{"c":1,"d":true}') and not lenient.accepts('{"c":true}') and not lenient.accepts('{"d":1}')


# --- strings ------------------------------------------------------------------------------------


def test_lengths_count_code_points_not_escapes():
    schema = {"type": "string", "minLength": 2, "maxLength": 3}
    grammar = from_json_schema(schema)
    for value in ["ab", "a\n", '"\\', "€𝄞x", "\u0000\u001f"]:
        assert grammar.accepts(compact(value)), value
    for value in ["a", "abcd", "\n\n\n\n"]:
        assert not grammar.accepts(compact(value)), value


def test_pattern_is_an_unanchored_python_search():
    schema = {"type": "string", "pattern": "[0-9]{3}"}
    grammar = from_json_schema(schema)
    for value in ["123", "ab123cd", "x9999"]:
        assert grammar.accepts(compact(value))
    for value in ["12", "a1b2c3"]:
        assert not grammar.accepts(compact(value))
    anchored = from_json_schema({"type": "string", "pattern": "^a+$"})
    assert anchored.accepts('"aaa"') and anchored.accepts('"aa\\n"')  # Python's $ allows a final newline
    assert not anchored.accepts('"aab"')


def test_pattern_with_lengths_and_a_second_pattern():
    schema = {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 4, "allOf": [{"pattern": "b"}]}
    grammar = from_json_schema(schema)
    for value in ["ab", "bbbb", "abc"]:
        assert grammar.accepts(compact(value)), value
    for value in ["b", "aaaa", "abcde", "aB"]:
        assert not grammar.accepts(compact(value)), value


@pytest.mark.parametrize(
    "fmt, good, bad",
    [
        ("date", ["2024-02-29", "1999-12-31"], ["2023-02-29", "2024-13-01", "0000-01-01", "24-01-01"]),
        ("date-time", ["2024-01-01T10:20:30Z", "2024-01-01T10:20:30.5+02:00"], ["2024-01-01 10:20:30Z", "2024-01-01T25:00:00Z"]),
        ("time", ["10:20:30Z", "23:59:59.999-01:30"], ["24:00:00Z", "10:20:30"]),
        ("email", ["a@b", "x.y@example.com"], ["ab"]),
        ("ipv4", ["192.168.0.1", "0.0.0.0"], ["256.1.1.1", "01.1.1.1", "1.1.1"]),
        ("ipv6", ["::1", "fe80::1:2", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4"], ["1:2:3", ":::", "1::2::3"]),
        ("uuid", ["123e4567-e89b-12d3-a456-426614174000"], ["123e4567e89b12d3a456426614174000"]),
        ("hostname", ["example.com", "a-b.c"], ["-a.com", "a..b"]),
        ("uri", ["https://example.com/a?b#c", "urn:isbn:123"], ["//example.com", "a b:c"]),
    ],
)
def test_checked_formats(fmt, good, bad):
    schema = {"type": "string", "format": fmt}
    grammar = from_json_schema(schema)
    for value in good:
        assert grammar.accepts(compact(value)) and valid(schema, compact(value)), value
    for value in bad:
        assert not grammar.accepts(compact(value)), value


def test_unchecked_formats_are_annotations():
    grammar = from_json_schema({"type": "string", "format": "int32", "title": "t", "x-thing": 1})
    assert grammar.accepts('"anything"')
    assert {i.keyword for i in grammar.ignored} == {"format", "title", "x-thing"}
    # draft 4's checker does not check "date"
    draft4 = from_json_schema({"$schema": "http://json-schema.org/draft-04/schema#", "type": "string", "format": "date"})
    assert draft4.accepts('"not a date"')


# --- objects -----------------------------------------------------------------------------------


def test_objects_keep_declared_order_and_allow_extras_after():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["b"]}
    grammar = from_json_schema(schema)
    for text in ['{"b":"x"}', '{"a":1,"b":"x"}', '{"a":1,"b":"x","c":null}', '{"b":"x","zz":[1]}']:
        assert grammar.accepts(text), text
    for text in ['{"a":1}', '{"b":"x","a":1}', '{"a":"1","b":"x"}', '{"b":"x","b":"y"}', '{"a":1,"b":"x","a":2}', "{}"]:
        assert not grammar.accepts(text), text


def test_additional_properties():
    closed = from_json_schema({"properties": {"a": {}}, "additionalProperties": False, "type": "object"})
    assert closed.accepts('{"a":1}') and closed.accepts("{}")
    assert not closed.accepts('{"b":1}') and not closed.accepts('{"a":1,"b":2}')
    typed = from_json_schema({"type": "object", "additionalProperties": {"type": "integer"}})
    assert typed.accepts('{"x":1,"y":2}') and not typed.accepts('{"x":"1"}')


def test_pattern_properties_partition_keys():
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "string"}, "^n": {"type": "number"}},
        "additionalProperties": {"type": "boolean"},
    }
    grammar = from_json_schema(schema)
    for text in ['{"id":1,"x-a":"s","n1":2,"other":true}', '{"x-n":"s"}', '{"nx":3}']:
        assert grammar.accepts(text) and valid(schema, text), text
    for text in ['{"x-a":1}', '{"n":"s"}', '{"other":1}', '{"id":"1"}']:
        assert not grammar.accepts(text), text
    assert_sound_sentences(schema, grammar)


def test_property_count_bounds():
    schema = {"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "required": ["a"], "minProperties": 2,
              "maxProperties": 2}
    grammar = from_json_schema(schema)
    for text in ['{"a":1,"b":2}', '{"a":1,"z":2}']:
        assert grammar.accepts(text), text
    for text in ['{"a":1}', '{"a":1,"b":2,"c":3}', "{}", '{"c":1,"d":2}']:
        assert not grammar.accepts(text), text
    # Two extra members could spell one key (`{"k":1,"k":2}` is one member): where extras would
    # have to make up two of minProperties, it is refused, or (lenient) checked after decoding.
    loose = dict(schema, required=[])
    with pytest.raises(CompileError, match="same key"):
        from_json_schema(loose)
    lenient = from_json_schema(loose, lenient=True)
    assert [d.keyword for d in lenient.dropped] == ["minProperties"]
    assert lenient.accepts('{"x":1,"y":2}') and lenient.accepts('{"c":1,"d":2}') and not lenient.accepts('{"a":1}')


def test_property_names():
    schema = {"type": "object", "propertyNames": {"maxLength": 2, "pattern": "^[a-z]"}}
    grammar = from_json_schema(schema)
    assert grammar.accepts('{"ab":1,"c":2}') and not grammar.accepts('{"abc":1}') and not grammar.accepts('{"1":1}')


# --- arrays ------------------------------------------------------------------------------------


def test_arrays_items_and_bounds():
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}
    grammar = from_json_schema(schema)
    assert all(grammar.accepts(t) for t in ["[1]", "[1,2,3]"])
    assert not any(grammar.accepts(t) for t in ["[]", "[1,2,3,4]", '["1"]', "[1,]"])


def test_tuples_in_each_dialect():
    d7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False}
    d2020 = {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False}
    for schema in (d7, d2020):
        grammar = from_json_schema(schema)
        assert all(grammar.accepts(t) for t in ["[]", '["a"]', '["a",1]']), schema
        assert not any(grammar.accepts(t) for t in ['["a",1,2]', "[1]", '["a","b"]']), schema
    # additionalItems means nothing in 2020-12: it is an annotation there.
    loose = from_json_schema({"prefixItems": [{"type": "string"}], "additionalItems": False})
    assert loose.accepts('["a",1]')


def test_unique_items_refused_unless_trivial():
    with pytest.raises(CompileError) as e:
        from_json_schema({"type": "array", "uniqueItems": True, "items": {"type": "string"}})
    assert e.value.keyword == "uniqueItems"
    assert from_json_schema({"type": "array", "uniqueItems": True, "maxItems": 1}).accepts("[1]")


# --- combinators and references ---------------------------------------------------------------


def test_any_of_and_all_of():
    schema = {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}, {"required": ["a"]}], "anyOf": [{"properties": {"a": {"minimum": 5}}}, {"properties": {"a": {"maximum": -5}}}]}
    grammar = from_json_schema(schema)
    for text in ['{"a":5}', '{"a":-9}', '{"a":7,"b":1}']:
        assert grammar.accepts(text), text
    for text in ['{"a":0}', "{}", '{"a":"x"}', "5"]:
        assert not grammar.accepts(text), text
    assert_sound_sentences(schema, grammar)


def test_any_of_is_distributed_once():
    """Each branch of an anyOf is one alternative: 40 tool envelopes are 40, not 40 squared
    (which would pass the alternatives limit)."""
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": f"tool_{i}"}, "arguments": {"type": "object", "properties": {"x": {"type": "integer"}}}},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
            for i in range(40)
        ]
    }
    grammar = from_json_schema(schema)
    assert grammar.accepts('{"name":"tool_39","arguments":{"x":1}}')
    assert not grammar.accepts('{"name":"tool_40","arguments":{}}')
    assert_sound_sentences(schema, grammar)


def test_one_of_disjoint_and_refused():
    disjoint = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    assert from_json_schema(disjoint).accepts('"a"')
    tagged = {
        "oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]},
        ]
    }
    grammar = from_json_schema(tagged)
    assert grammar.accepts('{"kind":"a","x":1}') and grammar.accepts('{"kind":"b"}')
    assert_sound_sentences(tagged, grammar)
    # Both branches accept every string: oneOf rejects them all.
    clash = {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    g = from_json_schema(clash)
    assert not g.accepts('"s"') and g.accepts('{"a":1}') and not g.accepts('{"a":1,"b":2}')
    assert_sound_sentences(clash, g)
    with pytest.raises(CompileError) as e:
        from_json_schema({"oneOf": [{"type": "string", "pattern": "a"}, {"type": "string", "uniqueItems": False, "format": "email"}]})
    assert e.value.keyword == "oneOf"


def test_one_of_closed_objects_each_with_its_own_key():
    schema = {
        "type": "array",
        "items": {
            "oneOf": [
                {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}},
                {"type": "object", "additionalProperties": False, "properties": {"b": {"type": "string"}}},
            ]
        },
    }
    grammar = from_json_schema(schema)
    for text in ['[{"a":"x"}]', '[{"b":"y"},{"a":"x"}]', "[]"]:
        assert grammar.accepts(text), text
    for text in ["[{}]", '[{"a":"x","b":"y"}]', '[{"c":1}]']:
        assert not grammar.accepts(text), text
    assert_sound_sentences(schema, grammar)


def test_numbers_that_are_not_integers():
    """Where 1.0 is an integer, `not integer` leaves the numbers of other values: fractions
    with a nonzero digit are written, integral spellings never (oneOf's first example in the
    official test suite)."""
    one_of = {"oneOf": [{"type": "integer"}, {"minimum": 2}]}
    grammar = from_json_schema(one_of)
    for text in ["1", "-7", "2.5", "1000.25"]:
        assert grammar.accepts(text), text
    for text in ["3", "2", "2.0", "1.5", "3.00"]:
        assert not grammar.accepts(text), text
    assert_sound_sentences(one_of, grammar)
    # In draft 4, 2.0 is not an integer, so it stays.
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "not": {"type": "integer"}}
    assert from_json_schema(draft4).accepts("2.0")


@given(st.fractions(-10, 10, max_denominator=8), st.fractions(-10, 10, max_denominator=8),
       st.booleans(), st.booleans(), st.decimals(-12, 12, places=3, allow_nan=False))
@settings(max_examples=150, deadline=None)
def test_bounded_numbers_that_are_not_integers(lo, hi, lo_exclusive, hi_exclusive, x):
    """Within bounds, every non-integral decimal the validator accepts is written, and nothing
    it rejects: each bound as given or exclusive, `x` at three places."""
    schema = {"type": "number", "not": {"type": "integer"},
              ("exclusiveMinimum" if lo_exclusive else "minimum"): float(lo),
              ("exclusiveMaximum" if hi_exclusive else "maximum"): float(hi)}
    grammar = from_json_schema(schema)
    text = format(x, "f")
    if valid(schema, text) and "." in text.strip("0").rstrip("."):
        assert grammar.accepts(text), text
    for spelling in (text, text.rstrip("0"), text + "0", str(int(x)), f"{int(x)}.0"):
        if grammar.accepts(spelling):
            assert valid(schema, spelling), spelling
    assert_sound_sentences(schema, grammar, n=10)


def test_not_and_if_then_else():
    schema = {"type": "object", "not": {"required": ["x"]}, "if": {"properties": {"k": {"const": 1}}, "required": ["k"]}, "then": {"required": ["v"]}}
    grammar = from_json_schema(schema)
    for text in ['{"k":1,"v":2}', '{"k":2}', "{}"]:
        assert grammar.accepts(text) == valid(schema, text), text
    assert not grammar.accepts('{"k":1}') and not grammar.accepts('{"x":1}')
    assert_sound_sentences(schema, grammar)


def test_recursive_refs():
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"], "additionalProperties": False}},
        "$ref": "#/$defs/node",
    }
    grammar = from_json_schema(schema)
    assert grammar.accepts('{"v":1,"kids":[{"v":2,"kids":[]},{"v":3}]}')
    assert not grammar.accepts('{"v":1,"kids":[{"kids":[]}]}')
    assert_sound_sentences(schema, grammar)


def test_ref_siblings_ignored_before_2019():
    d7 = {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}}
    grammar = from_json_schema(d7)
    assert grammar.accepts('{"a":"long"}')
    assert Ignored("maxLength", "/properties/a") in grammar.ignored
    d2020 = {"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 1}}}
    assert not from_json_schema(d2020).accepts('{"a":"long"}')


def test_ids_and_anchors():
    schema = {
        "$id": "http://example.com/root.json",
        "$defs": {"a": {"$id": "other.json", "$defs": {"b": {"$anchor": "bee", "type": "integer"}}}},
        "properties": {"x": {"$ref": "other.json#bee"}, "y": {"$ref": "http://example.com/root.json#/$defs/a/$defs/b"}},
    }
    grammar = from_json_schema(schema)
    assert grammar.accepts('{"x":1,"y":2}') and not grammar.accepts('{"x":"1"}')


def test_draft4_boolean_exclusive_bounds_and_dependencies():
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}}, "dependencies": {"a": ["b"]}}
    grammar = from_json_schema(schema)
    assert grammar.accepts('{"n":1}') and not grammar.accepts('{"n":0}')
    assert grammar.accepts('{"a":1,"b":2}') and not grammar.accepts('{"a":1}')
    assert_sound_sentences(schema, grammar)


def test_remote_refs_and_cycles_are_refused():
    with pytest.raises(CompileError) as e:
        from_json_schema({"properties": {"a": {"$ref": "http://example.com/x.json"}}})
    assert e.value.keyword == "$ref" and e.value.pointer == "/properties/a"
    with pytest.raises(CompileError):
        from_json_schema({"$ref": "#"})
    lenient = from_json_schema({"properties": {"a": {"$ref": "other.json"}}}, lenient=True)
    assert [d.keyword for d in lenient.dropped] == ["$ref"]


def test_unsupported_keywords_name_the_place():
    with pytest.raises(CompileError) as e:
        from_json_schema({"properties": {"list": {"type": "array", "contains": {"type": "integer"}}}})
    assert e.value.keyword == "contains" and e.value.pointer == "/properties/list"


def test_limits_are_errors():
    deep: dict = {"type": "integer"}
    for _ in range(300):
        deep = {"type": "array", "items": deep}
    with pytest.raises(LimitError):
        from_json_schema(deep)


# --- whitespace and free JSON --------------------------------------------------------------------


def test_whitespace_is_bounded():
    grammar = from_json_schema({"type": "object", "properties": {"a": {"type": "array"}}}, whitespace=2)
    assert grammar.accepts('{ "a" : [ 1 ,  2 ] }')
    assert not grammar.accepts('{   "a":[]}')
    assert not from_json_schema({"type": "object"}).accepts('{ }')


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(), lambda c: st.lists(c) | st.dictionaries(st.text(), c), max_leaves=10))
@settings(max_examples=100, deadline=None)
def test_any_json_accepts_every_value(value):
    grammar = any_json()
    assert grammar.accepts(compact(value))


# --- instances generated from schemas ---------------------------------------------------------


def _values(schema: dict):
    """A hypothesis strategy for values of a small schema language (types, bounds, enums,
    properties, items), written independently of the compiler."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    t = schema.get("type")
    if t == "integer":
        return st.integers(schema.get("minimum", -10**6), schema.get("maximum", 10**6))
    if t == "number":
        return st.floats(schema.get("minimum", -1e6), schema.get("maximum", 1e6)).map(lambda x: round(x, 4))
    if t == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 8))
    if t == "boolean":
        return st.booleans()
    if t == "array":
        return st.lists(_values(schema["items"]), min_size=schema.get("minItems", 0), max_size=schema.get("maxItems", 4))
    if t == "object":
        props = schema.get("properties", {})
        required = schema.get("required", [])
        return st.fixed_dictionaries(
            {k: _values(v) for k, v in props.items() if k in required},
            optional={k: _values(v) for k, v in props.items() if k not in required},
        ).map(lambda d: {k: d[k] for k in props if k in d})
    return st.none()


def _schemas():
    leaf = st.sampled_from([
        {"type": "integer", "minimum": -5, "maximum": 300},
        {"type": "number", "minimum": 0, "maximum": 10},
        {"type": "string", "minLength": 1, "maxLength": 5},
        {"type": "boolean"},
        {"enum": ["x", "y", 3]},
    ])
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(lambda s, lo: {"type": "array", "items": s, "minItems": lo, "maxItems": lo + 2}, inner, st.integers(0, 2)),
            st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, min_size=1, max_size=3).flatmap(
                lambda props: st.lists(st.sampled_from(sorted(props)), unique=True).map(
                    lambda req: {"type": "object", "properties": props, "required": req, "additionalProperties": False}
                )
            ),
        ),
        max_leaves=6,
    )


@given(st.data())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_generated_instances_are_accepted_and_mutations_follow_the_oracle(data):
    schema = data.draw(_schemas())
    grammar = from_json_schema(schema)
    value = data.draw(_values(schema))
    assert oracle(schema).is_valid(value)
    assert grammar.accepts(compact(value))
    # A mutated value is rejected exactly when the oracle rejects it.
    mutant = data.draw(_mutated(value))
    assert grammar.accepts(compact(mutant)) == oracle(schema).is_valid(mutant), (schema, mutant)


def _mutated(value):
    if isinstance(value, dict) and value:
        return st.sampled_from(sorted(value)).flatmap(
            lambda k: st.one_of(
                st.just({kk: v for kk, v in value.items() if kk != k}),
                _mutated(value[k]).map(lambda v: {**value, k: v}),
                st.just({**value, "zz": 1}),
            )
        )
    if isinstance(value, list) and value:
        return st.integers(0, len(value) - 1).flatmap(
            lambda i: st.one_of(st.just(value[:i] + value[i + 1 :]), _mutated(value[i]).map(lambda v: value[:i] + [v] + value[i + 1 :]), st.just(value + value[:1]))
        )
    return st.one_of(st.none(), st.booleans(), st.integers(-400, 400), st.text(max_size=6), st.just(value))


@pytest.mark.parametrize("schema", [{}, True, {"type": "object"}, {"description": "no arguments"}])
def test_keyword_arguments_of_a_schema_that_declares_nothing_are_the_empty_call(schema):
    from grammar._jsonschema import keyword_arguments

    g = keyword_arguments(schema)
    assert g.accepts("") and not g.accepts("a=1")


def test_keyword_arguments_follow_declared_properties_through_refs_and_branches():
    from grammar._jsonschema import keyword_arguments

    g = keyword_arguments({
        "$defs": {"n": {"type": "integer", "minimum": 0}},
        "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]}},
        "required": ["a"],
    })
    assert g.accepts("a=1") and g.accepts('a=2, b="x"') and g.accepts("a=3,b=null")
    assert not g.accepts("a=-1") and not g.accepts('a=1, b="xyz"') and not g.accepts("b=null")

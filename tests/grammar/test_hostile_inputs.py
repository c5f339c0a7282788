"""Hostile inputs to every front end: huge numbers, deep nesting, many members. Each gives a
grammar that compiles or a `grammar.GrammarError`, never a `RecursionError` or another raw
exception, and within bounded memory."""

from __future__ import annotations

import json
import sys
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from grammar import GrammarError, LimitError
from grammar._ir import Alt, Lit, Ref, Repeat, Seq

VOCAB = grammar.Vocabulary.from_tokens([bytes([b]) for b in range(32, 127)] + [b""], eos_ids=(95,))


def typed_or_compiled(make) -> grammar.Grammar | GrammarError:
    """The grammar `make()` builds, compiled, rendered and run once; or the GrammarError one of
    those steps raised. Any other exception fails the test."""
    try:
        g = make()
        g.accepts("a")
        g.to_gbnf()
        grammar.compile(g, VOCAB)
        return g
    except GrammarError as e:
        return e


# --- numbers: bounds of hundreds of digits ------------------------------------------------


BIG = sys.float_info.max


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "number", "minimum": 1e308},
        {"type": "number", "minimum": 1e200},
        {"type": "number", "minimum": 1e300},
        {"type": "number", "maximum": -1e308},
        {"type": "number", "exclusiveMinimum": BIG},
        {"type": "number", "exclusiveMaximum": -BIG},
        {"type": "number", "minimum": -BIG, "maximum": BIG},
        {"type": "integer", "minimum": 10**300},
        {"type": "integer", "minimum": 10**300 + 7, "maximum": 10**305 + 3},
        {"type": "integer", "minimum": 10**350 + 1, "multipleOf": 3},
        {"type": "integer", "maximum": -(10**300) - 9},
    ],
)
def test_a_bound_of_hundreds_of_digits_compiles(schema):
    g = typed_or_compiled(lambda: grammar.from_json_schema(schema))
    assert isinstance(g, grammar.Grammar), g
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    if low is not None:
        edge = int(low)
        inside = edge + 1 if "exclusiveMinimum" in schema or low != edge else edge
        step = schema.get("multipleOf", 1)
        inside += -inside % step
        assert g.accepts(str(inside))
        assert not g.accepts(str(edge - 1))


def test_the_largest_float_as_a_bound_keeps_its_language():
    g = grammar.from_json_schema({"type": "number", "minimum": 1e308})
    edge = int(1e308)
    assert g.accepts(str(edge)) and g.accepts(str(edge) + ".5") and g.accepts(str(edge * 10))
    assert not g.accepts(str(edge - 1)) and not g.accepts("1e307") and not g.accepts("5")


def test_integer_ranges_with_a_modulus_are_exact():
    # The flat range construction against the definition, over many small ranges.
    for low, high, k in [(-37, 1234, 1), (105, 9999, 7), (-5000, -17, 12), (0, 100000, 9), (99, 101, 2)]:
        g = grammar.from_json_schema({"type": "integer", "minimum": low, "maximum": high, "multipleOf": k})
        for x in range(low - 30, high + 30, max(1, (high - low) // 700)):
            assert g.accepts(str(x)) == (low <= x <= high and x % k == 0), (low, high, k, x)


# --- deep nesting, for every front end and the IR itself -------------------------------------


def _nested(depth: int, wrap, leaf):
    value = leaf
    for _ in range(depth):
        value = wrap(value)
    return value


def _ir_chain(depth: int) -> grammar.Grammar:
    rules = {f"r{i}": Seq((Lit("a"), Ref(f"r{i + 1}"))) for i in range(depth)}
    rules[f"r{depth}"] = Lit("b")
    rules["root"] = Ref("r0")
    return grammar.Grammar(rules)


DEEP = {
    "IR sequences": lambda d: grammar.Grammar({"root": _nested(d, lambda n: Seq((Lit("x"), n)), Lit("a"))}),
    "IR alternations": lambda d: grammar.Grammar({"root": _nested(d, lambda n: Alt((Lit("b"), n)), Lit("a"))}),
    "IR repeats": lambda d: grammar.Grammar({"root": _nested(d, lambda n: Repeat(Seq((n, Lit("y"))), 0, 1), Lit("a"))}),
    "IR rule chain": _ir_chain,
    "either of deep IR": lambda d: grammar.either(DEEP["IR sequences"](d), DEEP["IR rule chain"](d)),
    "regex groups": lambda d: grammar.from_regex("(" * d + "a" + ")" * d),
    "regex alternations": lambda d: grammar.from_regex("(b|" * d + "a" + ")" * d),
    "regex optional groups": lambda d: grammar.from_regex("(a" * d + ")?" * d),
    "GBNF parentheses": lambda d: grammar.from_gbnf("root ::= " + "(" * d + '"a"' + ")" * d),
    "GBNF rule chain": lambda d: grammar.from_gbnf(
        "root ::= r0\n" + "\n".join(f'r{i} ::= "a" | "c" r{i + 1}' for i in range(d)) + f'\nr{d} ::= "b"'
    ),
    "schema items": lambda d: grammar.from_json_schema(_nested(d, lambda s: {"items": s}, {"type": "integer"})),
    "schema properties": lambda d: grammar.from_json_schema(
        _nested(d, lambda s: {"type": "object", "properties": {"a": s}, "required": ["a"]}, {"type": "integer"})
    ),
    "schema anyOf": lambda d: grammar.from_json_schema(_nested(d, lambda s: {"anyOf": [s, {"type": "null"}]}, {})),
    "schema allOf": lambda d: grammar.from_json_schema(_nested(d, lambda s: {"allOf": [s]}, {"type": "integer"})),
    "schema not": lambda d: grammar.from_json_schema(_nested(d, lambda s: {"not": s}, {"type": "integer"})),
    "schema $ref chain": lambda d: grammar.from_json_schema(
        {"$defs": {**{f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(d)}, f"d{d}": {"type": "integer"}},
         "$ref": "#/$defs/d0"}
    ),
    "schema $ref chain of arrays": lambda d: grammar.from_json_schema(
        {"$defs": {**{f"d{i}": {"items": {"$ref": f"#/$defs/d{i + 1}"}} for i in range(d)}, f"d{d}": {}},
         "$ref": "#/$defs/d0"}
    ),
    "schema const": lambda d: grammar.from_json_schema({"const": _nested(d, lambda v: [v], [])}),
    "schema text": lambda d: grammar.from_json_schema("[" * d + "]" * d),
    "schema pattern": lambda d: grammar.from_json_schema({"type": "string", "pattern": "^" + "(" * d + "a" + ")" * d + "$"}),
    "schema propertyNames": lambda d: grammar.from_json_schema(
        {"type": "object", "propertyNames": {"pattern": "^" + "(a" * d + ")?" * d + "$"}}
    ),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(sorted(DEEP)), depth=st.sampled_from([1, 30, 99, 101, 200, 333, 700, 1500, 10_000]))
def test_deep_inputs_give_a_grammar_or_a_typed_error(case, depth):
    typed_or_compiled(lambda: DEEP[case](depth))


@pytest.mark.parametrize("depth", [101, 800, 10_000])
@pytest.mark.parametrize("build", [
    grammar.from_regex,
    lambda pattern: grammar.from_json_schema({"type": "string", "pattern": pattern}),
])
def test_a_deep_regex_names_the_group_bound_not_pythons_stack(build, depth):
    with pytest.raises(grammar.LimitError) as info:
        build("(" * depth + "a" + ")" * depth)
    assert "nested more than" in str(info.value) and "recursion" not in str(info.value)
    assert info.value.keyword == "pattern"


@pytest.mark.parametrize("case", ["IR sequences", "IR alternations", "IR repeats", "IR rule chain", "GBNF rule chain"])
def test_deep_ir_keeps_its_language(case):
    """Nodes nested past Python's stack are split into rules of their own, not refused."""
    g = DEEP[case](10_000)
    assert isinstance(typed_or_compiled(lambda: g), grammar.Grammar)
    text = g.to_gbnf()
    assert grammar.gbnf_problem(text) is None
    again = grammar.from_gbnf(text)
    if case == "IR sequences":
        assert g.accepts("x" * 10_000 + "a") and again.accepts("x" * 10_000 + "a")
        assert not g.accepts("x" * 9_999 + "a") and not again.accepts("x" * 9_999 + "a")
    if case == "IR alternations":
        assert g.accepts("b") and g.accepts("a") and not g.accepts("ab")
    if case == "IR rule chain":
        assert g.accepts("a" * 10_000 + "b") and not g.accepts("a" * 9_999 + "b")


# --- the class: random hostile schemas ---------------------------------------------------------


HOSTILE_NUMBERS = [
    0, -0.0, 1, -1, 0.1, 1e-300, -1e-300, 5e-324, -5e-324, 1e16, 2**53, 2**53 + 1, 1e200, 1e308, -1e308,
    BIG, -BIG, 10**20 + 1, 10**300, -(10**300), 123456789.123456789, 1.0000000000000002, 0.30000000000000004,
]
HOSTILE_COUNTS = [0, 1, 2, 3, 17, 10**5, 10**5 + 1, 10**9, 2**31, 2**63]
MEMORY_LIMIT = 400 * 2**20  # bytes Python may hold at once while one schema compiles


def _numbers() -> st.SearchStrategy[dict]:
    bound = st.sampled_from(HOSTILE_NUMBERS)
    return st.fixed_dictionaries(
        {"type": st.sampled_from(["number", "integer"])},
        optional={
            "minimum": bound, "maximum": bound, "exclusiveMinimum": bound, "exclusiveMaximum": bound,
            "multipleOf": st.sampled_from([1e-300, 0.1, 2.5, 1, 3, 10**4, 10**9, 10**300, 5e-324]),
        },
    )


def _strings() -> st.SearchStrategy[dict]:
    count = st.sampled_from(HOSTILE_COUNTS)
    return st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={"minLength": count, "maxLength": count, "pattern": st.sampled_from(["^a+$", "^(ab|c){2,5}$", "x"])},
    )


def _enums() -> st.SearchStrategy[dict]:
    return st.sampled_from([
        {"enum": list(range(5_000))},
        {"enum": [f"v{i}" for i in range(5_000)]},
        {"enum": [1e308, -1e308, 5e-324, 10**300]},
        {"const": 10**300},
        {"const": {"a": [1e308, {"b": []}]}},
    ])


def _compound(inner: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    count = st.sampled_from(HOSTILE_COUNTS)
    many = st.sampled_from([0, 1, 5, 300, 2_500])
    return st.one_of(
        st.builds(lambda item, lo, hi: {"type": "array", "items": item, "minItems": lo, "maxItems": hi}, inner, count, count),
        st.builds(lambda item, lo: {"type": "array", "items": item, "minItems": lo}, inner, count),
        st.builds(
            lambda item, n, lo, extra: {
                "type": "object", "properties": {f"p{i}": item for i in range(n)}, "minProperties": lo,
                "additionalProperties": extra,
            },
            inner, many, count, st.sampled_from([True, False]),
        ),
        st.builds(lambda item, hi: {"type": "object", "additionalProperties": item, "maxProperties": hi}, inner, count),
        st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner),
        st.builds(lambda a, b: {"allOf": [a, b]}, inner, inner),
        st.builds(lambda a: {"not": a}, inner),
        st.builds(lambda a, d: _nested(d, lambda s: {"items": s}, a), inner, st.sampled_from([50, 150, 400])),
    )


HOSTILE_SCHEMAS = st.recursive(st.one_of(_numbers(), _strings(), _enums()), _compound, max_leaves=4)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(schema=HOSTILE_SCHEMAS, lenient=st.booleans())
def test_hostile_schemas_give_a_grammar_or_a_typed_error_in_bounded_memory(schema, lenient):
    tracemalloc.start()
    try:
        typed_or_compiled(lambda: grammar.from_json_schema(schema, lenient=lenient))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_LIMIT, (peak, json.dumps(schema, default=str)[:300])


# --- numbers too long to print, and too many to leave out -----------------------------------


@pytest.mark.parametrize(
    "schema, keyword, pointer",
    [
        ({"type": "integer", "minimum": 10**5000}, "minimum", "/minimum"),
        ({"properties": {"a/b": {"type": "number", "maximum": -(10**5000)}}}, "maximum", "/properties/a~1b/maximum"),
        ({"enum": [1, [10**5000]]}, "enum", "/enum/1/0"),
        ({"type": "integer", "multipleOf": 10**5000}, "multipleOf", "/multipleOf"),
    ],
)
def test_an_integer_past_pythons_digit_limit_is_a_limit_error_at_its_place(schema, keyword, pointer):
    with pytest.raises(LimitError) as info:
        grammar.from_json_schema(schema)
    assert (info.value.keyword, info.value.pointer) == (keyword, pointer)


def test_one_subschema_in_many_places_is_read_once_for_its_integers():
    """A document built in Python may hold one object as each of thousands of properties,
    nested: 2,500 to the fourth power places, read once each would never end."""
    item: dict = {"type": "integer", "minimum": 10**5000}
    for _ in range(4):
        item = {"type": "object", "properties": {f"p{i}": item for i in range(2500)}}
    with pytest.raises(LimitError, match="more than 4000 digits") as caught:
        grammar.from_json_schema(item)
    assert caught.value.keyword == "minimum"


def test_a_bound_past_the_digits_counted_names_its_place():
    with pytest.raises(LimitError, match="400 digits") as info:
        grammar.from_json_schema({"properties": {"n": {"type": "integer", "minimum": 10**500}}})
    assert info.value.pointer == "/properties/n"


def test_too_many_excluded_numbers_are_a_limit_error():
    g = grammar.from_json_schema({"type": "integer", "not": {"enum": list(range(0, 2000, 2))}})
    assert g.accepts("1") and g.accepts("1999") and not g.accepts("1998") and g.accepts("2000")
    with pytest.raises(LimitError) as info:
        grammar.from_json_schema({"properties": {"x": {"not": {"enum": list(range(5_000))}}}})
    assert (info.value.keyword, info.value.pointer) == ("not", "/properties/x")

"""Soundness of combinator schemas: `not`, `oneOf`, `anyOf`, `allOf`, `if`/`then`/`else`.

A grammar never accepts a text the validator (`Draft202012Validator` with its format checker)
rejects, and a matcher walking it never finishes an invalid or non-UTF-8 document. A schema may
be refused with a `CompileError`; no other exception may escape. `soundness_survey.py` runs the
same check on more schemas with other seeds.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import grammar
from combinator_schemas import ATOMS, compact, drawn_values, parts, pool_texts, schemas
from grammar import CompileError, from_json_schema
from grammar import Vocabulary

EOS = 0
# Single bytes (so a walk can spell anything, and can try every byte inside a string) and
# pieces that cross JSON's token boundaries.
WALK_VOCAB = Vocabulary.from_tokens(
    [b""] + [bytes([b]) for b in range(1, 256)]
    + [b'{"', b'":', b'",', b'"}', b'"a":', b'"b"', b"null", b"true", b"false", b"[]", b"{}", b"[0", b",1]",
       b"1.5", b"-0", b"e0", b"\\u00", b"\\u0061", b"\xc3\xa9", b"\xe2\x82\xac", b"\xed\xa0\x80", b"\xf0\x9f\x98\x80"],
    eos_ids=[EOS],
)
WALK_STEPS = 12
WALK_STEERING = 60


def validator(schema) -> Draft202012Validator:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def unsound(schema, g: grammar.Grammar, texts) -> list[str]:
    """The texts the grammar accepts and the validator rejects."""
    check = validator(schema)
    return [t for t in texts if g.accepts(t) and not check.is_valid(json.loads(t))]


def texts_for(schema, extra=()) -> list[str]:
    return list(dict.fromkeys(pool_texts() + [compact(v) for v in parts(schema)] + [compact(v) for v in extra]))


def walk_tables(g: grammar.Grammar) -> grammar.CompiledGrammar | None:
    """The grammar's token tables over the walk vocabulary; None for a grammar with no text."""
    try:
        return grammar.compile(g, WALK_VOCAB)
    except CompileError:
        return None


def walked_document(compiled: grammar.CompiledGrammar, rng: random.Random) -> bytes | None:
    """The bytes of one random matcher walk to EOS (steered to completion after a few random
    steps); None where the walk cannot finish within its budget."""
    m = grammar.Matcher(compiled)
    taken: list[int] = []
    for step in range(WALK_STEPS + WALK_STEERING):
        allowed = m.next_token_mask().allowed_ids()
        assert allowed.size > 0, "dead end: no token allowed"
        token = int(allowed[rng.randrange(allowed.size)]) if step < WALK_STEPS else m.shortest_completion_token()
        assert m.accept_token(token)
        taken.append(token)
        if m.is_terminated():
            return WALK_VOCAB.decode([t for t in taken if t != EOS])
    return None


def invalid_walk(schema, document: bytes) -> str | None:
    """Why a walked document is wrong (None where it is valid UTF-8 JSON the validator accepts)."""
    try:
        value = json.loads(document.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        return f"not UTF-8 JSON: {e}"
    return None if validator(schema).is_valid(value) else "rejected by the validator"


@given(schema=schemas(), data=st.data())
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
def test_combinator_grammars_accept_and_walk_only_valid_documents(schema, data):
    try:
        g = from_json_schema(schema)
    except CompileError:
        return
    drawn = data.draw(st.lists(drawn_values(schema), max_size=8))
    bad = unsound(schema, g, texts_for(schema, drawn))
    assert not bad, f"accepted invalid texts {bad[:5]} under {json.dumps(schema)}"
    compiled = walk_tables(g)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for _ in range(2 if compiled is not None else 0):
        document = walked_document(compiled, rng)
        if document is not None:
            why = invalid_walk(schema, document)
            assert why is None, f"walk finished {document!r}: {why}, under {json.dumps(schema)}"


# --- the cases that showed the causes ------------------------------------------------------------

# Each accepted its text while the validator rejects it: composite const/enum values in negation
# and in oneOf's disjointness, typeless keywords read as implying their type, no-op keywords.
REGRESSIONS = [
    ({"not": {"const": []}}, "[]"),
    ({"not": {"const": {}}}, "{}"),
    ({"oneOf": [{"const": [0]}, {"type": "array"}]}, "[0]"),
    ({"not": {"minLength": 2}}, "5"),
    ({"oneOf": [{"maxItems": 1}, {"minimum": 3}]}, "3"),
    ({"if": {"minimum": 3}, "then": {"const": None}}, "true"),
    ({"not": {"type": "string", "minLength": 0}}, '"a"'),
    # Found by the property test: oneOf's disjointness proved on a branch compiled narrower than
    # it is (`not integer` leaves out 1.5; a oneOf that could not negate `format` exactly; float
    # multipleOf bounded to exact integers).
    ({"oneOf": [{"not": {"type": "integer"}}, {"anyOf": [{"minLength": 0}]}]}, "1.5"),
    ({"oneOf": [{"const": {"a": 1.5}}, {"properties": {"a": {"not": {"type": "integer"}}}}]}, '{"a":1.5}'),
    ({"oneOf": [{"oneOf": [{"format": "email", "maxLength": 5}, {"type": "string", "minLength": 3}]},
                {"type": "string", "minLength": 4, "maxLength": 4}]}, '"abcd"'),
    ({"oneOf": [{"multipleOf": 2.0}, {"minimum": 2**54}]}, str(2**54)),
]


@pytest.mark.parametrize("schema, text", REGRESSIONS)
def test_minimal_cases_reject_their_invalid_text(schema, text):
    assert not validator(schema).is_valid(json.loads(text))
    try:
        g = from_json_schema(schema)
    except CompileError as e:
        assert e.keyword and e.pointer is not None
        return
    assert not g.accepts(text)
    assert not unsound(schema, g, texts_for(schema))


# Negations, exclusivity and conditionals compiled exactly: on canonical texts of the pool and of
# the schema's parts, the grammar and the validator agree both ways.
EXACT = [schema for schema, _ in REGRESSIONS[:7]] + [
    {"not": {"enum": [[0, 1], {"a": 1}, {"a": [1]}, [[]]]}},
    {"type": "array", "items": {"not": {"const": [1]}}},
    {"oneOf": [{"const": {"a": 1}}, {"required": ["a"]}]},
    {"not": {"oneOf": [{"type": "string"}, {"maxLength": 1}]}},
    {"not": {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "array"}}},
    {"not": {"dependentRequired": {"a": ["b"]}}},
    {"not": {"dependentSchemas": {"a": {"required": ["b"]}}}},
    {"not": {"prefixItems": [{"type": "string"}], "items": False}},
    {"not": {"type": "number", "items": {"type": "integer"}}},  # items says nothing of numbers
    {"not": {"minItems": 0, "additionalProperties": True, "propertyNames": {}}},  # no-ops: nothing
]


@pytest.mark.parametrize("schema", EXACT)
def test_exact_combinators_agree_with_the_validator(schema):
    g = from_json_schema(schema)
    check = validator(schema)
    texts = [compact(v) for v in list(ATOMS) + parts(schema)]
    assert [t for t in texts if g.accepts(t) != check.is_valid(json.loads(t))] == []


def test_inexact_negation_is_refused_naming_keyword_and_place():
    # An item somewhere failing `items` (a `contains`) is not a language the compiler builds.
    with pytest.raises(CompileError) as e:
        from_json_schema({"properties": {"a": {"not": {"items": {"type": "integer"}}}}})
    assert (e.value.keyword, e.value.pointer) == ("not", "/properties/a")
    with pytest.raises(CompileError) as e:
        from_json_schema({"if": {"multipleOf": 2}, "then": {"type": "integer"}})
    assert e.value.keyword == "if"

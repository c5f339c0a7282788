"""The form of a grammar's JSON: compact by default, `json.dumps`'s separators with
`separators=(", ", ": ")`, free blanks with `whitespace=N`.

The spaced form is the compact one with its separators spelled otherwise: a value's
`json.dumps` text is accepted exactly where its compact text is by the compact grammar, the one
form's text is refused by the other where the two differ, and nothing the validator rejects is
accepted or walked to.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import grammar
from combinator_schemas import ATOMS, compact, drawn_values, parts, schemas
from grammar import CompileError, ToolSchema, Vocabulary, from_json_schema

SPACED = (", ", ": ")
EOS = 0
# Single bytes, so a walk can spell anything, and pieces that cross the separators.
WALK_VOCAB = Vocabulary.from_tokens(
    [b""] + [bytes([b]) for b in range(1, 256)]
    + [b", ", b": ", b'", "', b'": ', b'{"', b'"}', b'":', b'",', b"[]", b"{}", b"[0, ", b"null", b"true",
       b"\xc3\xa9", b"\\u0061"],
    eos_ids=[EOS],
)


def spaced(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def valid(schema, value) -> bool:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid(value)


def separators_outside_strings(text: str) -> list[str]:
    """What stands between a document's tokens outside its strings: each `,` or `:` with the
    blanks around it, and any other run of blanks."""
    found, i, in_string = [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in ",: \t\n\r":
            j = i
            while j < len(text) and text[j] in " \t\n\r":
                j += 1
            if j < len(text) and text[j] in ",:" and text[i:j].strip() == "":
                j += 1
                while j < len(text) and text[j] in " \t\n\r":
                    j += 1
            found.append(text[i:j])
            i = j
            continue
        i += 1
    return found


def walked(g: grammar.Grammar, rng: random.Random, free_steps: int = 14) -> str | None:
    """One random matcher walk to EOS, steered to completion after a few random steps."""
    m = grammar.Matcher(grammar.compile(g, WALK_VOCAB))
    taken: list[int] = []
    for step in range(free_steps + 80):
        allowed = m.next_token_mask().allowed_ids()
        assert allowed.size > 0, "dead end: no token allowed"
        token = int(allowed[rng.randrange(allowed.size)]) if step < free_steps else m.shortest_completion_token()
        assert m.accept_token(token)
        taken.append(token)
        if m.is_terminated():
            return WALK_VOCAB.decode([t for t in taken if t != EOS]).decode("utf-8")
    return None


# --- values and the schemas they satisfy ---------------------------------------------------------

_keys = st.text(st.sampled_from('abé"\\ \n,:'), min_size=1, max_size=3)
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(st.sampled_from('ab ,:"\\é{}[]\n'), max_size=4),
)
values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=8,
)


def schema_of(value, draw) -> dict:
    """A schema `value` satisfies: its type's keywords (properties in the value's key order, some
    of them required), or now and then a `const`/`enum` holding it."""
    if draw(st.integers(0, 5)) == 0:
        return {"const": value} if draw(st.booleans()) else {"enum": [0, value, "x"]}
    if isinstance(value, dict):
        names = list(value)
        return {"type": "object", "properties": {k: schema_of(v, draw) for k, v in value.items()},
                "required": draw(st.lists(st.sampled_from(names), unique=True)) if names else []}
    if isinstance(value, list):
        if not value:
            return {"type": "array", "maxItems": draw(st.integers(0, 2))}
        return {"type": "array", "items": {"anyOf": [schema_of(v, draw) for v in value]},
                "minItems": draw(st.integers(0, len(value)))}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if value is None:
        return {"type": "null"}
    if isinstance(value, int):
        return {"type": "integer", "minimum": value - draw(st.integers(0, 3))}
    if isinstance(value, float):
        return {"type": "number"}
    return {"type": "string", "maxLength": len(value) + draw(st.integers(0, 2))}


@given(value=values, data=st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_valid_values_json_dumps_text_is_accepted_by_the_spaced_form_only(value, data):
    schema = schema_of(value, data.draw)
    assert valid(schema, value)
    g = from_json_schema(schema, separators=SPACED)
    c = from_json_schema(schema)
    assert g.accepts(spaced(value)), f"refused {spaced(value)!r} under {json.dumps(schema)}"
    assert c.accepts(compact(value))
    if spaced(value) != compact(value):
        assert not g.accepts(compact(value)), f"the spaced form accepted {compact(value)!r}"
        assert not c.accepts(spaced(value)), f"the compact form accepted {spaced(value)!r}"
    # Blanks after an opening bracket or before a closing one are no separator json.dumps writes.
    if isinstance(value, (dict, list)) and value:
        assert not g.accepts(spaced(value)[0] + " " + spaced(value)[1:])


@given(schema=schemas(), data=st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_spaced_form_accepts_what_the_compact_form_does_and_only_valid_values(schema, data):
    """Over combinator schemas (`not`, `oneOf`, `if` ...): a value's spaced text is accepted
    exactly where its compact text is by the compact form, never where the validator rejects
    it; a random walk of the spaced form ends in a valid document with json.dumps's separators."""
    try:
        g = from_json_schema(schema, separators=SPACED)
    except CompileError:
        with pytest.raises(CompileError):
            from_json_schema(schema)
        return
    c = from_json_schema(schema)
    candidates = list(ATOMS) + parts(schema) + data.draw(st.lists(drawn_values(schema), max_size=8))
    for value in candidates:
        accepted = g.accepts(spaced(value))
        assert accepted == c.accepts(compact(value)), f"{spaced(value)!r} under {json.dumps(schema)}"
        assert not accepted or valid(schema, value), f"accepted invalid {spaced(value)!r} under {json.dumps(schema)}"
        if spaced(value) != compact(value):
            assert not g.accepts(compact(value))
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    try:
        document = walked(g, rng)
    except CompileError:  # a grammar with no sentence has no tables to walk
        return
    if document is not None:
        assert valid(schema, json.loads(document)), f"walked to invalid {document!r} under {json.dumps(schema)}"
        assert set(separators_outside_strings(document)) <= set(SPACED), document


@given(value=values)
@settings(max_examples=60, deadline=None)
def test_any_json_in_the_spaced_form_reads_json_dumps_texts(value):
    assert grammar.any_json(separators=SPACED).accepts(spaced(value))
    if spaced(value) != compact(value):
        assert not grammar.any_json(separators=SPACED).accepts(compact(value))


def test_a_walk_of_any_json_in_the_spaced_form_writes_json_dumps_separators():
    g = grammar.any_json(separators=SPACED)
    rng = random.Random(7)
    documents = [d for d in (walked(g, rng, free_steps=30) for _ in range(20)) if d is not None]
    assert documents
    for d in documents:
        json.loads(d)
        assert set(separators_outside_strings(d)) <= set(SPACED), d


def test_free_blanks_are_still_bounded_and_the_default_is_compact():
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}
    assert from_json_schema(schema).accepts('{"a":[1,2]}')
    assert not from_json_schema(schema).accepts('{"a": [1, 2]}')
    two = from_json_schema(schema, whitespace=2)
    assert two.accepts('{ "a" :  [1 ,2]}') and two.accepts('{"a": [1, 2]}')
    assert not two.accepts('{"a":   [1,2]}')


def test_other_separators_are_held_exactly():
    g = from_json_schema({"type": "array", "items": {"type": "object"}}, separators=(" ,\n", " : "))
    assert g.accepts('[{"k" : 1 ,\n"j" : 2}]')
    assert not g.accepts('[{"k": 1, "j": 2}]')


@pytest.mark.parametrize("options, keyword", [
    ({"separators": (",", ":"), "whitespace": 1}, "separators"),
    ({"separators": (";", ":")}, "separators"),
    ({"separators": (",", " ")}, "separators"),
    ({"separators": (", x", ": ")}, "separators"),
    ({"separators": ", "}, "separators"),
    ({"separators": (", ", ": ", " ")}, "separators"),
    ({"separators": (1, ": ")}, "separators"),
    ({"whitespace": -1}, "whitespace"),
])
def test_a_malformed_form_is_a_compile_error_naming_its_argument(options, keyword):
    with pytest.raises(CompileError) as err:
        from_json_schema({"type": "object"}, **options)
    assert err.value.keyword == keyword


# --- tool calls ----------------------------------------------------------------------------------

TOOLS = [ToolSchema("get_weather", {"type": "object", "properties": {"city": {"type": "string"},
                                                                     "days": {"type": "array",
                                                                              "items": {"type": "integer"}}},
                                    "required": ["city"]})]


@pytest.mark.parametrize("envelope", ["json", "hermes", "fenced"])
def test_tool_calls_write_the_call_and_its_arguments_in_the_form(envelope):
    call = {"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}
    before, after = {"json": ("", ""), "hermes": ("<tool_call>\n", "\n</tool_call>"),
                     "fenced": ("```json\n", "\n```")}[envelope]
    g = grammar.tool_calls(TOOLS, envelope=envelope, separators=SPACED, max_calls=2)
    assert g.accepts(before + spaced(call) + after)
    assert not g.accepts(before + compact(call) + after)
    assert grammar.tool_calls(TOOLS, envelope=envelope).accepts(before + compact(call) + after)
    assert grammar.parse_tool_calls(before + spaced(call) + after, envelope=envelope) == [call]
    if envelope != "hermes":
        assert g.accepts(before + spaced([call, call]) + after)


def test_tool_calls_or_text_under_a_byte_budget_keep_the_form():
    call = {"name": "get_weather", "arguments": {"city": "Oslo"}}
    g = grammar.tool_calls_or_text(TOOLS, envelope=("hermes", "json"), separators=SPACED, preamble=True,
                                   max_bytes=120)
    assert g.accepts(spaced(call)) and not g.accepts(compact(call))
    assert g.accepts("Let me look.<tool_call>\n" + spaced(call) + "\n</tool_call>")
    assert grammar.longest_bytes(g) <= 120


def test_python_calls_write_their_json_values_in_the_form():
    g = grammar.tool_calls(TOOLS, envelope="python", separators=SPACED)
    assert g.accepts('[get_weather(city="Rome", days=[1, 2])]')
    assert not g.accepts('[get_weather(city="Rome", days=[1,2])]')


def test_tool_calls_refuse_both_forms_at_once():
    with pytest.raises(CompileError) as err:
        grammar.tool_calls(TOOLS, separators=SPACED, whitespace=4, max_bytes=200)
    assert err.value.keyword == "separators"

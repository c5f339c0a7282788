"""Masks of states that lead into a loop (a string's first characters, a pattern's minimum
length, inside free JSON or not) agree with stepping every token of a real vocabulary: the
loop state's class answers most tokens there without a walk, so this is where a shortcut would
show."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from ir_sampling import tokens_that_step

PATTERNS = ["^[a-z]+(?:-[a-z0-9]+)*$", "^[A-Z][a-z]+$", "^[A-Za-z_][A-Za-z0-9_]*$", "^[^@ ]+@[^@ ]+$", "^.*$"]


def _string(min_length: int, pattern: str | None, max_length: int | None) -> dict:
    schema: dict = {"type": "string", "minLength": min_length}
    if pattern is not None:
        schema["pattern"] = pattern
    if max_length is not None:
        schema["maxLength"] = max(max_length, min_length)
    return schema


@st.composite
def schemas(draw) -> dict:
    value = _string(draw(st.integers(0, 4)), draw(st.none() | st.sampled_from(PATTERNS)),
                    draw(st.none() | st.integers(6, 40)))
    items = {"type": "array", "items": value, "minItems": draw(st.integers(0, 2))}
    inner = {"type": "object", "properties": {"name": value, "tags": items}, "required": ["name"]}
    if draw(st.booleans()):  # other keys hold any JSON value: a recursive grammar, states in frames
        return {"type": "object", "properties": {"rows": {"type": "array", "items": inner}}}
    return {**inner, "additionalProperties": False}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schema=schemas(), data=st.data())
def test_masks_entering_loops_agree_with_every_token(smollm2_vocabulary, schema, data):
    vocab = smollm2_vocabulary
    m = grammar.Matcher(grammar.compile(grammar.from_json_schema(schema), vocab))
    # A few random tokens in, then a state whose mask is compared whole.
    for _ in range(data.draw(st.integers(1, 14))):
        allowed = m.next_token_mask().allowed_ids()
        token = int(allowed[data.draw(st.integers(0, allowed.size - 1))])
        if token in vocab.eos_ids:
            break
        m.accept_token(token)
    if m.is_terminated():
        return
    assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, vocab.size)


@pytest.mark.parametrize(
    "schema,prefix",
    [
        ({"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+(?:-[a-z0-9]+)*$",
                                                    "minLength": 3}}, "required": ["name"],
          "additionalProperties": False}, b'{"name":"'),
        ({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "minLength": 1}}}},
         b'{"a":["'),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, b'{"b":"'),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^[A-Z][a-z]+$"}}}, b'{"a":"'),
        ({"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}}, b'{"a":"x'),
    ],
)
def test_a_string_s_first_characters_agree_with_every_token(smollm2_vocabulary, schema, prefix):
    """The states right after a string's opening quote, named: where it must hold characters
    before it may close, and inside free JSON."""
    m = grammar.Matcher(grammar.compile(grammar.from_json_schema(schema), smollm2_vocabulary))
    assert m.accept_bytes(prefix)
    allowed = m.next_token_mask().allowed_ids()
    assert allowed.size > 1000  # most of the vocabulary: the loop's class answered them
    assert set(allowed.tolist()) == tokens_that_step(m, smollm2_vocabulary.size)
    assert np.array_equal(np.sort(allowed), allowed)


_DECLARED = {"library": {"type": "string"}, "destination": {"type": "string"}}
_LIBRARY = {"type": "object", "properties": _DECLARED, "required": ["library"]}
_DESTINATION = {"type": "object", "properties": _DECLARED, "required": ["destination"]}


@pytest.mark.parametrize(
    "schema,prefix",
    [
        ({"anyOf": [_LIBRARY, _DESTINATION]}, b'{"library":"x","'),
        ({"type": "object", "properties": {"a": _LIBRARY, "b": _DESTINATION}}, b'{"a":{"library":"x","'),
    ],
)
def test_an_open_object_s_key_agrees_with_every_token(smollm2_vocabulary, schema, prefix):
    """A key of an open object: besides the declared keys left, any other key, whose text is
    one rule wherever objects declare the same keys (here two), called, so its frame may end
    anywhere inside it and a token such as `s":` goes on past the key's end. The loop's class
    answers the rest."""
    m = grammar.Matcher(grammar.compile(grammar.from_json_schema(schema), smollm2_vocabulary))
    assert m.accept_bytes(prefix)
    allowed = m.next_token_mask().allowed_ids()
    assert allowed.size > 1000
    assert set(allowed.tolist()) == tokens_that_step(m, smollm2_vocabulary.size)


@st.composite
def chains_into_loops(draw) -> tuple[dict, bytes]:
    """A pattern's class repeated at least `minLength` times (a chain of states, one per
    character, longer than the loop-entry walk follows, then a loop), in a rule called from
    two places, and a prefix inside it."""
    pattern = draw(st.sampled_from(["^[a-z0-9]+$", "^[ -~]+$", "^[A-Za-z_]+$"]))
    least = draw(st.integers(20, 40))
    value = {"type": "string", "pattern": pattern, "minLength": least}
    schema = {"type": "object", "properties": {"a": value, "b": value}, "additionalProperties": False}
    written = draw(st.integers(0, least + 3))
    return schema, b'{"b":"' + b"x" * written


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=chains_into_loops())
def test_a_chain_into_a_loop_agrees_with_every_token(smollm2_vocabulary, case):
    """Masks along a minimum length that ends in the class's loop (read from the class's
    profile, not a walk of every token) are the tokens that step."""
    schema, prefix = case
    m = grammar.Matcher(grammar.compile(grammar.from_json_schema(schema), smollm2_vocabulary))
    assert m.accept_bytes(prefix)
    assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)


@pytest.mark.parametrize("short_of", [2, 9, 15])
def test_a_minimum_length_short_of_its_loop_is_read_from_the_chain(smollm2_vocabulary, short_of):
    """A few characters short of a minimum length, inside a rule two properties call, the
    mask comes from the chain into the loop (the class's profile and a walk of the tokens that
    leave it), not a walk of every token at each count, and is the tokens that step."""
    value = {"type": "string", "pattern": "^[ -~]+$", "minLength": 30}
    schema = {"type": "object", "properties": {"a": value, "b": value}, "additionalProperties": False}
    compiled = grammar.CompiledGrammar(grammar.from_json_schema(schema), smollm2_vocabulary)
    m = grammar.Matcher(compiled)
    assert m.accept_bytes(b'{"b":"' + b"x" * (30 - short_of))
    before = compiled.profile.paths["chained"]
    allowed = m.next_token_mask().allowed_ids()
    assert compiled.profile.paths["chained"] == before + 1
    assert set(allowed.tolist()) == tokens_that_step(m, smollm2_vocabulary.size)


def test_string_starts_share_one_plan_of_the_vocabulary(smollm2_vocabulary, monkeypatch):
    """The first character of every non-empty string (different states of different
    properties, in a new grammar each) reads the vocabulary by one plan, found once, and each
    mask is the tokens that step."""
    from grammar._tokens.tables import TokenTables, token_tables

    tables = token_tables(smollm2_vocabulary)
    monkeypatch.setattr(tables, "_plans", type(tables._plans)())
    found = []
    plan = TokenTables._entry_plan
    monkeypatch.setattr(TokenTables, "_entry_plan", lambda self, *args: found.append(1) or plan(self, *args))
    for name in ("title", "body"):
        text = {"type": "string", "minLength": 1}
        schema = {"type": "object", "properties": {"title": text, "body": dict(text)},
                  "required": ["title", "body"], "additionalProperties": False}
        m = grammar.Matcher(grammar.CompiledGrammar(grammar.from_json_schema(schema), smollm2_vocabulary))
        prefix = b'{"title":"' if name == "title" else b'{"title":"a","body":"'
        assert m.accept_bytes(prefix)
        assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)
    assert len(found) == 1


def test_entries_into_one_loop_share_its_walk(smollm2_vocabulary, monkeypatch):
    """Each prefix of a key beside the declared names is its own state, and most bytes send
    each into the same loop (the inside of any other key): from the second entry on, the
    tokens walked from that loop are walked once and read by every entry, and each mask is
    the tokens that step."""
    from grammar._masks.walks import WalksMixin, _LoopWalk

    made, read = [], []
    walk_all, read_kept = WalksMixin._walk_all_from, _LoopWalk.read
    monkeypatch.setattr(WalksMixin, "_walk_all_from", lambda self, *args: made.append(1) or walk_all(self, *args))
    monkeypatch.setattr(_LoopWalk, "read", lambda self, *args: read.append(1) or read_kept(self, *args))
    schema = {"type": "object", "properties": {"name": {"type": "integer"}, "nick": {"type": "integer"}}}
    compiled = grammar.CompiledGrammar(grammar.from_json_schema(schema), smollm2_vocabulary)
    for prefix in (b'{"', b'{"n', b'{"ni', b'{"na', b'{"nam', b'{"x'):
        m = grammar.Matcher(compiled)
        assert m.accept_bytes(prefix)
        assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)
    assert len(made) == 1 and len(read) >= 2


def test_a_partial_match_walks_only_what_the_text_before_it_refuses(smollm2_vocabulary, monkeypatch):
    """Each step of a partial match of an unanchored pattern is its own state, which keeps
    the text before a match among its configurations: it allows every token the string's
    start allows, so a step walks only the rest (the tokens that close the string too soon),
    and each mask is the tokens that step."""
    from grammar._masks.walks import WalksMixin

    walked = []
    walk = WalksMixin._walk
    monkeypatch.setattr(WalksMixin, "_walk", lambda self, state, idx, *args, **kw: walked.append(idx.size)
                        or walk(self, state, idx, *args, **kw))
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "[0-9a-f]{4}-[0-9a-f]{4}"}},
              "required": ["id"], "additionalProperties": False}
    compiled = grammar.CompiledGrammar(grammar.from_json_schema(schema), smollm2_vocabulary)
    for i, prefix in enumerate((b'{"id":"', b'{"id":"1', b'{"id":"12', b'{"id":"1234-a', b'{"id":"x1234-ab')):
        m = grammar.Matcher(compiled)
        assert m.accept_bytes(prefix)
        walked.clear()
        assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)
        if i:
            assert sum(walked) < smollm2_vocabulary.size // 10


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.text("abc", max_size=4), max_size=5, unique=True),
       keys=st.lists(st.text('ab"\\c', max_size=5), min_size=1, max_size=8))
def test_other_keys_are_every_key_but_the_declared_ones(names, keys):
    """An open object's other keys (the declared names' trie, split into the keys that stop
    short of every name and those that leave them) are exactly the keys not declared, each
    with any JSON value; a declared key holds its own value only."""
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    g = grammar.from_json_schema(schema)
    for key in keys:
        text = json.dumps({key: "v"}, separators=(",", ":"))
        assert g.accepts(text) == (key not in names), (names, key)
    for name in names:
        assert g.accepts(json.dumps({name: 1}, separators=(",", ":")))
        assert not g.accepts(json.dumps({name: "v"}, separators=(",", ":")))


def test_a_key_that_leaves_the_declared_names_is_one_state_wherever_it_left():
    """Wherever a key leaves the declared names (at its first character or deep in a name),
    it stands in one state: the mask found there serves them all."""
    schema = {"type": "object", "properties": {"alpha": {"type": "integer"}, "beta": {"type": "integer"}}}
    vocab = grammar.Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b""], eos_ids=[256])
    compiled = grammar.compile(grammar.from_json_schema(schema), vocab)
    states = set()
    for prefix in (b'{"q', b'{"alx', b'{"alphaz', b'{"bq', b'{"betaa'):
        m = grammar.Matcher(compiled)
        assert m.accept_bytes(prefix)
        states.add(m.state)
    assert len(states) == 1


def test_strings_of_one_shape_are_one_rule_whose_inside_is_found_once():
    """Two properties hold strings of the same shape (a minimum length): one rule, called
    from each, so the walk from the string's start is made for the first and serves the
    second; the masks are what stepping decides."""
    string = {"type": "string", "minLength": 1}
    schema = {"type": "object", "properties": {"a": string, "b": string, "n": {"type": "integer"}},
              "required": ["a", "b", "n"], "additionalProperties": False}
    vocab = grammar.Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b'x","', b'","b":"', b""],
                                           eos_ids=[258])
    compiled = grammar.compile(grammar.from_json_schema(schema), vocab)
    m = grammar.Matcher(compiled)
    for prefix in (b'{"a":"', b'x","b":"'):
        assert m.accept_bytes(prefix)
        assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, vocab.size)
        assert len(compiled._inside) == 1
    assert compiled.profile.paths["framed"] == 2

"""Masks of states inside call frames: a rule called from several branches at once (the same
string property in each branch of an anyOf) is walked once inside, whichever frames hold it,
and each frame adds the tokens that cross the rule's end into what follows it there."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from ir_sampling import tokens_that_step

_STRINGS = [
    {"type": "string"},
    {"type": "string", "minLength": 1},
    {"type": "string", "pattern": "^[a-z ]+$"},
]


def _branches(value: dict) -> dict:
    """`a` in both branches of an anyOf: one requires it, the other requires `c`, so after
    `{"a":"` the string rule stands in two frames, and which tokens may close the string
    depends on the frame (`"}` ends the object only where `c` is not required)."""
    return {
        "type": "object",
        "properties": {"a": value, "b": value, "c": {"type": "integer"}},
        "anyOf": [{"required": ["a"]}, {"required": ["c"]}],
        "additionalProperties": False,
    }


@pytest.mark.parametrize("value", _STRINGS, ids=["any", "min1", "pattern"])
def test_a_rule_in_several_frames_is_walked_inside_once(smollm2_vocabulary, value):
    compiled = grammar.compile(grammar.from_json_schema(_branches(value)), smollm2_vocabulary)
    m = grammar.Matcher(compiled)
    assert m.accept_bytes(b'{"a":"x')
    local, frames, outside, _ = compiled.automaton.frame_split(m.state)
    assert len(frames) == 2 and outside < 0
    m.next_token_mask()
    assert compiled.profile.paths["framed"] >= 1 and local in compiled._inside


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.sampled_from(_STRINGS), text=st.text(alphabet="ab é\\\"", max_size=4))
def test_a_rule_in_several_frames_agrees_with_every_token(smollm2_vocabulary, value, text):
    """Whatever has been written of the string (escapes, a character of two bytes, a
    closing quote), the mask is the tokens that step."""
    m = grammar.Matcher(grammar.compile(grammar.from_json_schema(_branches(value)), smollm2_vocabulary))
    written = b'{"a":"' + text.replace("\\", "\\\\").replace('"', '\\"').encode()
    if not m.accept_bytes(written):
        return  # the pattern refuses the text
    assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)


_PLAIN_OR_PATTERN = {
    "anyOf": [
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z ]*$"}}, "additionalProperties": False},
    ]
}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet="ab Z\\\"", max_size=4))
def test_a_frame_beside_another_string_agrees_with_every_token(smollm2_vocabulary, text):
    """After `{"a":"`, the plain string's rule stands in its frame and the pattern's string
    outside it, which allows most tokens too: the mask joins the two by what neither allows."""
    compiled = grammar.compile(grammar.from_json_schema(_PLAIN_OR_PATTERN), smollm2_vocabulary)
    m = grammar.Matcher(compiled)
    assert m.accept_bytes(b'{"a":"')
    _, _, outside, _ = compiled.automaton.frame_split(m.state)
    assert outside >= 0 and compiled.mask(outside).inverted  # the case this test is for
    written = text.replace("\\", "\\\\").replace('"', '\\"').encode()
    if not m.accept_bytes(written):
        return
    assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)

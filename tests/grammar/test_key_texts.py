"""Keys of open objects beside declared names: a key's prefix is read as the string's inside for
every token without a quote (`marks.key_text`), and only the tokens with a quote are walked from
the prefix itself, whatever the names hold (escapes, characters of several bytes, one name a
prefix of another) and wherever the text written so far stops (inside an escape or a character,
on a name, past every name)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import grammar
from grammar._ir.marks import is_key_text, key_text
from ir_sampling import tokens_that_step

_NAME_CHARS = 'ab\\"é\n'
_OPEN = b'{"a":{"'  # the text before the key


def _schema(names: list[str]) -> dict:
    """Two open objects declaring `names`, of integers in one and strings in the other: the
    other keys' text is one rule called from both, so a key's prefix stands inside its frame."""
    def declaring(value: dict) -> dict:
        return {"type": "object", "properties": {n: value for n in names}}

    return {"type": "object", "properties": {"a": declaring({"type": "integer"}), "b": declaring({"type": "string"})}}


@st.composite
def keys_so_far(draw) -> tuple[list[str], bytes]:
    """Declared names and the text of a key written so far: along a name, or anything, cut at
    any byte (inside an escape, a character or the closing quote's neighbourhood)."""
    names = draw(st.lists(st.text(alphabet=_NAME_CHARS, max_size=4), min_size=1, max_size=4, unique=True))
    text = draw(st.one_of(st.sampled_from(names), st.text(alphabet=_NAME_CHARS + "c\x01", max_size=5)))
    encoded = json.dumps(text, ensure_ascii=False)[1:-1].encode()
    cut = draw(st.integers(0, len(encoded)))
    return names, _OPEN + encoded[:cut]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=keys_so_far())
@example(case=(["ab", "a"], _OPEN + b"a"))
@example(case=(["ab", "a"], _OPEN + b"ab"))
@example(case=(['a"b'], _OPEN + b"a\\"))
@example(case=(["é"], _OPEN + b"\xc3"))
@example(case=(["\n", "b"], _OPEN + b"\\"))
@example(case=([""], _OPEN))
@example(case=(["a"], _OPEN + b"\\u001"))  # inside an escape: only hex digits, all into the inside
def test_a_key_s_prefix_agrees_with_every_token(smollm2_vocabulary, case):
    names, written = case
    m = grammar.Matcher(grammar.compile(grammar.from_json_schema(_schema(names)), smollm2_vocabulary))
    if not m.accept_bytes(written):
        return  # a character no key may hold, or a cut no encoding makes
    assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)


@pytest.mark.parametrize("key", [b"", b"a", b"lib", b"libr", b"library"])
def test_a_key_s_prefix_is_read_as_the_string_s_inside(smollm2_vocabulary, key):
    """Along a declared name, the prefix's walk is the string's inside (its loop class), not a
    walk of the names' trie; the mask is still every token that steps."""
    schema = _schema(["library", "destination", "a"])
    compiled = grammar.compile(grammar.from_json_schema(schema), smollm2_vocabulary)
    m = grammar.Matcher(compiled)
    assert m.accept_bytes(_OPEN + key)
    local = compiled.automaton.frame_split(m.state)[0]
    assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)
    assert compiled._loop_class(local, compiled.automaton.byte_row(local)) is None  # no loop of its own
    assert compiled._inside[local].loop is not None  # ... but the inside's


def test_only_the_compiler_marks_a_rule_as_a_key_text():
    """A mark survives the prefix merged grammars add, and no GBNF name can spell it."""
    assert is_key_text("t0-" + key_text("key-3"))
    assert not is_key_text("key-3")
    with pytest.raises(grammar.GrammarError):
        grammar.from_gbnf(f'root ::= {key_text("k")}\n{key_text("k")} ::= "a"\n')

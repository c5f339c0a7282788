"""States that loop on some non-ASCII characters and not on others (a pattern's `\\w` or `\\S`,
under Python's Unicode meaning): the tokens made of the looping ones are kept out of the walk,
as a state that loops on every character keeps them all. These check the loop class against
its definition, and the masks built on it against stepping every token."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from grammar import Vocabulary
from grammar._tokens.tables import ascii_bitset, token_tables
from ir_sampling import tokens_that_step

# ASCII letters and punctuation, letters of other scripts, a CJK character, a Unicode space, a
# sign and an emoji: `\w` holds some, `\S` all but the space.
_TEXT = "ab Z9_\"-é中жşي\u00a0€😀"
_PIECES = st.lists(st.sampled_from(_TEXT), min_size=1, max_size=5).map(lambda cs: "".join(cs).encode())
# Part of a character: a token may begin or end inside one.
_PARTS = st.sampled_from([b"\xc3", b"\xa9", b"\xe4\xb8", b"\xad", b"\xf0\x9f\x98", b"a\xe2\x82", b"\x82\xac b"])


def _vocab(pieces: list[bytes]) -> Vocabulary:
    tokens = [b"", b""] + [bytes([b]) for b in range(256)] + pieces
    return Vocabulary.from_tokens(tokens, eos_ids=[0], special_ids=[1], size=len(tokens))


def _looping_prefix(data: bytes, ascii_loop: set[int], looping: set[int]) -> tuple[int, bool]:
    """The leading bytes of `data` that are whole characters looping, and whether that is all."""
    at = 0
    while at < len(data):
        for size in (1, 2, 3, 4):
            try:
                ch = data[at:at + size].decode("utf-8")
                break
            except UnicodeDecodeError:
                continue
        else:
            return at, False
        cp = ord(ch)
        if (cp < 0x80 and cp not in ascii_loop) or (cp >= 0x80 and cp not in looping):
            return at, False
        at += size
    return at, True


@settings(max_examples=60, deadline=None)
@given(pieces=st.lists(st.one_of(_PIECES, _PARTS), min_size=1, max_size=30, unique=True),
       ascii_loop=st.sets(st.sampled_from(sorted({ord(c) for c in _TEXT if ord(c) < 0x80}))),
       looping=st.sets(st.sampled_from(sorted({ord(c) for c in _TEXT if ord(c) >= 0x80}))))
def test_a_loop_on_some_characters_keeps_out_exactly_the_tokens_made_of_them(pieces, ascii_loop, looping):
    vocab = _vocab(pieces)
    tables = token_tables(vocab)
    chars = tables.characters()
    picked = np.isin(chars.code_points, sorted(looping))
    loop = tables.loop_class(ascii_bitset(np.array(sorted(ascii_loop), np.int64)), picked)
    looping_ids = set(loop.looping_ids.tolist())
    for position, data in enumerate(tables.sorted_bytes):
        prefix, whole = _looping_prefix(data, ascii_loop, looping & set(chars.code_points.tolist()))
        assert (int(tables.order[position]) in looping_ids) == whole, data
    for position, skip in zip(loop.other_positions.tolist(), loop.other_skip.tolist()):
        data = tables.sorted_bytes[position]
        assert skip == _looping_prefix(data, ascii_loop, looping)[0], data


SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "pattern": r"^[\w.-]+/[\w.-]+$"}},
     "required": ["name"], "additionalProperties": False},
    {"type": "object", "properties": {"v": {"type": "string", "pattern": r"^\S+$", "maxLength": 40}},
     "required": ["v"]},
    {"type": "object", "patternProperties": {r"^\w+$": {"type": "integer"}}, "additionalProperties": False},
    {"type": "array", "items": {"type": "string", "pattern": r"^\w[\w ]*$"}},
    {"type": "array", "items": {"type": "string", "pattern": r"^\w+(?:€\w+)*$"}},  # (€ leads on, not back)
    {"type": "array", "items": {"type": "string", "pattern": r"^[a-z_]\w*$"}},  # (é loops, but not first)
    # Unanchored, under a length: each character a count, whole non-ASCII ones too, once a
    # letter has matched (before, they lead elsewhere than the pattern's class).
    {"type": "array", "items": {"type": "string", "pattern": "[a-z]", "maxLength": 60}},
    {"type": "array", "items": {"type": "string", "pattern": "b", "minLength": 2, "maxLength": 12}},
]


def _opening(schema: dict) -> bytes:
    """The text up to the first character of the schema's string (or key)."""
    if "patternProperties" in schema:
        return b'{"'
    if schema["type"] == "array":
        return b'["'
    return b'{"' + next(iter(schema["properties"])).encode() + b'":"'


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schema=st.sampled_from(SCHEMAS), text=st.text(alphabet="ab_.-/ é中ж€\u00a0😀", max_size=6), data=st.data())
def test_masks_of_states_that_loop_on_some_characters_agree_with_every_token(smollm2_vocabulary, schema, text,
                                                                            data):
    vocab = smollm2_vocabulary
    m = grammar.Matcher(grammar.compile(grammar.from_json_schema(schema), vocab))
    # Into the string (or the key), then some of its characters, then states compared whole.
    assert m.accept_bytes(_opening(schema))
    for ch in text:
        fork = m.fork()
        if fork.accept_bytes(ch.encode()):
            m = fork
    _walk_checking_masks(m, vocab, data, 3)


@settings(max_examples=60, deadline=None)
@given(pieces=st.lists(st.one_of(_PIECES, _PARTS), min_size=1, max_size=40, unique=True),
       schema=st.sampled_from(SCHEMAS), data=st.data())
def test_every_mask_agrees_with_every_token_of_a_vocabulary_of_many_scripts(pieces, schema, data):
    """A small vocabulary of tokens that mix scripts, signs and parts of characters: from the
    string's first character on, the mask is what stepping every token decides."""
    extra = [t.encode() for t in ("é", "éa", "€€", "é€", "€a", "a€", '"]', '":1}')]
    vocab = _vocab([p for p in pieces if p not in extra] + extra)
    m = grammar.Matcher(grammar.CompiledGrammar(grammar.from_json_schema(schema), vocab))
    assert m.accept_bytes(_opening(schema))
    _walk_checking_masks(m, vocab, data, 20)


def _walk_checking_masks(m: grammar.Matcher, vocab: Vocabulary, data, most: int) -> None:
    """At this state and each of up to `most` random steps on: the mask is what stepping every
    token decides."""
    for _ in range(data.draw(st.integers(0, most)) + 1):
        allowed = m.next_token_mask().allowed_ids()
        assert set(allowed.tolist()) == tokens_that_step(m, vocab.size)
        token = int(allowed[data.draw(st.integers(0, allowed.size - 1))])
        if token in vocab.eos_ids or not m.accept_token(token) or m.is_terminated():
            return


def test_a_word_pattern_s_loop_keeps_its_letters_out_of_the_walk(smollm2_vocabulary):
    """`\\w` holds `é` and not `€`: the loop class of a `\\w` state keeps the tokens of such
    letters out of its walk and leaves the others in it."""
    vocab = smollm2_vocabulary
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": r"^\w+$"}},
              "required": ["name"], "additionalProperties": False}
    compiled = grammar.compile(grammar.from_json_schema(schema), vocab)
    m = grammar.Matcher(compiled)
    assert m.accept_bytes('{"name":"ab'.encode())
    allowed = set(m.next_token_mask().allowed_ids().tolist())
    assert compiled._char_leads, "no state looped on some characters"
    letters = [i for i, t in enumerate(vocab.tokens) if t and t.decode("utf-8", "ignore") == t.decode("utf-8", "replace")
               and t.decode("utf-8").isalpha() and not t.isascii()]
    assert letters and set(letters) <= allowed
    assert not any(i in allowed for i, t in enumerate(vocab.tokens) if t and "€" in t.decode("utf-8", "ignore"))


@pytest.mark.parametrize("schema, texts", [
    ({"type": "array", "items": {"type": "string", "pattern": "[a-z]", "maxLength": 60}}, ('["', "é", "a", "中", "€x")),
    ({"type": "array", "items": {"type": "string", "pattern": "[a-z]", "maxLength": 300}}, ('["', "é", "a", "中", "€x")),
    ({"type": "array", "items": {"type": "string", "pattern": "^[a-zé]*$", "maxLength": 300}}, ('["', "é", "a", "éa")),
    ({"type": "array", "items": {"type": "string", "pattern": "^[^€]*$", "maxLength": 300}}, ('["', "é", "a", "éa")),
    ({"type": "array", "items": {"type": "string", "pattern": "^[^€]*$", "maxLength": 40}}, ('["', "é", "a", "éa")),
])
def test_a_bounded_pattern_reads_whole_characters_from_its_profile(monkeypatch, schema, texts):
    """Where every character of a string under a length is one count (an unanchored pattern
    once it has matched, say), whole non-ASCII ones too, their tokens are answered by the
    profile of the class joined by UTF-8's characters rather than walked; where some lead
    elsewhere (`é` but not `ü`), they are not. Either way the masks are what stepping every
    token decides, tokens that begin or end inside a character and malformed ones among them."""
    from grammar._masks import chains

    joined = []
    with_characters = chains.ChainsMixin._with_characters

    def spy(self, state, links, into_loops):
        found = with_characters(self, state, links, into_loops)
        joined.append(found is not None)
        return found

    monkeypatch.setattr(chains.ChainsMixin, "_with_characters", spy)
    pieces = [t.encode() for t in ("é", "éa", "ü", "üa", "€€", "é€", "a€", "中ж", "😀b", "ab", "b", "abc", " ", '"]', '","')]
    malformed = [b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"a\xf5\x80"]
    parts = [b"\xc3", b"\xa9", b"\xe4\xb8", b"\xad", b"\xf0\x9f\x98", b"a\xe2\x82"]
    vocab = _vocab(pieces + malformed + parts)
    m = grammar.Matcher(grammar.CompiledGrammar(grammar.from_json_schema(schema), vocab))
    for text in texts:
        assert m.accept_bytes(text.encode())
        assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, vocab.size), text
    assert joined, "no chain was asked"
    assert any(joined) == (schema["items"]["pattern"] == "[a-z]"), joined  # (€ leads nowhere, ü neither)

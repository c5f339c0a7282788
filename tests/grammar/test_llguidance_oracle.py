"""Our token masks against llguidance's, an independent engine, on SmolLM2's real vocabulary.

Along random walks that both engines accept, every token llguidance allows we allow too, and
every token only we allow is one of the known differences of language or policy, each of them
a choice on our side that the `jsonschema` validator agrees with:

- EOS ids: we allow every EOS id of the vocabulary where the document is complete;
- U+007F (DEL) inside strings: JSON only requires control characters below U+0020 escaped;
- a proper prefix of text the grammar forces (`{` where `{"name":"` must follow): llguidance
  only offers the longest tokens of forced text; any split of it is the same document.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from grammar import Matcher

pytest.importorskip("llguidance")

from bench._engines import LLGuidance  # noqa: E402  (after the skip: it needs llguidance)

SCHEMAS = {
    "person": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                                "email": {"type": "string"}},
               "required": ["name", "age"], "additionalProperties": False},
    "weather": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                 "unit": {"enum": ["celsius", "fahrenheit"]},
                                                 "days": {"type": "integer", "minimum": 1}},
                "required": ["city", "unit"], "additionalProperties": False},
    "numbers": {"type": "object", "properties": {"x": {"type": "number"},
                                                 "y": {"type": "integer", "minimum": -5, "maximum": 300},
                                                 "z": {"type": ["number", "boolean", "null"]}},
                "required": ["x", "y", "z"], "additionalProperties": False},
    "order": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string", "minLength": 2, "maxLength": 8}, "qty": {"type": "integer"}},
            "required": ["sku", "qty"], "additionalProperties": False}},
        "note": {"type": ["string", "null"]}}, "required": ["items"], "additionalProperties": False},
    "tags": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                                              "ok": {"type": "boolean"}},
             "required": ["tags", "ok"], "additionalProperties": False},
    # Over 64 characters: the string's counts are calls, those far from the bound share a mask.
    "bounded": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 150},
                                                 "n": {"type": "integer"}},
                "required": ["text", "n"], "additionalProperties": False},
}


@pytest.fixture(scope="module")
def engines(smollm2_vocabulary):
    llg = LLGuidance()
    llg.prepare(smollm2_vocabulary)
    compiled = {name: (grammar.compile(grammar.from_json_schema(s), smollm2_vocabulary), llg.compile(s))
                for name, s in SCHEMAS.items()}
    return smollm2_vocabulary, llg, compiled


def _forced_text(matcher: Matcher) -> bytes:
    """The bytes the grammar forces from the matcher's state (one allowed byte at a time)."""
    automaton = matcher.compiled.automaton
    s, out = matcher.state, b""
    while not automaton.accepting[s]:
        row = automaton.byte_row(s)
        (live,) = np.nonzero(row >= 0)
        if live.size != 1:
            break
        out += bytes([int(live[0])])
        s = int(row[live[0]])
    return out


def _allowed(llg: LLGuidance, matcher, size: int) -> set[int]:
    bitmask = np.zeros((1, -(-size // 32)), np.int32)
    llg.fill(matcher, bitmask)
    return set(np.flatnonzero(np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")[:size]).tolist())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(SCHEMAS)), seed=st.integers(0, 2**32 - 1))
def test_masks_equal_llguidance_where_the_languages_coincide(engines, name, seed):
    vocab, llg, compiled = engines
    ours_compiled, theirs_compiled = compiled[name]
    ours, theirs = Matcher(ours_compiled), llg.matcher(theirs_compiled)
    rng = np.random.default_rng(seed)
    eos = set(vocab.eos_ids)
    taken: list[int] = []
    for _ in range(60):
        mine = set(ours.next_token_mask().allowed_ids().tolist())
        other = _allowed(llg, theirs, vocab.size)
        assert other - eos <= mine, f"llguidance allows tokens we refuse after {vocab.decode(taken)!r}"
        forced = _forced_text(ours)
        for token in mine - other - eos:
            piece = vocab.token_bytes(token)
            assert b"\x7f" in piece or (len(piece) < len(forced) and forced.startswith(piece)), (
                f"only we allow {piece!r} after {vocab.decode(taken)!r}"
            )
        both = sorted((mine & other) - eos)
        if not both:
            assert ours.is_complete()
            break
        token = both[int(rng.integers(len(both)))]
        assert ours.accept_token(token)
        llg.accept(theirs, token)
        taken.append(token)

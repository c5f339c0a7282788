"""Bounded strings and patterns: each count's mask comes from one profile of the vocabulary
(see `CompiledGrammar._counted_mask`), not from a walk per count, so these check that it is
still exact: at every step of random walks the mask is what stepping every token decides, walks
never dead-end, and every finished document validates."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import grammar
from grammar import Vocabulary
from ir_sampling import tokens_that_step

EOS, SPECIAL = 0, 1


def _vocab() -> Vocabulary:
    """Every byte alone, and tokens that span characters, escapes, the string's end and what
    follows it, partial UTF-8, and some longer than the token matrix."""
    pieces = [b"", b""] + [bytes([b]) for b in range(256)]
    pieces += [b"ab", b"abc", b"hello", b" world", b"2024", b"-03", b"-1", b"ABC", b"ABC-", b"12", b"1234"]
    pieces += [b'"', b'",', b'"}', b'"]', b'","', b'",["', b'":', b'":"', b'":["', b'{"', b"[]", b"]}", b"],"]
    pieces += [b"\\n", b'\\"', b"\\\\", b"\\u00", b"\\u001f", b"\\", b"\xc3\xa9", b"\xc3\xa9t\xc3\xa9", b"\xe2\x82"]
    pieces += [b"\xac", b"\xe2\x82\xac", b"x@example.com", b"@", b".org", b"a b", b"  ", b"ab\"", b"ab\",\""]
    pieces += [b"s", b"n", b"tags", b'"s":"', b'"n":', b'"tags":[']
    pieces += [b" " * 60, b"\xc3\xa9" * 30, b"a" * 50 + b'",', b"a" * 55, b"b" * 70 + b'"}']
    return Vocabulary.from_tokens(pieces, eos_ids=[EOS], special_ids=[SPECIAL], size=len(pieces) + 3)


VOCAB = _vocab()
_CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER
PATTERNS = ["^[a-z ]+$", "^[A-Z]{3}-[0-9]{4}$", r"^\d{4}-\d{2}-\d{2}$", "^[a-z0-9-]*$", "b", "^a*b?$", "[a-z0-9_.-]+"]


@st.composite
def string_schemas(draw) -> dict:
    schema: dict = {"type": "string"}
    # Mostly past the copies a repeat spells out (8), where counts are profiled.
    least = draw(st.one_of(st.none(), st.integers(0, 4), st.integers(8, 20)))
    most = draw(st.one_of(st.none(), st.integers(0, 7), st.integers(8, 80)))
    if least is not None:
        schema["minLength"] = least
    if most is not None:
        schema["maxLength"] = max(most, least or 0)
    shape = draw(st.sampled_from(["plain", "plain", "pattern", "format"]))
    if shape == "pattern":
        schema["pattern"] = draw(st.sampled_from(PATTERNS))
    elif shape == "format":
        schema["format"] = draw(st.sampled_from(["date", "email"]))
    return schema


@st.composite
def record_schemas(draw) -> dict:
    """A bounded string followed by other members, and a list of bounded tags."""
    text = draw(string_schemas())
    tag = draw(string_schemas())
    tags = {"type": "array", "items": tag, "maxItems": draw(st.integers(0, 3))}
    members = {"s": text, "n": {"type": "integer"}, "tags": tags}
    required = draw(st.lists(st.sampled_from(sorted(members)), unique=True))
    return {"type": "object", "properties": members, "required": required, "additionalProperties": False}


def _compiled(schema: dict, vocab: Vocabulary) -> grammar.CompiledGrammar | None:
    """None where the schema matches nothing (a maxLength below a pattern's shortest)."""
    try:
        return grammar.CompiledGrammar(grammar.from_json_schema(schema), vocab)
    except grammar.CompileError:
        return None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(schema=record_schemas(), data=st.data())
def test_masks_equal_stepping_every_token_and_walks_finish_valid(schema, data):
    compiled = _compiled(schema, VOCAB)
    assume(compiled is not None)
    _walk_checking_every_mask(compiled, schema, data)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=st.sampled_from(["^[a-z ]+$", "^[a-z0-9-]*$", "^ab[a-z]*$"]), most=st.integers(80, 300),
       data=st.data())
def test_a_long_pattern_beside_any_other_member_is_chained_exactly(pattern, most, data):
    """An object open to other members (any JSON value: a recursive rule) around a pattern
    with a bound longer than every token: its counts are chains read from the class's
    profile, not a walk of the vocabulary each (far from the bound, by room, from leavers
    walked once), and every mask is what stepping decides."""
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern, "maxLength": most}},
              "required": ["s"]}
    compiled = _compiled(schema, VOCAB)
    inside = grammar.Matcher(compiled)
    for byte in b'{"s":"ab':
        assert inside.accept_token(VOCAB.tokens.index(bytes([byte])))
    inside.next_token_mask()
    assert compiled.profile.paths["chained"] > 0
    assert compiled._chain_leavers_by, "the chain's leavers were walked at every count"
    _walk_checking_every_mask(compiled, schema, data)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=st.sampled_from(["^[a-z0-9_.]+$", "^[a-z ]+$", "^ab[a-z]*$"]), most=st.integers(9, 60),
       data=st.data())
def test_a_bounded_pattern_inside_a_call_is_chained_exactly(pattern, most, data):
    """A bounded pattern's string called as a rule (an array's items) in a grammar with
    recursion (a member of any JSON value): its counts are chains, as outside every call,
    not a walk of the vocabulary per count shared by the rule's callers; every mask is what
    stepping decides."""
    code = {"type": "string", "pattern": pattern, "maxLength": most}
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": code}, "v": {}},
              "required": ["a", "v"], "additionalProperties": False}
    compiled = _compiled(schema, VOCAB)
    inside = grammar.Matcher(compiled)
    for byte in b'{"a":["ab':
        assert inside.accept_token(VOCAB.tokens.index(bytes([byte])))
    assert compiled.automaton.frame_split(inside.state) is not None, "the string is no longer a call"
    inside.next_token_mask()
    assert compiled.profile.paths["chained"] == 1 and not compiled.profile.paths["framed"]
    _walk_checking_every_mask(compiled, schema, data)


def _walk_checking_every_mask(compiled: grammar.CompiledGrammar, schema: dict, data) -> None:
    """A random walk, then the shortest way to the end: at each step the mask is what stepping
    every token decides; the walk ends, and its document validates."""
    m = grammar.Matcher(compiled)
    taken: list[int] = []
    wander = data.draw(st.integers(0, 120))
    for step in range(wander + 400):
        allowed = m.next_token_mask().allowed_ids()
        assert allowed.size, "dead end: " + m.describe()
        assert set(allowed.tolist()) == tokens_that_step(m, VOCAB.size), (schema, VOCAB.decode(taken))
        if step < wander:
            token = int(allowed[data.draw(st.integers(0, allowed.size - 1))])
        else:
            token = m.shortest_completion_token()
        assert m.accept_token(token)
        taken.append(token)
        if m.is_terminated():
            break
    assert taken[-1] == EOS, "the walk did not finish"
    document = json.loads(VOCAB.decode(taken[:-1]).decode("utf-8"))
    jsonschema.validate(document, schema, format_checker=_CHECKER)


@pytest.mark.parametrize("least,most", [(0, 9), (0, 40), (10, 120), (12, None), (70, 200)])
def test_every_length_between_the_bounds_is_written_and_none_outside(least, most):
    """Text of each length from the profile's side: a run of one-character tokens may stop
    exactly where the bounds allow, and the masks say so at every count."""
    schema = {"type": "string", "minLength": least}
    if most is not None:
        schema["maxLength"] = most
    compiled = _compiled(schema, VOCAB)
    quote = VOCAB.tokens.index(b'"')
    a = VOCAB.tokens.index(b"a")
    m = grammar.Matcher(compiled)
    assert m.accept_token(quote)
    top = (most if most is not None else least + 30) + 1
    for count in range(top + 1):
        allowed = set(m.next_token_mask().allowed_ids().tolist())
        assert (quote in allowed) == (least <= count and (most is None or count <= most)), count
        assert (a in allowed) == (most is None or count < most), count
        assert allowed == tokens_that_step(m, VOCAB.size), count
        if a not in allowed:
            break
        assert m.accept_token(a)
    assert compiled._by_room, "the counted masks were not used"


def test_a_real_vocabulary_masks_bounded_strings_exactly(smollm2_vocabulary):
    """The issue's schema and a pattern with a length on SmolLM2: at states inside each bounded
    string, near and far from its bounds, the mask is what stepping all 49,152 tokens decides."""
    schema = {
        "type": "object",
        "properties": {
            "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
            "title": {"type": "string", "maxLength": 40},
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
            "summary": {"type": "string", "minLength": 10, "maxLength": 120},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
            "slug": {"type": "string", "pattern": "^[a-z0-9-]+$", "maxLength": 30},
        },
        "required": ["date", "title", "code", "summary", "tags", "slug"],
        "additionalProperties": False,
    }
    compiled = _compiled(schema, smollm2_vocabulary)
    prefixes = [
        '{"date":"2024-03-15","title":"',
        '{"date":"2024-03-15","title":"' + "x" * 25,
        '{"date":"2024-03-15","title":"' + "x" * 39,
        '{"date":"2024-03-15","title":"' + "x" * 40,
        '{"date":"2024-03-15","title":"t","code":"ABC-1234","summary":"' + "é" * 5,
        '{"date":"2024-03-15","title":"t","code":"ABC-1234","summary":"' + "y" * 95,
        '{"date":"2024-03-15","title":"t","code":"ABC-1234","summary":"' + "y" * 117,
        '{"date":"2024-03-15","title":"t","code":"ABC-1234","summary":"' + "y" * 12 + '","tags":["ab',
        '{"date":"2024-03-15","title":"t","code":"',
        '{"date":"2024-03-15","title":"t","code":"ABC-1234","summary":"' + "y" * 12 + '","tags":[],"slug":"',
        '{"date":"2024-03-15","title":"t","code":"ABC-1234","summary":"' + "y" * 12 + '","tags":[],"slug":"a-b',
        '{"date":"2024-03-15","title":"t","code":"ABC-1234","summary":"' + "y" * 12 + '","tags":[],"slug":"' + "z" * 28,
    ]
    for prefix in prefixes:
        m = grammar.Matcher(compiled)
        assert m.accept_bytes(prefix.encode())
        allowed = m.next_token_mask().allowed_ids()
        assert set(allowed.tolist()) == tokens_that_step(m, smollm2_vocabulary.size), prefix
        bitmask = grammar.allocate_token_bitmask(1, smollm2_vocabulary.size)
        m.fill_next_token_bitmask(bitmask)
        unpacked = grammar._tokens.bitmask.unpack_bitmask(bitmask[0], smollm2_vocabulary.size)
        assert np.array_equal(np.flatnonzero(unpacked), allowed)
    assert compiled._by_room, "the counted masks were not used"


def test_profiles_made_on_many_threads_at_once_are_the_profiles_made_alone(smollm2_vocabulary):
    """Grammars compiled on several threads share one vocabulary's tables: profiles asked for
    at once, more than the tables keep, come back whole and equal to those made one by one."""
    from concurrent.futures import ThreadPoolExecutor

    from grammar._tokens.tables import _PROFILES, TokenTables

    tables = TokenTables(smollm2_vocabulary)  # its own: no other test's profiles in its cache
    classes = [bytes(range(97, 97 + k)) for k in range(1, _PROFILES + 9)]

    def table(letters: bytes) -> np.ndarray:
        found = np.full((1, 256), -1, dtype=np.int32)
        found[0, list(letters)] = -2
        return found

    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda letters: tables.character_profile(table(letters)), classes * 2))
    for letters, found in zip(classes * 2, together):
        alone = tables._character_profile(table(letters))
        assert np.array_equal(found.needs, alone.needs) and found.reach == alone.reach
    assert len(tables._profiles) == _PROFILES


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(letters=st.sets(st.integers(0, 255), min_size=1, max_size=255))
def test_a_class_of_one_byte_characters_is_profiled_as_the_general_walk_profiles_it(smollm2_vocabulary, letters):
    """A chain's class (each byte a character) is profiled by a search for each token's first
    byte outside it; a second, unreachable state sends the same class down the general walk."""
    tables = grammar.compile(grammar.from_json_schema({"type": "string"}), smollm2_vocabulary).tables
    one = np.full((1, 256), -1, dtype=np.int32)
    one[0, sorted(letters)] = -2
    two = np.vstack([one, np.full((1, 256), -1, dtype=np.int32)])
    fast, general = tables._character_profile(one), tables._character_profile(two)
    for name in fast.__dataclass_fields__:
        a, b = getattr(fast, name), getattr(general, name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, name


def _profile_by_reading(tables, table: np.ndarray):
    """A character profile's definition, token by token: read each token's bytes from a
    character's start until it leaves the repeat (a byte no character begins with, at a
    character's start), dies, or ends."""
    first = table[0] != -1
    needs, leavers, long_leavers = {}, {}, []
    for position, tid in enumerate(tables.order.tolist()):
        _read(tables.token_bytes[tid], table, first, tid, needs, leavers, None, position)
    for tid in tables.long_ids.tolist():
        _read(tables.token_bytes[tid], table, first, tid, needs, None, long_leavers, None)
    return needs, leavers, long_leavers


def _read(data, table, first, tid, needs, leavers, long_leavers, position):
    state, whole = 0, 0
    for q, byte in enumerate(data):
        if state == 0 and not first[byte]:
            if leavers is not None:
                leavers[position] = (q, byte, whole)
            else:
                long_leavers.append((tid, q, whole))
            return
        state = int(table[state, byte])
        if state == -1:
            return
        if state == -2:
            whole, state = whole + 1, 0
    needs[tid] = whole + (state != 0)


@st.composite
def _character_tables(draw):
    """A language of characters: bytes that are one character alone (sets broad and narrow,
    ASCII and not), and optionally lead bytes each followed by one continuation byte."""
    singles = draw(st.one_of(
        st.sets(st.integers(0, 255), max_size=255),
        st.builds(lambda gone: set(range(32, 128)) - gone, st.sets(st.integers(32, 127), max_size=8)),
    ))
    table = np.full((2, 256), -1, dtype=np.int32)
    table[0, sorted(singles)] = -2
    leads = draw(st.sets(st.integers(0, 255).filter(lambda b: b not in singles), max_size=40))
    table[0, sorted(leads)] = 1
    table[1, sorted(draw(st.sets(st.integers(0, 255), max_size=80)))] = -2
    return table if leads else table[:1]


def _string_characters(utf8: bool = True) -> np.ndarray:
    """A JSON string's characters, escapes left out: printable ASCII but the quote and the
    backslash, and (with `utf8`) two-byte UTF-8."""
    table = np.full((2 if utf8 else 1, 256), -1, dtype=np.int32)
    table[0, 32:128] = -2
    table[0, [34, 92]] = -1
    if utf8:
        table[0, 0xC2:0xE0] = 1
        table[1, 0x80:0xC0] = -2
    return table


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=_character_tables(), big=st.booleans())
@example(table=_string_characters(), big=False)
@example(table=_string_characters(utf8=False), big=False)
@example(table=_string_characters(), big=True)
def test_a_character_profile_is_what_reading_each_token_byte_by_byte_gives(smollm2_vocabulary, table, big):
    """Every field of a profile (the tokens set aside unwalked because their byte set lies in
    a broad class, and the long tokens whose leading run of one-byte characters is read at
    once, included) against each token read byte by byte."""
    vocab = smollm2_vocabulary if big else VOCAB
    tables = grammar.compile(grammar.from_json_schema({"type": "string"}), vocab).tables
    profile = tables._character_profile(table)
    needs, leavers, long_leavers = _profile_by_reading(tables, table)
    expected = np.full(tables.size, np.iinfo(np.int16).max, dtype=np.int64)
    for tid, need in needs.items():
        expected[tid] = need
    assert np.array_equal(profile.needs, expected)
    assert profile.widest == max(needs.values(), default=0)
    positions = sorted(leavers)
    assert profile.leave_positions.tolist() == positions
    assert profile.leave_offsets.tolist() == [leavers[p][0] for p in positions]
    assert profile.leave_bytes.tolist() == [leavers[p][1] for p in positions]
    assert profile.leave_counts.tolist() == [leavers[p][2] for p in positions]
    assert list(profile.long_leavers) == long_leavers

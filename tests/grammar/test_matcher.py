"""The matcher and masker: properties over random walks, on a synthetic and a real vocabulary."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import grammar
from grammar._masks.completion import completion_of
from grammar._grammar import Grammar
from grammar._ir import alt, char_set, chars, lit, negate, opt, ref, repeat, seq, star
from grammar import Vocabulary

EOS = 0
SPECIAL = 1

_STRING = seq(
    lit('"'),
    star(alt(negate([(0, 31), (34, 34), (92, 92)]), seq(lit("\\"), char_set('"\\/bfnrt')))),
    lit('"'),
)
_INT = seq(opt(lit("-")), alt(lit("0"), seq(chars([(49, 57)]), star(chars([(48, 57)])))))


def _json_value_grammar() -> Grammar:
    """Recursive JSON (strings, integers, literals, arrays, objects): exercises the stack."""
    members = seq(_STRING, lit(":"), ref("value"))
    return Grammar(
        {
            "root": ref("value"),
            "value": alt(
                _STRING,
                _INT,
                lit("true"),
                lit("false"),
                lit("null"),
                seq(lit("["), opt(seq(ref("value"), star(seq(lit(","), ref("value"))))), lit("]")),
                seq(lit("{"), opt(seq(members, star(seq(lit(","), members)))), lit("}")),
            ),
        }
    )


def _record_grammar() -> Grammar:
    """A regular object grammar (no recursion): a DFA."""
    tags = seq(lit("["), opt(seq(_STRING, star(seq(lit(","), _STRING)))), lit("]"))
    return Grammar(
        {"root": seq(lit('{"name":'), _STRING, lit(',"age":'), _INT, lit(',"tags":'), tags, lit("}"))}
    )


def _shared_rules_grammar() -> Grammar:
    """A regular record whose strings and integers are rules used in several places: they are
    called, so the states inside them share token sets, and tokens cross their ends."""
    text, number = ref("string"), ref("int")
    items = seq(lit(',"ids":['), opt(seq(number, star(seq(lit(","), number)))), lit("]"))
    tags = seq(lit(',"tags":['), opt(seq(text, star(seq(lit(","), text)))), lit("]"))
    return Grammar(
        {
            "root": seq(lit('{"name":'), text, lit(',"age":'), number, items, tags, lit("}")),
            "string": _STRING,
            "int": _INT,
        }
    )


def _bounded_grammar() -> Grammar:
    """Long counted repeats (a name of 2 to 2,000 characters, up to 2,000 ids): every count is
    a state of its own, more than a search for the shortest completion may visit."""
    char = alt(negate([(0, 31), (34, 34), (92, 92)]), seq(lit("\\"), char_set('"\\/bfnrt')))
    ids = opt(seq(_INT, repeat(seq(lit(","), _INT), 0, 1999)))
    return Grammar({"root": seq(lit('{"name":"'), repeat(char, 2, 2000), lit('","ids":['), ids, lit("]}"))})


def _synthetic_vocab() -> Vocabulary:
    pieces = [b"", b""] + [bytes([b]) for b in range(256)]
    pieces += [b'{"', b'":', b'",', b'"}', b"true", b"false", b"null", b"[]", b"{}", b"[{", b"}]"]
    pieces += [b'name', b'"name":', b'age', b"12", b"-0", b"\\n", b'\\"', b"\xc3\xa9t\xc3\xa9", b"\xe2\x82"]
    pieces += [b"\xac", b' "', b"ab" * 20]
    # Longer than the token matrix: walked apart, or counted in a string state's loop class.
    pieces += [b" " * 60, b"\xc3\xa9" * 30, b"a" * 50 + b'",', b"a" * 50 + b"\n", b"-" * 55]
    pieces += [b'{"name":"' + b"x" * 45]
    return Vocabulary.from_tokens(pieces, eos_ids=[EOS], special_ids=[SPECIAL], size=len(pieces) + 3)


VOCAB = _synthetic_vocab()
GRAMMARS = {
    "json": _json_value_grammar(),
    "record": _record_grammar(),
    "shared": _shared_rules_grammar(),
    "bounded": _bounded_grammar(),
}


def _random_walk(matcher: grammar.Matcher, draw_index, max_steps: int, steering: int = 200) -> list[int]:
    """Choose allowed tokens until the matcher terminates, steering to completion at the end
    (in at most `steering` tokens)."""
    taken = []
    for step in range(max_steps + steering):
        mask = matcher.next_token_mask()
        allowed = mask.allowed_ids()
        assert allowed.size > 0, "dead end: no token allowed"
        if step >= max_steps:
            token = matcher.shortest_completion_token()
        else:
            token = int(allowed[draw_index(allowed.size)])
        assert matcher.accept_token(token)
        taken.append(token)
        if matcher.is_terminated():
            return taken
    raise AssertionError("the walk did not terminate")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(sorted(GRAMMARS)))
def test_random_walks_never_dead_end_and_finish_valid(data, name):
    g = GRAMMARS[name]
    m = grammar.Matcher(grammar.compile(g, VOCAB))
    taken = _random_walk(m, lambda n: data.draw(st.integers(0, n - 1)), max_steps=30)
    assert taken[-1] == EOS
    text = VOCAB.decode(taken[:-1]).decode("utf-8")
    json.loads(text)  # every finished output parses
    if name == "record":
        assert set(json.loads(text)) == {"name", "age", "tags"}
    if name == "shared":
        assert set(json.loads(text)) == {"name", "age", "ids", "tags"}
    if name == "bounded":
        assert 2 <= len(json.loads(text)["name"]) <= 2000


@settings(max_examples=40, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(GRAMMARS)))
def test_mask_agrees_with_accept_token(data, name):
    """The vectorised walk (or, inside a literal, the bisection) and the per-byte walk decide
    every token alike, and the packed bitmask says the same."""
    m = grammar.Matcher(grammar.compile(GRAMMARS[name], VOCAB))
    for _ in range(data.draw(st.integers(0, 12))):
        allowed = m.next_token_mask().allowed_ids()
        m.accept_token(int(allowed[data.draw(st.integers(0, allowed.size - 1))]))
        if m.is_terminated():
            return
    allowed = set(m.next_token_mask().allowed_ids().tolist())
    for token in range(VOCAB.size):
        probe = m.fork()
        assert probe.accept_token(token) == (token in allowed), token
    bitmask = grammar.allocate_token_bitmask(1, VOCAB.size)
    m.fill_next_token_bitmask(bitmask)
    assert set(np.flatnonzero(grammar._tokens.bitmask.unpack_bitmask(bitmask[0], VOCAB.size)).tolist()) == allowed


@pytest.mark.parametrize("depth", [1, 40, 60, 62, 63, 64])
def test_masks_near_the_stack_depth_bound_agree_with_accept_token(depth):
    """States inside a call share token sets found at relative depths: near the bound, where
    a token could reach it, the mask must still be what walking every token from the state
    itself decides (`token_ends`, which drops tokens that strand the document at the bound)."""

    def follow(m: grammar.Matcher, text: bytes) -> bool:
        """Take `text` a byte at a time (id = byte + 2) while the masks allow it."""
        for byte in text:
            if byte + 2 not in set(m.next_token_mask().allowed_ids().tolist()):
                return False
            assert m.accept_token(byte + 2)
        return True

    m = grammar.Matcher(grammar.compile(GRAMMARS["json"], VOCAB))
    follow(m, b"[" * depth + b'{"a":[1,"x')
    for tail in (b"", b'"', b'"]', b'"],"b":'):
        probe = m.fork()
        if not follow(probe, tail):
            continue
        walked = set(probe.compiled.token_ends(probe.state)[0].tolist())
        if probe.is_complete():
            walked.add(EOS)
        assert set(probe.next_token_mask().allowed_ids().tolist()) == walked, tail


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_fork_and_rollback_match_replay(data):
    cg = grammar.compile(GRAMMARS["json"], VOCAB)
    m = grammar.Matcher(cg)
    taken = []
    for _ in range(data.draw(st.integers(1, 15))):
        allowed = m.next_token_mask().allowed_ids()
        token = int(allowed[data.draw(st.integers(0, allowed.size - 1))])
        m.accept_token(token)
        taken.append(token)
        if m.is_terminated():
            break
    back = data.draw(st.integers(0, len(taken)))
    twin = m.fork()
    twin.rollback(back)
    replay = grammar.Matcher(cg)
    for token in taken[: len(taken) - back]:
        assert replay.accept_token(token)
    np.testing.assert_array_equal(twin.next_token_mask().allowed_ids(), replay.next_token_mask().allowed_ids())
    assert twin.is_complete() == replay.is_complete()
    # The original is untouched by what happened to its fork.
    assert len(m._history) == len(taken) + 1


def test_eos_only_where_complete_and_special_never():
    cg = grammar.compile(GRAMMARS["json"], VOCAB)
    m = grammar.Matcher(cg)
    for piece in [b"[", b"12", b",", b"true", b"]"]:
        allowed = m.next_token_mask().allowed_ids()
        assert SPECIAL not in allowed
        assert (EOS in allowed) == m.is_complete()
        assert m.accept_bytes(piece)
    assert m.is_complete()
    assert EOS in m.next_token_mask().allowed_ids()
    assert not m.accept_token(SPECIAL)
    assert m.accept_token(EOS) and m.is_terminated()
    assert not m.accept_token(EOS)


def test_bitmask_matches_sparse_mask():
    cg = grammar.compile(GRAMMARS["record"], VOCAB)
    m = grammar.Matcher(cg)
    bitmask = grammar.allocate_token_bitmask(2, VOCAB.size)
    for piece in [b'{"name":', b'"x', b"y"]:
        m.fill_next_token_bitmask(bitmask, 1)
        dense = np.flatnonzero(grammar._tokens.bitmask.unpack_bitmask(bitmask[1], VOCAB.size))
        np.testing.assert_array_equal(dense, m.next_token_mask().allowed_ids())
        assert (bitmask[0] == -1).all()
        m.accept_bytes(piece)


def test_bitmask_of_a_few_ids_spread_over_most_words():
    """A handful of allowed ids touching most words of a small vocabulary's row: the mask keeps
    the whole row, and writes it."""
    pieces = [b""] + [b"~%d~" % i for i in range(1, 400)]
    for k, letter in enumerate(b"abcdefghi"):
        pieces[40 * (k + 1)] = bytes([letter])
    vocab = Vocabulary.from_tokens(pieces, eos_ids=[0])
    m = grammar.Matcher(grammar.compile(Grammar({"root": chars([(97, 105)])}), vocab))
    bitmask = grammar.allocate_token_bitmask(1, vocab.size)
    m.fill_next_token_bitmask(bitmask)
    dense = np.flatnonzero(grammar._tokens.bitmask.unpack_bitmask(bitmask[0], vocab.size))
    assert dense.tolist() == [40 * (k + 1) for k in range(9)] == m.next_token_mask().allowed_ids().tolist()


def test_apply_and_argmax_respect_the_mask():
    rng = np.random.default_rng(0)
    m = grammar.Matcher(grammar.compile(GRAMMARS["json"], VOCAB))
    m.accept_bytes(b'["a')  # inside a string: most tokens allowed, the sparse side is inverted
    for _ in range(2):
        mask = m.next_token_mask()
        logits = rng.normal(size=VOCAB.size).astype(np.float32)
        best = mask.argmax(logits.copy())
        dense = logits.copy()
        bitmask = grammar.allocate_token_bitmask(1, VOCAB.size)
        m.fill_next_token_bitmask(bitmask)
        grammar.apply_token_bitmask(dense, bitmask[0])
        assert best == int(np.argmax(dense))
        sparse = logits.copy()
        mask.apply(sparse)
        np.testing.assert_array_equal(sparse, dense)
        m = grammar.Matcher(grammar.compile(GRAMMARS["json"], VOCAB))  # a structural state next


def test_batch_fill_and_apply():
    cg = grammar.compile(GRAMMARS["json"], VOCAB)
    ms = [grammar.Matcher(cg) for _ in range(3)]
    ms[1].accept_bytes(b"[")
    ms[2].accept_bytes(b'{"k')
    bitmask = grammar.allocate_token_bitmask(3, VOCAB.size)
    grammar.fill_next_token_bitmasks(ms, bitmask)
    logits = np.zeros((3, VOCAB.size), np.float32)
    grammar.apply_token_bitmask(logits, bitmask)
    for i, m in enumerate(ms):
        np.testing.assert_array_equal(np.flatnonzero(logits[i] == 0), m.next_token_mask().allowed_ids())


def _true_distance(cg, matcher, limit=16) -> int:
    """Brute force: breadth-first over every allowed token (small vocabulary only)."""
    level = [matcher]
    for depth in range(limit + 1):
        if any(m.is_complete() for m in level):
            return depth
        nxt, seen = [], set()
        for m in level:
            for token in m.next_token_mask().allowed_ids().tolist():
                if token == EOS:
                    continue
                f = m.fork()
                f.accept_token(token)
                if f.state not in seen:
                    seen.add(f.state)
                    nxt.append(f)
        level = nxt
    return limit + 1


@pytest.mark.parametrize(
    "name,prefix",
    [("json", b""), ("json", b"["), ("json", b'{"a":['), ("json", b'{"a":"x'), ("json", b"[[[1"),
     ("record", b'{"name":"n","age":'), ("shared", b'{"name":"","age":1,"ids":[3'), ("shared", b'{"name":"","age":0,"ids":[],"tags":["a')],
)
def test_min_tokens_to_complete_is_exact_and_steering_reaches_it(name, prefix):
    cg = grammar.compile(GRAMMARS[name], VOCAB)
    m = grammar.Matcher(cg)
    assert m.accept_bytes(prefix)
    expected = _true_distance(cg, m)
    assert m.min_tokens_to_complete() == expected
    steps = 0
    while not m.is_complete():
        assert m.accept_token(m.shortest_completion_token())
        steps += 1
    assert steps == expected


@settings(max_examples=60, deadline=None)
@given(which=st.sampled_from(sorted(GRAMMARS)), picks=st.lists(st.integers(0, 2**16), max_size=12),
       slack=st.integers(0, 6))
def test_completions_within_a_budget_are_certain(which, picks, slack):
    """`can_complete_within(n)` is never wrong, and choosing any of `completion_token_ids(within=n)`
    at each step keeps it true until the document is whole within the n tokens."""
    m = grammar.Matcher(grammar.compile(GRAMMARS[which], VOCAB))
    for pick in picks:  # a random prefix
        allowed = [t for t in m.next_token_mask().allowed_ids().tolist() if t != EOS]
        if not allowed:
            break
        m.accept_token(allowed[pick % len(allowed)])
    shortest = _true_distance(m.compiled, m, limit=40)
    assert m.min_tokens_to_complete() <= shortest
    assert not m.can_complete_within(shortest - 1)
    budget = shortest + slack
    if not m.can_complete_within(budget):
        return  # not proved: allowed, but it must not be claimed below
    for k, pick in enumerate(picks * 4 + [0] * budget):
        remaining = budget - k
        if m.is_complete():
            break
        assert remaining > 0 and m.can_complete_within(remaining)
        ids = m.completion_token_ids(within=remaining).tolist()
        assert ids and set(ids) <= set(m.next_token_mask().allowed_ids().tolist())
        m.accept_token(ids[pick % len(ids)])
    assert m.is_complete()


def test_stop_when_complete_terminates_without_eos():
    g = Grammar({"root": seq(lit("ok"), opt(lit("!")))})
    m = grammar.Matcher(grammar.compile(g, VOCAB), stop_when_complete=True)
    m.accept_bytes(b"ok")
    assert m.is_complete() and not m.is_terminated()  # "!" could still follow
    m.accept_bytes(b"!")
    assert m.is_terminated()


def test_empty_mask_is_an_error_naming_the_position():
    g = Grammar({"root": seq(lit("a"), chars([(0x10000, 0x10000)]))})  # a character no token spells
    vocab = Vocabulary.from_tokens([b"", b"a", b"b"], eos_ids=[0])
    m = grammar.Matcher(grammar.compile(g, vocab))
    m.accept_token(1)
    with pytest.raises(grammar.MatcherError, match="no token is allowed"):
        m.next_token_mask()


def test_rollback_beyond_start_is_refused():
    m = grammar.Matcher(grammar.compile(GRAMMARS["json"], VOCAB))
    with pytest.raises(grammar.MatcherError):
        m.rollback(1)


def test_compile_is_cached_per_grammar_and_vocabulary():
    g = GRAMMARS["json"]
    assert grammar.compile(g, VOCAB) is grammar.compile(g, VOCAB)


def test_real_vocabulary_walks(smollm2_gguf):
    vocab = Vocabulary.from_gguf(smollm2_gguf)
    cg = grammar.compile(GRAMMARS["json"], vocab)
    rng = np.random.default_rng(1)
    for _ in range(5):
        m = grammar.Matcher(cg)
        taken = _random_walk(m, lambda n: int(rng.integers(n)), max_steps=25)
        eos = set(vocab.eos_ids)
        json.loads(vocab.decode([t for t in taken if t not in eos]).decode("utf-8"))
        assert not (set(taken[:-1]) & set(vocab.special_ids))


@pytest.mark.parametrize(
    "name,prefix",
    [("shared", b'{"name":"ab'), ("shared", b'{"name":"","age":12'), ("json", b'{"a":["x'), ("json", b"[1,"),
     ("bounded", b'{"name":"abc')],
)
def test_token_ends_agree_with_walking_every_token(smollm2_vocabulary, name, prefix):
    """Where each allowed token leads, as completion searches see it: the tokens a state loops
    on are not walked there (string states), so compare with stepping every token itself."""
    cg = grammar.compile(GRAMMARS[name], smollm2_vocabulary)
    m = grammar.Matcher(cg)
    assert m.accept_bytes(prefix)
    s = m.state
    ids, ends = cg.token_ends(s)
    assert len(set(ids.tolist())) == ids.size
    found = dict(zip(ids.tolist(), ends.tolist()))
    expected = {}
    for token in range(smollm2_vocabulary.size):
        nxt = cg.walk_token(s, token)
        if nxt >= 0:
            expected[token] = nxt
    assert found == expected
    assert cg.successors(s).tolist() == sorted(set(expected.values()))


def test_steering_far_from_completion_does_not_search_at_every_token(smollm2_vocabulary, monkeypatch):
    """A document hundreds of tokens from whole: a completion search that runs out of states
    proves the states it went through far from whole too, so steering through them, or asking
    whether a small budget still fits, searches no more; and it still ends with a document the
    schema accepts."""
    from grammar._masks import completion as _completion

    member = {
        "type": "object",
        "properties": {
            "unit": {"type": ["string", "null"]}, "kind": {"enum": ["uint32", "string", "double"]},
            "nullable": {"type": "boolean"}, "default": {"type": ["string", "number", "null"]},
            "comments": {"type": "string"}, "per": {"enum": ["job", "core", "node"]},
        },
        "required": ["unit", "kind", "nullable", "default", "comments", "per"],
        "additionalProperties": False,
    }
    names = [f"field_{i}" for i in range(12)]
    schema = {"type": "object", "properties": dict.fromkeys(names, member), "required": names,
              "additionalProperties": False}
    g = grammar.from_json_schema(schema)
    cg = grammar.compile(g, smollm2_vocabulary)
    ran_out = []
    search = _completion.Completion._search

    def counted(self, state):
        fresh = state not in self._searches
        found = search(self, state)
        if fresh and not found[1]:
            ran_out.append(state)
        return found

    monkeypatch.setattr(_completion.Completion, "_search", counted)
    m = grammar.Matcher(cg)
    taken = []
    while not m.is_terminated():
        m.can_complete_within(8)  # as a runtime with a budget nearly spent asks at every token
        taken.append(m.shortest_completion_token())
        assert m.accept_token(taken[-1])
    assert len(taken) > 300
    assert len(ran_out) <= len(taken) // 20
    eos = set(smollm2_vocabulary.eos_ids)
    assert g.accepts(smollm2_vocabulary.decode([t for t in taken if t not in eos]).decode())


def test_no_dead_end_at_the_stack_depth_bound():
    """Nesting past the depth bound is refused before it can strand the document."""
    g = grammar.tool_calls([grammar.ToolSchema("f", {"type": "object", "properties": {"d": {"type": "object"}}})])
    vocab = Vocabulary.from_tokens([b""] + [bytes([b]) for b in range(256)], eos_ids=[0])
    m = grammar.Matcher(grammar.compile(g, vocab))
    refused = False
    for byte in b'{"name":"f","arguments":{"d":' + b'{"k":' * 80:
        if byte + 1 not in set(m.next_token_mask().allowed_ids().tolist()):
            refused = True
            break
        assert m.accept_bytes(bytes([byte]))
        m.min_tokens_to_complete()  # never "no completion is reachable"
    assert refused
    for _ in range(400):  # about two closing bytes per level
        if m.is_complete():
            break
        assert m.accept_token(m.shortest_completion_token())
    assert m.is_complete()


def test_counts_far_from_a_repeats_bounds_share_one_mask():
    """A 2,000-character name: every count is a state of its own, but those no token can bring
    to a bound allow the same tokens, found once; near the bound the masks are their own."""
    g = GRAMMARS["bounded"]

    def allowed_at(compiled, count: int) -> set[int]:
        m = grammar.Matcher(compiled)
        assert m.accept_bytes(b'{"name":"' + b"a" * count)
        return set(m.next_token_mask().allowed_ids().tolist())

    shared = grammar.CompiledGrammar(g, VOCAB)
    first = allowed_at(shared, 100)
    assert allowed_at(shared, 700) == first
    assert len(shared._by_far_counts) == 1  # the second count reused the first's mask
    assert allowed_at(grammar.CompiledGrammar(g, VOCAB), 700) == first  # as found afresh
    long_token = VOCAB.tokens.index(b"ab" * 20)
    assert long_token in first
    near = allowed_at(shared, 1990)  # ten characters left: the 40-byte token no longer fits
    assert long_token not in near and near < first
    assert near == allowed_at(grammar.CompiledGrammar(g, VOCAB), 1990)


def test_a_long_chain_of_optional_properties_stays_shallow_and_steerable():
    """Each optional property's "rest of the object" is a tail call: 100 of them neither
    deepen the stack past its bound (where frame-relative masks stop and the single-byte
    completion bound is lost) nor make steering search blindly."""
    from grammar._automaton.states import stack_depth
    from grammar._masks.completion import UNKNOWN

    props = {f"p{i}": {"type": "string"} for i in range(100)}
    schema = {"type": "object", "properties": props, "required": ["p99"], "additionalProperties": False}
    cg = grammar.CompiledGrammar(grammar.from_json_schema(schema), VOCAB)
    m = grammar.Matcher(cg)
    assert m.accept_bytes(b'{"p1":"x","p2":"y"')
    assert max(stack_depth(stack) for _, stack in cg.automaton.configs[m.state]) <= 2
    assert completion_of(cg).upper(m.state) < UNKNOWN
    steps = 0
    while not m.is_terminated():
        assert m.accept_token(m.shortest_completion_token())
        steps += 1
    assert steps <= completion_of(cg).upper(grammar.Matcher(cg).state) and m.is_complete()


def test_an_object_of_many_optional_properties_compiles_without_deep_recursion():
    """1,400 optional properties: each "rest of the object" is used once, so inlined it would
    nest as deep as the object is long, and the schema compiler, the NFA's emission and its size
    check all recursed once per level, past Python's limit (JSON Schema Store's eslintrc)."""
    props = {f"p{i}": {"type": "integer"} for i in range(1400)}
    schema = {"type": "object", "properties": props, "additionalProperties": False}
    g = grammar.from_json_schema(schema)
    cg = grammar.CompiledGrammar(g, VOCAB)
    m = grammar.Matcher(cg)
    assert m.accept_bytes(b'{"p3":1,"p1399":')
    assert set(m.next_token_mask().allowed_ids().tolist()) >= {ord(d) + 2 for d in "123456789"}
    assert m.accept_bytes(b"2}") and m.is_complete()
    assert not grammar.Matcher(cg).accept_bytes(b'{"p1399":1,"p3":')  # declared order


def test_a_pattern_whose_loop_and_tail_begin_alike_accepts_its_strings():
    # The loop's state reads "a" into its body and into what follows it: both paths stay live.
    compiled = grammar.compile(grammar.from_json_schema({"type": "string", "pattern": "^a*ab$"}), VOCAB)
    for text, whole in [(b'"ab"', True), (b'"aab"', True), (b'"aaab"', True), (b'"a"', False), (b'"b"', False)]:
        m = grammar.Matcher(compiled)
        assert (m.accept_bytes(text) and m.is_complete()) == whole


@pytest.mark.parametrize("schema", [False, {"not": {}}, {"enum": []}])
def test_a_grammar_that_matches_nothing_is_refused_at_compile(schema):
    with pytest.raises(grammar.CompileError, match="matches no text"):
        grammar.compile(grammar.from_json_schema(schema), VOCAB)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 12), boost=st.booleans(), ties=st.booleans())
def test_argmax_and_allows_agree_with_the_dense_mask(seed: int, steps: int, boost: bool, ties: bool) -> None:
    """Whether or not the row's own best token is allowed (`boost` makes it an allowed one),
    and with many equal logits (`ties`: the lowest id wins), `argmax` is the dense masked
    argmax and `allows` is membership."""
    rng = np.random.default_rng(seed)
    m = grammar.Matcher(grammar.compile(GRAMMARS["json"], VOCAB))
    for _ in range(steps):
        ids = m.next_token_mask().allowed_ids()
        token = int(ids[rng.integers(ids.size)])
        if token in VOCAB.eos_ids:
            break
        m.accept_token(token)
    mask = m.next_token_mask()
    allowed = mask.allowed_ids()
    logits = rng.normal(size=VOCAB.size).astype(np.float32)
    if ties:
        logits = np.round(logits)
    if boost:
        logits[int(allowed[rng.integers(allowed.size)])] = 100.0
    dense = np.full(VOCAB.size, -np.inf, np.float32)
    dense[allowed] = logits[allowed]
    assert mask.argmax(logits.copy()) == int(np.argmax(dense))
    members = set(allowed.tolist())
    for t in [*rng.integers(-2, VOCAB.size + 2, size=20).tolist(), int(allowed[0]), int(allowed[-1])]:
        assert mask.allows(t) == (t in members)


def _budget_steered(matcher: grammar.Matcher, scores: np.ndarray, budget: int) -> list[int]:
    """Decode as a runtime with a token budget does: the best-scoring allowed token, unless the
    document could then not certainly close in the budget left; then the best token that keeps
    it so."""
    taken: list[int] = []
    while not matcher.is_terminated():
        remaining = budget - len(taken)
        row = scores[len(taken) % len(scores)]
        allowed = matcher.next_token_mask().allowed_ids()
        token = int(allowed[np.argmax(row[allowed])])
        assert matcher.accept_token(token)
        if not (matcher.is_complete() or matcher.can_complete_within(remaining - 1)):
            matcher.rollback(1)
            ids = matcher.completion_token_ids(within=remaining)
            token = int(ids[np.argmax(row[ids])])
            assert matcher.accept_token(token)
        taken.append(token)
    return taken


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(name="record", seed=174, other_seed=0, budget=37)  # pooled bounds chose another token here
@given(st.sampled_from(["record", "bounded", "json"]), st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1),
       st.integers(12, 60))
def test_a_steered_document_does_not_depend_on_earlier_documents(name, seed, other_seed, budget):
    """Budget steering picks the same tokens on a grammar fresh from compile and on one whose
    earlier matchers searched elsewhere: what a search proves stays with the matcher that ran it."""
    g = GRAMMARS[name]
    scores = np.random.default_rng(seed).normal(size=(64, VOCAB.size))
    alone = _budget_steered(grammar.Matcher(grammar.CompiledGrammar(g, VOCAB)), scores, budget)
    shared = grammar.CompiledGrammar(g, VOCAB)
    other = np.random.default_rng(other_seed).normal(size=(64, VOCAB.size))
    for b in (budget // 2, budget, 2 * budget):
        _budget_steered(grammar.Matcher(shared), other, b)
    assert _budget_steered(grammar.Matcher(shared), scores, budget) == alone


@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=300), st.sampled_from([np.int32, np.int64]))
def test_distinct_ids_are_numpys_unique(values, dtype):
    """The masks' own sorted-distinct (numpy 2.3+'s `np.unique` hashes first, far slower on
    token ids) gives what `np.unique` gives, in its dtype."""
    from grammar._masks.common import _distinct

    array = np.array(values, dtype=dtype)
    found = _distinct(array)
    assert found.dtype == array.dtype
    assert np.array_equal(found, np.unique(array))

"""The byte automaton against the recognizer's oracles, on random grammars.

The matcher's masks are only as right as the automaton under them: every string of the
language must walk to an accepting state (or a grammar could refuse what a schema allows), and
no other string may. Oracles: Python `re` for grammars without references, the span fixpoint
for recursive ones (both from `test_recognize`), on random texts and on sentences of the
grammar.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_recognize import Stuck, generate, nodes, rule_sets, spans_oracle, texts, to_regex

import grammar
from grammar._automaton import nfa as _nfa
from grammar._automaton.pushdown import Automaton
from grammar._automaton.states import stack_depth
from grammar._errors import CompileError, LimitError
from grammar._ir import Rules, chars, lit, ref, repeat, seq, star


def walks_to_accept(automaton: Automaton, text: str) -> bool:
    """Whether `text` leads from the start to an accepting state, by `walk` (literal runs at
    once, successors one class at a time)."""
    if automaton.start < 0:  # the empty language
        return False
    s = automaton.walk(automaton.start, text.encode("utf-8"))
    return s >= 0 and automaton.accepting[s]


def steps_to_accept(automaton: Automaton, text: str) -> bool:
    """The same, by whole successor rows (`build`)."""
    s = automaton.start
    if s < 0:
        return False
    for byte in text.encode("utf-8"):
        s = int(automaton.byte_row(s)[byte])
        if s < 0:
            return False
    return automaton.accepting[s]


def automaton_of(rules: Rules) -> Automaton:
    try:
        automaton = Automaton(rules)
    except (CompileError, LimitError):  # left recursion, refused by design
        assume(False)
        raise
    # The early size check refuses only what building would: its count is a lower bound.
    assert automaton.nfa._fewest_states() <= len(automaton.nfa.eps)
    return automaton


@contextmanager
def repeats_called():
    """Every repeat of an item of three states or more made as calls of one body, as only
    long ones are (`_NFA._body_of`), so the small random grammars here test that form too."""
    saved = _nfa._SPELLED_REPEAT, _nfa._SPELLED_COPIES
    _nfa._SPELLED_REPEAT = _nfa._SPELLED_COPIES = 0
    try:
        yield
    finally:
        _nfa._SPELLED_REPEAT, _nfa._SPELLED_COPIES = saved


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes(), texts, st.randoms(use_true_random=False))
def test_regular_grammars_agree_with_python_re(node, text, rng):
    check_regular(node, text, rng)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes(), texts, st.randoms(use_true_random=False))
def test_regular_grammars_with_called_repeats_agree_with_python_re(node, text, rng):
    with repeats_called():
        check_regular(node, text, rng)


def check_regular(node, text, rng) -> None:
    rules = Rules({"root": node})
    automaton = automaton_of(rules)
    candidates = [text]
    try:
        candidates.append(generate(rules, node, rng))  # a sentence: accepted
    except Stuck:
        pass
    for candidate in candidates:
        expected = bool(re.fullmatch(to_regex(node), candidate))
        assert walks_to_accept(automaton, candidate) == expected
        assert steps_to_accept(automaton, candidate) == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule_sets(), texts)
def test_recursive_grammars_agree_with_the_span_fixpoint(rules, text):
    check_recursive(rules, text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule_sets(), texts)
def test_recursive_grammars_with_called_repeats_agree_with_the_span_fixpoint(rules, text):
    with repeats_called():
        check_recursive(rules, text)


def check_recursive(rules, text) -> None:
    automaton = automaton_of(rules)
    expected = spans_oracle(rules, text)
    assert walks_to_accept(automaton, text) == expected
    assert steps_to_accept(automaton, text) == expected


def test_the_size_bound_counts_only_what_is_made():
    # A repeat of at most zero copies makes nothing of its item, nor of the rule it calls.
    rules = Rules({"root": repeat(ref("r1"), 0, 0), "r1": seq(lit("aa"), ref("root"))})
    automaton = Automaton(rules)
    assert automaton.nfa._fewest_states() <= len(automaton.nfa.eps)


def test_long_bounded_repeats_nest_without_multiplying():
    # Spelled out, 200 items of up to 300 characters each would be millions of states.
    schema = {
        "type": "array",
        "maxItems": 200,
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": 300}, "n": {"type": "integer"}},
            "required": ["name", "n"],
            "additionalProperties": False,
        },
    }
    automaton = Automaton(grammar.from_json_schema(schema).rule_set())
    assert len(automaton.nfa.eps) < 50_000

    def text(items: int, length: int) -> str:
        return json.dumps([{"name": "é" * length, "n": i} for i in range(items)], separators=(",", ":"),
                          ensure_ascii=False)

    assert walks_to_accept(automaton, text(3, 300))
    assert walks_to_accept(automaton, text(200, 2))
    assert not walks_to_accept(automaton, text(3, 301))
    assert not walks_to_accept(automaton, text(201, 2))


def test_a_tail_call_pushes_no_frame_so_right_recursion_has_no_depth_bound():
    # `list` calls itself last: each call returns where the one before it would, so 200 items
    # (past the stack-depth bound of 64) stay one frame deep.
    from grammar._ir import opt

    rules = Rules({"root": ref("list"), "list": seq(lit("a"), opt(seq(lit(","), ref("list"))))}, "root")
    automaton = Automaton(rules)
    assert walks_to_accept(automaton, "a" + ",a" * 200)
    assert not walks_to_accept(automaton, "a" + ",a" * 200 + ",")
    s = automaton.walk(automaton.start, b"a" + b",a" * 200)
    assert max(stack_depth(stack) for _, stack in automaton.configs[s]) <= 1


def test_a_grammar_too_large_to_build_is_refused_without_building_it_whole():
    # A million-state NFA would take seconds to find out state by state.
    with pytest.raises(LimitError, match="too large"):
        Automaton(Rules({"root": repeat(seq(lit("ab"), chars([(0x61, 0x7A)])), 0, 500_000)}))


def test_a_loop_and_what_follows_it_may_begin_alike():
    # The loop's state reads "a" into its body and "a" into what follows: both paths are live.
    automaton = Automaton(Rules({"root": seq(star(lit("a")), lit("ab"))}))
    for text, expected in [("ab", True), ("aab", True), ("aaab", True), ("a", False), ("b", False)]:
        assert walks_to_accept(automaton, text) == expected
        assert steps_to_accept(automaton, text) == expected


_EDGES = [0x7F, 0x80, 0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x3FFFF, 0x40000, 0x10FFFF]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_EDGES) | st.integers(0, 0x10FFFF),
                          st.sampled_from(_EDGES) | st.integers(0, 0x10FFFF)), min_size=1, max_size=4),
       st.lists(st.sampled_from(_EDGES) | st.integers(0, 0x10FFFF), min_size=1, max_size=12))
def test_a_class_reads_the_utf8_of_its_code_points_and_nothing_else(pairs, probes):
    """A class is emitted as a DAG of byte ranges whose equal tails are one state; it still
    reads exactly the encodings of its members, at the boundaries of every encoding length."""
    ranges = [(min(a, b), max(a, b)) for a, b in pairs]
    automaton = automaton_of(Rules({"root": chars(ranges)}, "root"))
    for cp in [*probes, *(e + d for e in _EDGES for d in (-1, 0, 1) if 0 <= e + d <= 0x10FFFF)]:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        assert walks_to_accept(automaton, chr(cp)) == any(lo <= cp <= hi for lo, hi in ranges), hex(cp)
    # Bytes that are no character's encoding (a lone continuation byte, a cut sequence).
    for data in (b"\x80", b"\xc2", b"\xe0\xa0", b"\xf0\x90\x80"):
        s = automaton.walk(automaton.start, data)
        assert s < 0 or not automaton.accepting[s]


def test_a_class_of_all_of_unicode_is_a_few_states():
    automaton = Automaton(Rules({"root": chars([(0x20, 0x10FFFF)])}, "root"))
    assert len(automaton.nfa.eps) <= 12

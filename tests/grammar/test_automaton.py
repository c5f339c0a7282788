"""The byte automaton against the recognizer's oracles, on random grammars.

The matcher's masks are only as right as the automaton under them: every string of the
language must walk to an accepting state (or a grammar could refuse what a schema allows), and
no other string may. Oracles: Python `re` for grammars without references, the span fixpoint
for recursive ones (both from `test_recognize`), on random texts and on sentences of the
grammar.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_recognize import Stuck, generate, nodes, rule_sets, spans_oracle, texts, to_regex

from grammar._automaton import Automaton
from grammar._errors import CompileError, LimitError
from grammar._ir import Rules, chars, lit, repeat, seq, star


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
    assert automaton.nfa._fewest_states(rules.graph()) <= len(automaton.nfa.eps)
    return automaton


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes(), texts, st.randoms(use_true_random=False))
def test_regular_grammars_agree_with_python_re(node, text, rng):
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
    automaton = automaton_of(rules)
    expected = spans_oracle(rules, text)
    assert walks_to_accept(automaton, text) == expected
    assert steps_to_accept(automaton, text) == expected


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

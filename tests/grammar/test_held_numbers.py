"""Free text with held numbers: every number it writes is one of the held ones, and nothing
else about free text changes."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import grammar
from grammar import CompileError
from ir_sampling import token_walk

RUN = re.compile(r"[0-9.,]*[0-9][0-9.,]*")
HELD = ("205", "7.5", "1,204,557", "1204557", "2024", "02", "3,4")


def holds(text: str, numbers) -> bool:
    """The reference: each maximal run of digits, points and commas holding a digit is a held
    number once the points and commas at its ends are dropped."""
    return all(run.strip(".,") in numbers for run in RUN.findall(text))


texts = st.text(alphabet="0123457.,- ab{[<é\n", max_size=14)


@settings(max_examples=400, deadline=None)
@given(text=texts, envelope=st.sampled_from(["json", "hermes", ("hermes", "fenced", "json")]))
def test_held_text_is_free_text_whose_numbers_are_all_held(text, envelope):
    held = grammar.free_text(envelope=envelope, numbers=HELD)
    free = grammar.free_text(envelope=envelope)
    assert held.accepts(text) == (free.accepts(text) and holds(text, HELD))


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="0123456789.,-: aZ", min_size=1, max_size=30))
def test_a_text_holds_every_number_it_writes(text):
    """`numbers_in(source)` holds each of the source's numbers as the source writes it (a run
    with two points or commas in a row, "1..2", is no number: none holds it)."""
    assume(not re.search(r"[0-9][.,]*[.,][.,][.,]*[0-9]", text))
    assert holds(text, grammar.numbers_in(text))
    assert grammar.free_text(numbers=grammar.numbers_in(text)).accepts("x" + text)


def test_a_number_is_held_in_its_other_grouping_too():
    found = grammar.numbers_in('{"population": 1204557, "km": 88,412.5} on 2024-02-11')
    assert {"1204557", "1,204,557", "88,412.5", "88412.5", "2024", "02", "11"} <= set(found)
    g = grammar.free_text(numbers=found)
    assert g.accepts("About 1,204,557 people.")
    assert not g.accepts("About 120,4557 people.")  # the number garbled: not held
    assert not g.accepts("About 1,204,558 people.")


def test_with_no_number_held_the_text_writes_no_digit():
    g = grammar.free_text(numbers=())
    assert g.accepts("Snow, and wind.")
    assert not g.accepts("It is 3 degrees.")


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_walks_under_held_numbers_never_dead_end_and_hold_their_numbers(data):
    from runtimes.testing import synthetic_vocabulary

    g = grammar.free_text(envelope="hermes", numbers=HELD, max_bytes=data.draw(st.sampled_from([None, 40])))
    text = token_walk(g, synthetic_vocabulary(), lambda n: data.draw(st.integers(0, n - 1)), 30, 100)
    assert g.accepts(text)
    assert holds(text, HELD)


@pytest.mark.parametrize("numbers", [["1.2.", "x"], ["-3"], ["1,,2"], ["", "4"]])
def test_a_held_number_must_be_one(numbers):
    with pytest.raises(CompileError, match="held numbers"):
        grammar.free_text(numbers=numbers)


def test_a_lone_string_is_not_a_set_of_numbers():
    with pytest.raises(CompileError, match="collection of strings"):
        grammar.free_text(numbers="205")


def test_an_opening_a_number_could_begin_in_is_refused_not_loosened():
    with pytest.raises(CompileError, match="opening holding a digit"):
        grammar._tools._text_not_starting_with(["get2("], None, ("2",))

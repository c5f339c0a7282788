"""Whole numbers written in English words are numbers a grounded field may take."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from grammar import Grounding, from_json_schema
from grammar._jsonschema.written_numbers import written_numbers

UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen").split()
TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def spelled(n: int, joiner: str) -> str:
    if n < 20:
        return UNITS[n]
    tens, unit = divmod(n, 10)
    return TENS[tens - 2] + (joiner + UNITS[unit] if unit else "")


@given(st.integers(0, 99), st.sampled_from(["-", " "]), st.sampled_from([str.lower, str.title, str.upper]))
def test_a_cardinal_below_a_hundred_is_read_in_any_case(n, joiner, case):
    assert written_numbers(f"We ordered {case(spelled(n, joiner))} chairs.") == [Decimal(n)]


def test_dozens_are_read_and_words_that_only_hold_a_number_are_not():
    assert written_numbers("a dozen eggs, half a dozen rolls, Dozen boxes") == [Decimal(12), Decimal(6), Decimal(12)]
    assert written_numbers("someone wrote tenfold; the fifth; often") == []


def test_a_grounded_integer_may_take_a_number_the_text_writes_in_words():
    g = from_json_schema({"type": "integer", "grounded": True},
                         grounding=Grounding("Kofi Boateng ordered a dozen solar lanterns at £32 each."))
    assert g.accepts("12") and g.accepts("32") and not g.accepts("1")

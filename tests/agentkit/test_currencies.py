"""Reading the currencies a text writes, by code, symbol or name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentkit._outputs.currencies import CODES, written_currencies


@pytest.mark.parametrize("text, codes", [
    ("£18.50 each", {"GBP"}),
    ("3.75 euros a piece, 450 EUR in total", {"EUR"}),
    ("$389 each", {"USD"}),
    ("59.95 dollars", {"USD"}),
    ("How many Canadian dollars is 80 US dollars?", {"CAD", "USD"}),
    ("C$ 40 or A$ 35", {"CAD", "AUD"}),
    ("65 Swiss francs apiece", {"CHF"}),
    ("¥3,200", {"JPY", "CNY"}),  # a bare yen or yuan sign: either
    ("from USD to JPY", {"USD", "JPY"}),
    ("Rs. 500, or ₹500", {"INR"}),
    ("120 kr", {"SEK", "NOK", "DKK", "ISK"}),
    ("No money is named here, nor any pound of flour... well: pounds", {"GBP"}),
])
def test_symbols_names_and_codes_are_read_as_codes(text, codes):
    assert written_currencies(text) == codes


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz 0123456789.,", max_size=60))
def test_plain_lowercase_words_without_a_currency_name_write_none(text):
    named = ("euro", "dollar", "pound", "yen", "yuan", "franc", "kr", "rupee", "rand", "lira", "peso", "rub",
             "baht", "naira", "dirham", "riyal", "dong", "forint", "kron", "zlot", "shekel", "reais", "sterling",
             "renminbi", "korun", "rs")
    if not any(word in text for word in named):
        assert written_currencies(text) == frozenset()


@given(st.sampled_from(sorted(CODES)), st.text(alphabet="abc ", max_size=10))
def test_a_code_written_as_a_word_is_read(code, around):
    assert code in written_currencies(f"{around} {code} {around}")

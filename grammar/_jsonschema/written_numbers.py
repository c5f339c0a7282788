"""The whole numbers a text writes in English words: "two standing desks", "a dozen lanterns",
"twenty-five rows".

A grounded number's values are those the source writes in digits *and* these, so a quantity
written as a word can still be held to the text. Cardinals from zero to ninety-nine (tens and
units joined by a hyphen or a blank), "a dozen" and "half a dozen". A word read as a number
where it is not one ("one of them") adds a candidate the field's constraints still filter; a
phrase not read adds none.
"""

from __future__ import annotations

import re
from decimal import Decimal

CARDINALS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
"""The cardinals below twenty by their English words (also a clock's hours: `written_dates`)."""
_TENS = {w: n for n, w in zip(range(20, 100, 10), "twenty thirty forty fifty sixty seventy eighty ninety".split())}
_DOZENS = {"half a dozen": 6, "a dozen": 12, "dozen": 12}


def _either(words) -> str:
    return "|".join(sorted(words, key=len, reverse=True))  # the longest first: "half a dozen" before "a dozen"


_NUMBER = re.compile(
    rf"\b(?:(?P<dozens>{_either(_DOZENS)})"
    rf"|(?P<tens>{_either(_TENS)})(?:[- ](?P<unit>{_either(w for w, n in CARDINALS.items() if 0 < n < 10)}))?"
    rf"|(?P<alone>{_either(CARDINALS)}))\b",
    re.IGNORECASE)


def written_numbers(text: str) -> list[Decimal]:
    """The numbers `text` writes in words, in order."""
    out = []
    for match in _NUMBER.finditer(text):
        if match.group("dozens"):
            value = _DOZENS[match.group("dozens").lower()]
        elif match.group("tens"):
            unit = match.group("unit")
            value = _TENS[match.group("tens").lower()] + (CARDINALS[unit.lower()] if unit else 0)
        else:
            value = CARDINALS[match.group("alone").lower()]
        out.append(Decimal(value))
    return out

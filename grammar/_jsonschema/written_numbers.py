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

_UNITS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_TENS = {w: n for n, w in zip(range(20, 100, 10), "twenty thirty forty fifty sixty seventy eighty ninety".split())}
_DOZENS = {"half a dozen": 6, "a dozen": 12, "dozen": 12}

_UNIT = "|".join(sorted(_UNITS, key=len, reverse=True))
_NUMBER = re.compile(
    r"\b(?:(?P<dozens>half a dozen|a dozen|dozen)"
    rf"|(?P<tens>{'|'.join(_TENS)})(?:[- ](?P<unit>{'|'.join(w for w in _UNITS if 0 < _UNITS[w] < 10)}))?"
    rf"|(?P<alone>{_UNIT}))\b",
    re.IGNORECASE)


def written_numbers(text: str) -> list[Decimal]:
    """The numbers `text` writes in words, in order."""
    out = []
    for match in _NUMBER.finditer(text):
        if match.group("dozens"):
            value = _DOZENS[match.group("dozens").lower()]
        elif match.group("tens"):
            value = _TENS[match.group("tens").lower()] + (_UNITS[match.group("unit").lower()] if match.group("unit") else 0)
        else:
            value = _UNITS[match.group("alone").lower()]
        out.append(Decimal(value))
    return out

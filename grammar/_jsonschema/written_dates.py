"""The dates and times a text writes, in the ISO spellings a schema asks for.

People write "March 14th, 2025", "the 22nd of August 2025", "2 pm" or "half past twelve";
a schema asks for `2025-03-14` (`format: date`) or `14:00` (a time pattern). A grounded
string's values are the source's spans *and* these spellings of what it writes, so a date
or time field can be held to the text although the text never writes the ISO form. English
month names, ordinals and clock phrases; numeric dates in either day/month order where both
are real dates. A phrase read wrong adds a candidate the field's constraints still filter;
a phrase not read adds none, and the field keeps the source's spans (or its plain grammar).
"""

from __future__ import annotations

import datetime
import re

from .written_numbers import CARDINALS

_MONTHS = {
    name: n for n, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")], 1)
    for name in names
}
_ORDINAL_WORDS = {
    word: n for n, word in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
        "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split(), 1)
}
_ORDINAL_WORDS.update({f"twenty-{w}": 20 + n for w, n in list(_ORDINAL_WORDS.items())[:9]})
_ORDINAL_WORDS.update({"thirtieth": 30, "thirty-first": 31})
_HOUR_WORDS = {w: n for w, n in CARDINALS.items() if 1 <= n <= 12}

_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?|(?P<dayword>" + "|".join(sorted(_ORDINAL_WORDS, key=len, reverse=True)) + ")"
_YEAR = r"(?:,?\s*(?P<year>\d{4}))?"
_DATES = [
    re.compile(rf"\b(?:{_MONTH})\s+(?:the\s+)?(?:{_DAY})\b{_YEAR}", re.IGNORECASE),  # March 14th, 2025
    re.compile(rf"\b(?:the\s+)?(?:{_DAY})\s+(?:of\s+)?(?:{_MONTH}){_YEAR}", re.IGNORECASE),  # the 1st of July 2025
]
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_NUMERIC_DATE = re.compile(r"(?<!\d)(?<!\d[.\-/])(\d{1,2})([./])(\d{1,2})\2(\d{4})(?!\d|[.\-/]\d)")
_YEAR_AFTER = re.compile(r"\b(\d{4})\b")

_CLOCK = re.compile(
    r"(?<![\d:.])(?P<hour>\d{1,2})(?::(?P<minute>[0-5]\d))?(?::(?P<second>[0-5]\d))?"
    r"(?:\s*(?P<half>[ap])\.?\s?m\.?(?![a-z]))?(?P<after>\s+in\s+the\s+(?:morning|afternoon|evening))?",
    re.IGNORECASE,
)
_PHRASE = re.compile(
    r"\b(?:(?P<part>half|quarter)\s+(?P<rel>past|to)\s+)?(?P<hour>" + "|".join(_HOUR_WORDS) + r"|\d{1,2})"
    r"(?:\s+o'clock)?(?:\s*(?P<half>[ap])\.?\s?m\.?(?![a-z]))?(?P<after>\s+in\s+the\s+(?:morning|afternoon|evening))?",
    re.IGNORECASE,
)
_NAMED_TIMES = {"noon": (12, 0), "midday": (12, 0), "midnight": (0, 0)}


def written_dates(text: str) -> list[str]:
    """The dates `text` writes, as ISO dates (`2025-03-14`), in order, each once. A date
    written without its year takes the next year the text writes after it."""
    found: list[tuple[int, str]] = []
    for pattern in _DATES:
        for m in pattern.finditer(text):
            day = int(m["day"]) if m["day"] else _ORDINAL_WORDS[m["dayword"].lower()]
            year = m["year"] or _next_year(text, m.end())
            if year is not None:
                _add(found, m.start(), int(year), _MONTHS[m["month"].lower().rstrip(".")], day)
    for m in _ISO_DATE.finditer(text):
        _add(found, m.start(), int(m[1]), int(m[2]), int(m[3]))
    for m in _NUMERIC_DATE.finditer(text):
        first, second, year = int(m[1]), int(m[3]), int(m[4])
        _add(found, m.start(), year, second, first)  # 14.03.2025: day first
        _add(found, m.start(), year, first, second)  # 03/14/2025: month first
    return list(dict.fromkeys(iso for _, iso in sorted(found)))


def written_times(text: str) -> list[str]:
    """The times of day `text` writes, as `HH:MM` (and `HH:MM:SS` where seconds are written),
    in order, each once: `9:30`, `2 pm`, `6:45 pm`, `7:15 in the evening`, `half past
    twelve`, `quarter to nine`, `noon`. A bare number is a time only with a clock mark
    (`:`, am/pm, o'clock, a part of the day)."""
    found: list[tuple[int, str]] = []
    for m in _CLOCK.finditer(text):
        marked = m["minute"] is not None or m["half"] or m["after"]
        if marked:
            _add_time(found, m.start(), int(m["hour"]), int(m["minute"] or 0), m["second"], m["half"], m["after"])
    for m in _PHRASE.finditer(text):
        if not (m["part"] or m["half"] or m["after"] or "o'clock" in m[0].lower()):
            continue
        hour = int(m["hour"]) if m["hour"].isdigit() else _HOUR_WORDS[m["hour"].lower()]
        minute = 0
        if m["part"]:
            minute = {"half": 30, "quarter": 15}[m["part"].lower()]
            if m["rel"].lower() == "to":
                hour, minute = (hour - 1) % 24 or 12, 60 - minute
        _add_time(found, m.start(), hour, minute, None, m["half"], m["after"])
    for word, (hour, minute) in _NAMED_TIMES.items():
        for m in re.finditer(rf"\b{word}\b", text, re.IGNORECASE):
            _add_time(found, m.start(), hour, minute, None, None, None)
    return list(dict.fromkeys(t for _, t in sorted(found)))


def _next_year(text: str, at: int) -> str | None:
    m = _YEAR_AFTER.search(text, at)
    return m[1] if m else None


def _add(found: list[tuple[int, str]], at: int, year: int, month: int, day: int) -> None:
    try:
        found.append((at, datetime.date(year, month, day).isoformat()))
    except ValueError:  # not a real date (a 31st of April, a 13th month)
        pass


def _add_time(found: list[tuple[int, str]], at: int, hour: int, minute: int, second: str | None,
              half: str | None, after: str | None) -> None:
    part = (half or "").lower()
    if after:
        part = "a" if "morning" in after.lower() else "p"
    if part:
        if not 1 <= hour <= 12:
            return  # "14 pm" is no time
        hour = hour % 12 + (12 if part == "p" else 0)
    if not 0 <= hour <= 23:
        return
    found.append((at, f"{hour:02d}:{minute:02d}" + (f":{second}" if second else "")))

"""Dates and times a text writes in words, offered in ISO spelling to grounded fields that ask
for that form (`format: date`, a time pattern): read from many ways of writing them, and only
ever values the field's constraints allow."""

from __future__ import annotations

import datetime
import json

from hypothesis import given
from hypothesis import strategies as st

from grammar import Grounding, from_json_schema
from grammar._jsonschema.written_dates import written_dates, written_times

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
TIME = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"


def suffix(day: int) -> str:
    return "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def spoken(d: datetime.date, style: int) -> str:
    month, day, year = MONTHS[d.month - 1], d.day, d.year
    return [
        f"{month} {day}{suffix(day)}, {year}",
        f"{month} {day}, {year}",
        f"{day} {month} {year}",
        f"the {day}{suffix(day)} of {month} {year}",
        f"{month[:3]} {day} {year}",
        d.isoformat(),
        f"{day:02d}.{d.month:02d}.{year}",
        f"{d.month:02d}/{day:02d}/{year}",
        f"Tuesday, {month} {day}{suffix(day)}, {year}",
    ][style]


@given(st.dates(datetime.date(1900, 1, 1), datetime.date(2199, 12, 31)), st.integers(0, 8),
       st.sampled_from(["Meet on {}.", "{}: kickoff", "Due by {} at the latest", "({})"]))
def test_a_date_written_in_any_common_way_is_read_as_its_iso_date(d, style, frame):
    assert d.isoformat() in written_dates(frame.format(spoken(d, style)))


@given(st.integers(1, 10), st.sampled_from(MONTHS), st.integers(2000, 2100))
def test_an_ordinal_in_words_is_a_day(day, month, year):
    iso = datetime.date(year, MONTHS.index(month) + 1, day).isoformat()
    assert iso in written_dates(f"on the {ORDINALS[day - 1]} of {month} {year}")


def test_a_date_without_its_year_takes_the_next_year_written():
    assert written_dates("moved from May 5th to May 12th, 2025") == ["2025-05-05", "2025-05-12"]


def test_no_date_where_none_is_real():
    assert written_dates("April 31st, 2025; 2024-13-01; version 1.2.3; 15 yoga mats") == []


@given(st.integers(0, 23), st.integers(0, 59))
def test_a_clock_time_in_twelve_or_twenty_four_hours_is_read(hour, minute):
    twelve = hour % 12 or 12
    half = "am" if hour < 12 else "pm"
    want = f"{hour:02d}:{minute:02d}"
    assert want in written_times(f"starts at {hour}:{minute:02d}.")
    assert want in written_times(f"starts at {twelve}:{minute:02d} {half}")
    assert want in written_times(f"starts at {twelve}:{minute:02d} {half[0]}.m. sharp")
    if minute == 0:
        assert want in written_times(f"at {twelve} {half}")


def test_clock_phrases():
    assert written_times("at half past twelve") == ["12:30"]
    assert written_times("at quarter to nine in the evening") == ["20:45"]
    assert written_times("at 7:15 in the morning") == ["07:15"]
    assert written_times("lunch at noon, done by 6 o'clock") == ["12:00", "06:00"]


def test_a_bare_number_is_no_time():
    assert written_times("15 yoga mats at 3 each, room 12") == []


@given(st.dates(datetime.date(2000, 1, 1), datetime.date(2099, 12, 31)), st.integers(0, 23), st.integers(0, 59))
def test_a_grounded_date_and_time_are_the_ones_the_text_writes(d, hour, minute):
    text = f"Review on {spoken(d, 0)} at {hour}:{minute:02d} with Ann."
    schema = {"type": "object", "additionalProperties": False, "required": ["date", "at"], "properties": {
        "date": {"type": "string", "format": "date", "grounded": True},
        "at": {"type": "string", "pattern": TIME, "grounded": True}}}
    g = from_json_schema(schema, grounding=Grounding(text))
    assert all(note.grounded for note in g.grounding)
    right = {"date": d.isoformat(), "at": f"{hour:02d}:{minute:02d}"}
    assert g.accepts(json.dumps(right, separators=(",", ":")))
    other = d + datetime.timedelta(days=1)
    assert not g.accepts(json.dumps({**right, "date": other.isoformat()}, separators=(",", ":")))
    assert not g.accepts(json.dumps({**right, "at": f"{(hour + 1) % 24:02d}:{minute:02d}"}, separators=(",", ":")))


def test_a_free_string_is_not_offered_the_iso_spellings():
    g = from_json_schema({"type": "string", "grounded": True}, grounding=Grounding("on March 14th, 2025"))
    assert g.accepts('"March 14th"') and not g.accepts('"2025-03-14"')


def test_a_text_with_no_date_leaves_a_date_field_its_plain_grammar():
    g = from_json_schema({"type": "string", "format": "date", "grounded": True}, grounding=Grounding("no date here"))
    (note,) = g.grounding
    assert not note.grounded and g.accepts('"2031-01-02"')


def test_a_field_the_source_holds_no_value_for_says_so_apart_from_one_too_large():
    g = from_json_schema({"type": "object", "required": ["n", "d"], "properties": {
        "n": {"type": "integer", "grounded": True}, "d": {"type": "string", "format": "date", "grounded": True}}},
        grounding=Grounding("nothing to hold"))
    assert [note.unfilled for note in g.grounding] == [True, True]
    held = from_json_schema({"type": "string", "grounded": True}, grounding=Grounding("x" * 20_001))
    (note,) = held.grounding
    assert not note.grounded and not note.unfilled

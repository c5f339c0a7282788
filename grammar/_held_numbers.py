"""Free text whose numbers are held: every number it writes is one of a given set.

A number, here, is a maximal run of digits with the points and commas between them ("205",
"1,204,557", "7.5"); a point or comma that touches no digit is punctuation. Text holds its
numbers when each run, less the points and commas at its ends ("205." ends a sentence), is one
of the held ones, written exactly so: held "7.5" admits "7.5" and "-7.5" (the sign is text) but
not "7.50", "75" or "7.5.1"; a run with two points or commas in a row ("1..2") is no number and
none holds it. A small model answering from a tool's result invents or garbles the number it
restates ("20 days" for 205, "120,4557"); an answer held so can only restate one the
conversation holds.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from ._errors import CompileError
from ._ir import Node, alt, char_set, lit, negate, opt, ref, seq, star

RUN_CHARS = "0123456789.,"
"""The characters a number's run is made of."""

_HELD = re.compile(r"[0-9]+(?:[.,][0-9]+)*")
_RUN = re.compile(r"[0-9.,]*[0-9][0-9.,]*")
_GROUPED = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")
_PLAIN = re.compile(r"([0-9]{4,})(\.[0-9]+)?")


def numbers_in(text: str) -> tuple[str, ...]:
    """The numbers `text` writes, each as written and in its other common grouping: "1204557"
    also as "1,204,557", "88,412" also as "88412". A date gives its parts ("2024-02-11": 2024,
    02 and 11); a sign is not part of a number. In order of first appearance, once each."""
    found: dict[str, None] = {}
    for run in _RUN.findall(text):
        number = run.strip(".,")
        if not _HELD.fullmatch(number):
            continue  # "1..2": no number a text would restate
        found[number] = None
        if _GROUPED.fullmatch(number):
            found[number.replace(",", "")] = None
        elif (plain := _PLAIN.fullmatch(number)) is not None and not number.startswith("0"):
            whole, fraction = plain.groups()
            found[f"{int(whole):,}{fraction or ''}"] = None
    return tuple(found)


def check_numbers(numbers: Collection[str]) -> tuple[str, ...]:
    """`numbers` as held numbers, or CompileError naming the first that is not one (digits,
    with single points or commas between them)."""
    if isinstance(numbers, (str, bytes)):
        raise CompileError(f"held numbers must be a collection of strings, not one {type(numbers).__name__}")
    held = []
    for n in numbers:
        if not isinstance(n, str) or not _HELD.fullmatch(n):
            raise CompileError(f"held numbers are digits with single points or commas between them; {n!r} is not one")
        held.append(n)
    return tuple(dict.fromkeys(held))


def number_rules(numbers: Iterable[str]) -> dict[str, Node]:
    """Rules for text whose runs are held (see the module): "numbers-text", any such text that
    starts where no run continues, and "numbers-run", one run and what may follow it."""
    held = alt(*(lit(n) for n in numbers))
    points = star(char_set(".,"))
    other = negate([(ord(c), ord(c)) for c in RUN_CHARS])
    run = alt(seq(char_set(".,"), points), seq(points, held, points))
    return {
        "numbers-text": seq(star(alt(other, seq(run, other))), opt(run)),
        "numbers-run": seq(run, opt(seq(other, ref("numbers-text")))),
    }


def check_openings(openings: Iterable[str]) -> None:
    """Openings free text must not start with, checked for a run's characters: text that
    starts with a proper prefix of one is matched by the opening's trie, where a number could
    not be checked."""
    for o in openings:
        if any(c in RUN_CHARS for c in o):
            raise CompileError(f"free text with held numbers cannot exclude an opening holding a digit, "
                               f"point or comma ({o!r}): a number could begin inside it")

"""The bounds on the model's JSON that agentkit reads. A recursive schema
(`Node(children: list[Node])`) lets the grammar write any depth, and an integer any length, but
parsing and validating are recursive and Python refuses to read an integer of more than 4,300
digits: text and values are measured here first, without recursion, and refused past a bound."""

from __future__ import annotations

import re
import sys
from typing import Any

MAX_NESTING = 64
"""The most levels of arrays and objects a tool call's arguments or a final output may nest."""

ENVELOPE_NESTING = 2
"""Levels a turn's text adds around the arguments: a call object, and a list of calls."""

# A JSON string (skipped: its brackets and digits are text), one bracket, or a run of digits.
# A quote that opens no whole string on its line is passed over, so what follows still counts.
_TOKENS = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|[\[\]{}]|\d+')


def max_digits() -> int:
    """The longest integer Python parses (`sys.get_int_max_str_digits`; 0 there is no limit)."""
    return sys.get_int_max_str_digits() or sys.maxsize


def text_problem(text: str, *, nesting: int = MAX_NESTING, named: int = MAX_NESTING) -> str | None:
    """Why `text` may not be parsed (brackets outside JSON strings nested deeper than
    `nesting`, or a number longer than `max_digits()`), or None. The reason names `named` as
    the bound (a turn names its arguments' bound, inside the envelope `nesting` counts)."""
    depth = deepest = 0
    digits = max_digits()
    for found in _TOKENS.finditer(text):
        mark = found.group()
        if mark in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif mark in "]}":
            depth = max(depth - 1, 0)
        elif mark[0].isdigit() and len(mark) > digits:
            return f"holds a number of {len(mark)} digits; at most {digits} are read"
    return too_deep(deepest, named) if deepest > nesting else None


def value_depth(value: Any) -> int:
    """The deepest nesting of lists, tuples and dicts in `value` (a scalar is 0), walked until
    past `MAX_NESTING`."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > MAX_NESTING:  # deep enough to refuse: the rest need not be walked
            return deepest
        todo.extend((child, depth + 1) for child in children)
    return deepest


def too_deep(depth: int, most: int = MAX_NESTING) -> str:
    """The reason a value `depth` levels deep is refused where `most` are read."""
    return f"nests {depth} levels of arrays and objects; at most {most} are read"


class UnreadableTurn(ValueError):
    """A model turn whose text may not be parsed as calls (the agent asks again)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def check_turn(text: str) -> None:
    """Raise `UnreadableTurn` for a turn's text that may not be parsed: arguments deeper than
    `MAX_NESTING` in their envelope, or a number too long to read."""
    problem = text_problem(text, nesting=MAX_NESTING + ENVELOPE_NESTING)
    if problem is not None:
        raise UnreadableTurn(problem)

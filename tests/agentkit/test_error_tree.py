"""The error tree drawn in `agentkit._errors`'s docstring is the class hierarchy itself."""

from __future__ import annotations

import re

import agentkit
from agentkit import _errors

_ROW = re.compile(r"^    ((?:[│ ]   |[├└]── )*)(\w+)")


def _drawn() -> list[tuple[int, str]]:
    rows = []
    for line in (_errors.__doc__ or "").splitlines():
        m = _ROW.match(line)
        if m and hasattr(_errors, m.group(2)) and isinstance(getattr(_errors, m.group(2)), type):
            rows.append((len(m.group(1)) // 4, m.group(2)))
    return rows


def test_every_error_is_drawn_once_under_its_base() -> None:
    rows = _drawn()
    names = [name for _, name in rows]
    assert len(names) == len(set(names))
    stack: list[str] = []
    for depth, name in rows:
        stack = stack[:depth] + [name]
        if depth:
            bases = [b.__name__ for b in getattr(_errors, name).__bases__]
            assert stack[depth - 1] in bases, f"{name} is drawn under {stack[depth - 1]}, but its bases are {bases}"
    errors = {n for n, c in vars(_errors).items() if isinstance(c, type) and issubclass(c, agentkit.AgentkitError)}
    assert errors == set(names)

"""The form of a JSON text between its tokens: compact (`{"a":1,"b":[2,3]}`), fixed separators
as `json.dumps` writes them (`separators=(", ", ": ")`: `{"a": 1, "b": [2, 3]}`), or up to N
free blanks around every token (`whitespace=N`). Models are trained on `json.dumps`'s form; held
to compact JSON a small one writes worse values (it may write JSON inside a string).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .._errors import CompileError
from .._ir import EMPTY, Node, char_set, lit, ref, repeat, seq

BLANKS = " \t\n\r"  # JSON's whitespace
_ITEM = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_KEY = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")


@dataclass(frozen=True)
class Form:
    """The text between a JSON value's tokens: `inner` after `{`/`[` and before `}`/`]`,
    `comma` between members or items, `colon` after a key; `rules` the rules they call."""

    inner: Node
    comma: Node
    colon: Node
    rules: dict[str, Node]


def json_form(whitespace: int | None, separators: Sequence[str] | None) -> Form:
    """The form for `from_json_schema`'s arguments, checked: a `CompileError` naming the
    argument where one is malformed, or where both are given (each says the whole form)."""
    if whitespace is not None and (not isinstance(whitespace, int) or whitespace < 0):
        raise CompileError("whitespace must be a non-negative integer or None", keyword="whitespace")
    if separators is None:
        if not whitespace:
            return Form(EMPTY, lit(","), lit(":"), {})
        ws = ref("ws")
        return Form(ws, seq(ws, lit(","), ws), seq(ws, lit(":"), ws),
                    {"ws": repeat(char_set(BLANKS), 0, whitespace)})
    if whitespace:
        raise CompileError("give whitespace or separators, not both: each says the whole form", keyword="separators")
    if (isinstance(separators, str) or not isinstance(separators, Sequence) or len(separators) != 2
            or not all(isinstance(s, str) for s in separators)):
        raise CompileError(f"separators must be two strings (item, key), as json.dumps takes them, not {separators!r}",
                           keyword="separators")
    item, key = separators
    if not _ITEM.fullmatch(item):
        raise CompileError(f"the item separator must be ',' with JSON blanks around it, not {item!r}",
                           keyword="separators")
    if not _KEY.fullmatch(key):
        raise CompileError(f"the key separator must be ':' with JSON blanks around it, not {key!r}",
                           keyword="separators")
    return Form(EMPTY, lit(item), lit(key), {})

"""Small checks and node helpers the compiler's rooms share."""

from __future__ import annotations

import re

from .._errors import CompileError
from .._ir import EMPTY, Node, seq, walk


def _bad(message: str, keyword: str, pointer: str):
    raise CompileError(message, keyword=keyword, pointer=pointer)


def _count(value, keyword: str, pointer: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CompileError(f"{keyword} must be a non-negative integer", keyword=keyword, pointer=pointer)
    return value


def _check_regex(pattern: str, keyword: str, pointer: str) -> None:
    if not isinstance(pattern, str):
        raise CompileError("a pattern must be a string", keyword=keyword, pointer=pointer)
    from .._regex import check_pattern

    try:
        check_pattern(pattern)
    except CompileError as e:
        raise type(e)(e.reason, keyword=keyword, pointer=pointer) from None


def _has_inline_flags(pattern: str) -> bool:
    return re.search(r"\(\?[aiLmsux]+\)", pattern) is not None


def _added(names: list[str], more) -> list[str]:
    return names + [n for n in more if n not in names]


def _joined(items: list[Node], sep: Node) -> Node:
    if not items:
        return EMPTY
    out = [items[0]]
    for item in items[1:]:
        out.extend((sep, item))
    return seq(*out)


def _size(node: Node) -> int:
    count = 0
    for _ in walk(node):
        count += 1
        if count > 1000:
            break
    return count

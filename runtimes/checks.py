"""The checks every request's arguments pass before a model sees them, so a bad argument is an
`InvalidRequest` naming it, never an error from deep inside a template, a tokenizer or numpy."""

from __future__ import annotations

import math
import re
from typing import Any

from ._errors import InvalidRequest

_SURROGATE = re.compile("[\ud800-\udfff]")

MAX_SEED = 2**64 - 1
"""The largest seed: samplers and servers take unsigned 64-bit seeds."""

GREEDY_BELOW = 1e-5
"""Temperatures under this are greedy, as 0 is: logits divided by a tinier one overflow to
infinities (1e-308 drew garbage), and over the logits' float32 range the draw is the argmax
all but surely anyway. vLLM reads its temperatures the same way."""


def check_text(argument: str, text: str) -> None:
    """A string a model may read: one holding a lone surrogate (text decoded with
    ``surrogateescape``, or a JSON ``"\\ud800"`` escape) has no UTF-8 bytes to tokenize."""
    found = _SURROGATE.search(text)
    if found is not None:
        raise InvalidRequest(
            argument, f"a lone surrogate U+{ord(found.group()):04X} at character {found.start()} has no UTF-8 encoding"
        )


def check_messages(messages: Any, argument: str = "messages") -> None:
    """A chat (a list of dicts, each with a non-empty string `role` and `content` a string, None or
    a list of content parts) or a plain string; every string in it encodable as UTF-8."""
    if isinstance(messages, str):
        check_text(argument, messages)
        return
    if not isinstance(messages, list):
        raise InvalidRequest(argument, f"must be a list of message dicts or a string, not {type(messages).__name__}")
    for i, message in enumerate(messages):
        where = f"{argument}[{i}]"
        if not isinstance(message, dict):
            raise InvalidRequest(where, f"must be a dict with a 'role', not {type(message).__name__} {_short(message)}")
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise InvalidRequest(f"{where}.role", f"must be a non-empty string, got {_short(role)}")
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise InvalidRequest(
                f"{where}.content", f"must be a string, None or a list of parts, not {type(content).__name__}"
            )
        _check_strings(where, message)


def _check_strings(where: str, value: Any) -> None:
    """Every string in `value` (keys too), walked without recursion."""
    todo: list[tuple[str, Any]] = [(where, value)]
    while todo:
        path, item = todo.pop()
        if isinstance(item, str):
            check_text(path, item)
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str):
                    check_text(f"{path} key", key)
                todo.append((f"{path}.{key}", sub))
        elif isinstance(item, (list, tuple)):
            todo.extend((f"{path}[{i}]", sub) for i, sub in enumerate(item))


def check_count(argument: str, value: Any, *, least: int = 1, optional: bool = False) -> None:
    """An int (not a bool, not a float) of at least `least`; None too where `optional`."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(argument, f"must be an int, not {type(value).__name__} {_short(value)}")
    if value < least:
        raise InvalidRequest(argument, f"must be at least {least}, got {value}")


def check_number(argument: str, value: Any, *, low: float = 0.0, high: float = math.inf,
                 low_open: bool = False, optional: bool = False) -> None:
    """A finite real number (an int or float, not a bool, not NaN) within the bounds."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRequest(argument, f"must be a number, not {type(value).__name__} {_short(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidRequest(argument, f"must be finite, got {value}")
    if value < low or (low_open and value == low) or value > high:
        opening = "(" if low_open else "["
        closing = "]" if math.isfinite(high) else ")"
        raise InvalidRequest(argument, f"must be in {opening}{low:g}, {high:g}{closing}, got {value}")


def check_seed(argument: str, value: Any) -> None:
    """None, or an int from 0 to `MAX_SEED`."""
    if value is None:
        return
    check_count(argument, value, least=0)
    if value > MAX_SEED:
        raise InvalidRequest(argument, f"must be at most 2**64 - 1, got {value}")


def _short(value: Any) -> str:
    """`value`'s repr, cut to a readable length (and safe for values whose repr fails)."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__: the type is all that can be said
        return f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def check_heal(messages: Any, heal: Any) -> None:
    """Token healing's switch: True, False or None, and True only for a raw string prompt."""
    if heal is not None and not isinstance(heal, bool):
        raise InvalidRequest("heal", f"must be True, False or None, not {type(heal).__name__}")
    if heal is True and not isinstance(messages, str):
        raise InvalidRequest("heal", "token healing is for a raw string prompt; a chat's prompt ends in the "
                             "template's own tokens, which are not the caller's text")

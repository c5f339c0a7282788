"""Partial values: what a JSON document's prefix already says for sure.

A model held by a grammar writes a prefix of a valid document at every token, so a prefix
always parses this far: `partial_value(text)` is the value with every container open so far
and only the scalars that are complete (a string with its closing quote, a number followed by
what ends it, a whole `true`/`false`/`null`). A half-written string or number is left out, never
shown cut; so each partial value is a prefix-consistent view of the final one (`consistent`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from grammar import ReasoningSpan

from ._events import PartialOutput

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SPACE = " \t\n\r"
_LITERALS = {"true": True, "false": False, "null": None}
_MISSING = object()


class NotJSON(ValueError):
    """The text is not a prefix of a JSON document."""


class _End(Exception):
    """The text ended inside a scalar: the scalar is not complete."""


def partial_value(text: str) -> Any:
    """The part of the JSON document `text` begins that is certain, or `NO_VALUE` where the text
    does not yet hold any of it. Raises `NotJSON` where `text` is no prefix of a JSON document."""
    i = _skip(text, 0)
    if i == len(text):
        return NO_VALUE
    try:
        value, end, _ = _value(text, i)
    except _End:
        return NO_VALUE
    if end is not None and _skip(text, end) != len(text):
        raise NotJSON(f"text after the document at offset {_skip(text, end)}")
    return value


NO_VALUE: Any = _MISSING
"""What `partial_value` gives for a prefix that holds nothing certain yet."""


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def _value(text: str, i: int) -> tuple[Any, int | None, bool]:
    """(value, offset after it or None where the text ended inside it, whether it is whole).
    A container cut short is returned with what it holds so far; a scalar cut short raises `_End`."""
    c = text[i]
    if c == "{":
        return _object(text, i + 1)
    if c == "[":
        return _array(text, i + 1)
    if c == '"':
        return _string(text, i + 1), _string_end(text, i + 1), True
    if c == "-" or c.isdigit():
        m = _NUMBER.match(text, i)
        if m is None:
            if text[i:] == "-":
                raise _End
            raise NotJSON(f"no number at offset {i}")
        end = m.end()
        if end == len(text):
            raise _End  # more digits may follow
        if text[end] not in ",}]" + _SPACE:
            if text[end] in ".eE+-" and end + 1 == len(text) or (text[end] in "eE+-" and _tail_open(text, end)):
                raise _End
            raise NotJSON(f"no number at offset {i}")
        return json.loads(m.group()), end, True
    for word, literal in _LITERALS.items():
        if text.startswith(word, i):
            return literal, i + len(word), True
        if word.startswith(text[i:]):
            raise _End
    raise NotJSON(f"unexpected {c!r} at offset {i}")


def _tail_open(text: str, end: int) -> bool:
    """Whether text[end:] is an exponent still being written (`e`, `e-`, `E+`)."""
    return re.fullmatch(r"[eE][-+]?", text[end:]) is not None


def _string_end(text: str, i: int) -> int:
    try:
        return json.decoder.scanstring(text, i)[1]  # type: ignore[attr-defined,no-any-return]
    except json.JSONDecodeError:
        raise _End from None


def _string(text: str, i: int) -> str:
    try:
        return json.decoder.scanstring(text, i)[0]  # type: ignore[attr-defined,no-any-return]
    except json.JSONDecodeError as exc:
        if "Unterminated" in exc.msg or "Invalid \\escape" in exc.msg or "Invalid \\uXXXX" in exc.msg:
            raise _End from None
        raise NotJSON(exc.msg) from None


def _object(text: str, i: int) -> tuple[dict[str, Any], int | None, bool]:
    out: dict[str, Any] = {}
    i = _skip(text, i)
    if i == len(text):
        return out, None, False
    if text[i] == "}":
        return out, i + 1, True
    while True:
        if text[i] != '"':
            raise NotJSON(f"expected a key at offset {i}")
        try:
            key, i = _string(text, i + 1), _string_end(text, i + 1)
        except _End:
            return out, None, False
        i = _skip(text, i)
        if i == len(text):
            return out, None, False
        if text[i] != ":":
            raise NotJSON(f"expected ':' at offset {i}")
        i = _skip(text, i + 1)
        if i == len(text):
            return out, None, False
        try:
            value, end, _ = _value(text, i)
        except _End:
            return out, None, False
        out[key] = value
        if end is None:
            return out, None, False
        i = _skip(text, end)
        if i == len(text):
            return out, None, False
        if text[i] == "}":
            return out, i + 1, True
        if text[i] != ",":
            raise NotJSON(f"expected ',' or '}}' at offset {i}")
        i = _skip(text, i + 1)
        if i == len(text):
            return out, None, False


def _array(text: str, i: int) -> tuple[list[Any], int | None, bool]:
    out: list[Any] = []
    i = _skip(text, i)
    if i == len(text):
        return out, None, False
    if text[i] == "]":
        return out, i + 1, True
    while True:
        try:
            value, end, _ = _value(text, i)
        except _End:
            return out, None, False
        out.append(value)
        if end is None:
            return out, None, False
        i = _skip(text, end)
        if i == len(text):
            return out, None, False
        if text[i] == "]":
            return out, i + 1, True
        if text[i] != ",":
            raise NotJSON(f"expected ',' or ']' at offset {i}")
        i = _skip(text, i + 1)
        if i == len(text):
            return out, None, False


_GROWS = frozenset('"{}[],:el' + _SPACE)


def may_grow(piece: str) -> bool:
    """Whether appending `piece` to a JSON prefix can add to its partial value: only a piece
    that closes a string, ends a number, finishes a literal (its last letter) or opens a
    container can; one inside a string or a number cannot, so its prefix need not be read again."""
    return not _GROWS.isdisjoint(piece)


def consistent(partial: Any, final: Any) -> bool:
    """Whether `partial` is a prefix-consistent view of `final`: every key it holds is the
    final value's, with a consistent value; every list no longer than the final one, item by
    item consistent; every scalar equal, of the same type."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(k in final and consistent(v, final[k]) for k, v in partial.items())
    if isinstance(partial, list):
        return (isinstance(final, list) and len(partial) <= len(final)
                and all(consistent(p, f) for p, f in zip(partial, final)))
    return type(partial) is type(final) and partial == final


def may_be_call(value: Any, tool_names: Collection[str]) -> bool:
    """Whether a partial JSON value may still be a tool call (`{"name": <a tool>, "arguments":
    ...}`) or a list of them, rather than the final output: the two are told apart by the keys
    written so far."""
    if isinstance(value, list):
        return not value or may_be_call(value[0], tool_names)
    if not isinstance(value, dict):
        return False
    keys = list(value)
    if not keys:
        return True
    if keys[0] != "name" or value["name"] not in tool_names:
        return False
    return len(keys) == 1 or keys[1] == "arguments"


class PartialOutputs:
    """The partial outputs of one streamed agent turn: `add(piece)` gives a `PartialOutput`
    where the text so far shows more of an answer than before, None otherwise. Nothing is
    shown while the turn may still be a tool call, or while it is reasoning."""

    def __init__(self, step: int, reasoning: ReasoningSpan | None, tool_names: Collection[str]):
        self.step = step
        self.reasoning = reasoning
        self.tool_names = tool_names
        self.text = ""
        self.last: Any = NO_VALUE
        self.readable = True

    def add(self, piece: str) -> PartialOutput | None:
        self.text += piece
        if not self.readable or not may_grow(piece):
            return None
        text = self.text
        if self.reasoning is not None and (text.startswith(self.reasoning.open) or self.reasoning.open.startswith(text)):
            thought, text = self.reasoning.split(text)
            if thought is None:
                return None  # still reasoning
        try:
            value = partial_value(text)
        except NotJSON:  # tool calls in an envelope, or text: no output in this turn
            self.readable = False
            return None
        if value is NO_VALUE or may_be_call(value, self.tool_names):
            return None
        if self.last is not NO_VALUE and consistent(value, self.last) and consistent(self.last, value):
            return None
        self.last = value
        return PartialOutput(self.step, value)

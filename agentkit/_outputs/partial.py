"""Partial values: what a JSON document's prefix already says for sure, read piece by piece.

A model held by a grammar writes a prefix of a valid document at every token, so a prefix
always reads this far: the partial value is the value with every container open so far and
only the scalars that are complete (a string with its closing quote, a number followed by what
ends it, a whole `true`/`false`/`null`). A half-written string or number is left out, never
shown cut; so each partial value is a prefix-consistent view of the final one (`consistent`).

`PartialJSON` reads the text once, as it arrives: a tokenizer and a stack of the open
containers kept between pieces, each character examined a bounded number of times, the
containers filled in place. A partial value handed out is a copy of the open containers only
(what is closed is shared: it never changes again); `Partials` hands one out only where the
characters read since the last pay for that copy, so a long list or object is shown every few
items rather than after each, and streaming stays linear in the answer. Nesting is held to
`MAX_NESTING` and numbers to `max_digits()`, the bounds the whole answer's check applies:
past them reading stops (`NotJSON`), and that check names the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from typing import Any

from grammar import ReasoningSpan

from .._bounds import MAX_NESTING, max_digits, too_deep
from .events import PartialOutput

NO_VALUE: Any = object()
"""The partial value of a prefix that holds nothing certain yet."""

_BLANKS = re.compile(r"[ \t\n\r]*")
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]*')  # a string's characters up to a quote, escape or control
_NUMBER_RUN = re.compile(r"[-+.eE0-9]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_DIGIT_RUNS = re.compile(r"\d+")
_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]

# What the reader expects next.
_VALUE = 0  # a value (after ':' or ',' in an array, or the document's start)
_VALUE_OR_CLOSE = 1  # a value or ']' (just after '[')
_KEY = 2  # a key (after ',' in an object)
_KEY_OR_CLOSE = 3  # a key or '}' (just after '{')
_COLON = 4
_AFTER = 5  # ',' or the container's close, after a value
_END = 6  # only blanks: the document is whole
_STRING = 7
_ESCAPE = 8  # the character after a backslash in a string
_NUMBER_IN = 9
_LITERAL = 10


class NotJSON(ValueError):
    """The text is not a prefix of a JSON document, or nests or counts past the bounds read."""


class PartialJSON:
    """An incremental reader of one JSON document: `feed(piece)` reads the next characters,
    `value()` gives the partial value so far. `changed` says whether the value grew since the
    last `value()`; `examined` counts the characters looked at and `copied` the entries copied
    into partial values handed out (their sum is the work done, linear in the text)."""

    def __init__(self) -> None:
        self.state = _VALUE
        self.root: Any = NO_VALUE
        self.stack: list[Any] = []  # the open containers, outermost first
        self.slots: list[Any] = []  # where each open container stands in its parent (a key, or None)
        self.key: str | None = None  # the key whose value is being read
        self.chunks: list[str] = []  # the scalar being read, as written
        self.is_key = False  # whether the string being read is a key
        self.literal = ""  # the literal being read (its whole spelling)
        self.changed = False
        self.examined = 0
        self.copied = 0

    def feed(self, piece: str) -> None:
        """Read `piece`, the text's next characters. Raises `NotJSON` where the text so far is
        no prefix of a JSON document (then the reader is spent)."""
        i, n = 0, len(piece)
        while i < n:
            state = self.state
            if state == _STRING:
                j = _STRING_RUN.match(piece, i).end()  # type: ignore[union-attr]
                if j > i:
                    self.chunks.append(piece[i:j])
                self.examined += j - i
                if j == n:
                    return
                c = piece[j]
                self.examined += 1
                i = j + 1
                if c == '"':
                    self._string_end()
                elif c == "\\":
                    self.chunks.append(c)
                    self.state = _ESCAPE
                else:
                    raise NotJSON(f"a control character U+{ord(c):04X} in a string")
            elif state == _ESCAPE:
                self.chunks.append(piece[i])
                self.examined += 1
                i += 1
                self.state = _STRING
            elif state == _NUMBER_IN:
                j = _NUMBER_RUN.match(piece, i).end()  # type: ignore[union-attr]
                if j > i:
                    self.chunks.append(piece[i:j])
                self.examined += j - i
                if j == n:
                    return
                self._number_end()  # the character at j ends it, and is read next as what follows
                i = j
            elif state == _LITERAL:
                c = piece[i]
                self.examined += 1
                written = len(self.chunks)
                if c != self.literal[written]:
                    raise NotJSON(f"no JSON literal {self.literal!r}")
                self.chunks.append(c)
                i += 1
                if written + 1 == len(self.literal):
                    self.chunks = []
                    self._put(_LITERALS[self.literal[0]][1])
            else:
                j = _BLANKS.match(piece, i).end()  # type: ignore[union-attr]
                self.examined += j - i + (j < n)
                if j == n:
                    return
                i = j + 1 if self._structural(piece[j]) else j

    def _structural(self, c: str) -> bool:
        """Read `c` outside any scalar; whether it was consumed (a scalar's first character is
        read again in the scalar's state)."""
        state = self.state
        if state in (_VALUE, _VALUE_OR_CLOSE):
            if c == "]" and state == _VALUE_OR_CLOSE:
                self._close()
            elif c == "{":
                self._open({})
            elif c == "[":
                self._open([])
            elif c == '"':
                self.state, self.is_key = _STRING, False
            elif c == "-" or "0" <= c <= "9":
                self.state = _NUMBER_IN
                return False
            elif c in _LITERALS:
                self.state, self.literal = _LITERAL, _LITERALS[c][0]
                return False
            else:
                raise NotJSON(f"unexpected {c!r} where a value begins")
        elif state in (_KEY, _KEY_OR_CLOSE):
            if c == '"':
                self.state, self.is_key = _STRING, True
            elif c == "}" and state == _KEY_OR_CLOSE:
                self._close()
            else:
                raise NotJSON(f"expected a key, not {c!r}")
        elif state == _COLON:
            if c != ":":
                raise NotJSON(f"expected ':' after a key, not {c!r}")
            self.state = _VALUE
        elif state == _AFTER:
            top = self.stack[-1]
            if c == ",":
                self.state = _KEY if isinstance(top, dict) else _VALUE
            elif c == ("}" if isinstance(top, dict) else "]"):
                self._close()
            else:
                raise NotJSON(f"expected ',' or the container's close, not {c!r}")
        else:
            raise NotJSON(f"text after the document: {c!r}")
        return True

    def _string_end(self) -> None:
        try:
            text, _ = _scan_string("".join(self.chunks) + '"', 0)
        except json.JSONDecodeError as exc:
            raise NotJSON(exc.msg) from None
        self.chunks = []
        if self.is_key:
            self.key, self.state = text, _COLON
        else:
            self._put(text)

    def _number_end(self) -> None:
        text = "".join(self.chunks)
        self.chunks = []
        if _NUMBER.fullmatch(text) is None:
            raise NotJSON(f"no JSON number {text[:40]!r}")
        longest = max(len(run) for run in _DIGIT_RUNS.findall(text))
        if longest > max_digits():
            raise NotJSON(f"holds a number of {longest} digits; at most {max_digits()} are read")
        self._put(json.loads(text))

    def _put(self, value: Any) -> None:
        """A complete scalar or a container just opened, as the next value."""
        if not self.stack:
            self.root = value
            self.changed = True
            self.state = _END
            return
        parent = self.stack[-1]
        if isinstance(parent, list):
            parent.append(value)
            self.changed = True
        else:
            earlier = parent.get(self.key, NO_VALUE)  # a key written again: its new value replaces
            if not (type(earlier) is type(value) and earlier == value):
                self.changed = True
            parent[self.key] = value
        self.state = _AFTER

    def _open(self, container: dict[str, Any] | list[Any]) -> None:
        if len(self.stack) == MAX_NESTING:
            raise NotJSON(too_deep(MAX_NESTING + 1))
        slot = self.key if self.stack and isinstance(self.stack[-1], dict) else None
        self._put(container)
        self.stack.append(container)
        self.slots.append(slot)
        self.state = _KEY_OR_CLOSE if isinstance(container, dict) else _VALUE_OR_CLOSE

    def _close(self) -> None:
        self.stack.pop()
        self.slots.pop()
        self.state = _AFTER if self.stack else _END

    def copy_cost(self) -> int:
        """The entries `value()` copies now: those of the open containers (bounded in number)."""
        return sum(len(c) for c in self.stack) + len(self.stack)

    def value(self) -> Any:
        """The partial value so far (`NO_VALUE` before any of it is certain): the open
        containers copied, what is closed shared (it never changes again)."""
        self.changed = False
        if not self.stack:
            return self.root
        self.copied += self.copy_cost()
        inner: Any = None
        for depth in range(len(self.stack) - 1, -1, -1):
            copy = self.stack[depth].copy()
            if inner is not None:
                slot = self.slots[depth + 1]
                if isinstance(copy, list):
                    copy[-1] = inner
                else:
                    copy[slot] = inner
            inner = copy
        return inner


COPY_PER_CHARACTER = 32
"""Entries a partial value may copy per character read since the last one was shown: the
rate that keeps copying linear in the answer while a small value is shown at every change."""


class Partials:
    """The partial values of one answer as its pieces arrive: `add(piece)` gives the next one
    to show, or `NO_VALUE`. One is shown where the value grew since the last shown, `show`
    allows it (a predicate on the value so far), and the characters read since pay for its
    copy (`COPY_PER_CHARACTER`). A text that is no JSON prefix (or past the bounds) shows
    nothing more: the whole answer's own check says what is wrong."""

    def __init__(self) -> None:
        self.reader = PartialJSON()
        self.credit = 0
        self.readable = True

    def add(self, piece: str, show: Callable[[Any], bool] | None = None) -> Any:
        if not self.readable:
            return NO_VALUE
        try:
            self.reader.feed(piece)
        except NotJSON:  # tool calls in an envelope, a runtime that ignored the grammar, or too deep
            self.readable = False
            return NO_VALUE
        self.credit += COPY_PER_CHARACTER * len(piece)
        reader = self.reader
        if not reader.changed:
            return NO_VALUE
        cost = reader.copy_cost()
        if cost > self.credit:
            return NO_VALUE  # shown once more characters have paid for it
        if show is not None and not show(reader.root):
            return NO_VALUE
        self.credit -= cost
        return reader.value()


def consistent(partial: Any, final: Any) -> bool:
    """Whether `partial` is a prefix-consistent view of `final`: every key it holds is the
    final value's, with a consistent value; every list no longer than the final one, item by
    item consistent; every scalar equal, of the same type. Walked without recursion."""
    todo = [(partial, final)]
    while todo:
        p, f = todo.pop()
        if isinstance(p, dict):
            if not isinstance(f, dict) or any(k not in f for k in p):
                return False
            todo.extend((v, f[k]) for k, v in p.items())
        elif isinstance(p, list):
            if not isinstance(f, list) or len(p) > len(f):
                return False
            todo.extend(zip(p, f))
        elif type(p) is not type(f) or p != f:
            return False
    return True


def may_be_call(value: Any, tool_names: Collection[str]) -> bool:
    """Whether a partial JSON value may still be a tool call (`{"name": <a tool>, "arguments":
    ...}`) or a list of them, rather than the final output: the two are told apart by the keys
    written so far."""
    while isinstance(value, list):
        if not value:
            return True
        value = value[0]
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
    shown while the turn may still be a tool call, or while it is reasoning (the span is
    searched as it arrives, each character once)."""

    def __init__(self, step: int, reasoning: ReasoningSpan | None, tool_names: Collection[str]):
        self.step = step
        self.reasoning = reasoning
        self.tool_names = tool_names
        self.partials = Partials()
        self.head: str | None = ""  # the start, until it shows whether the turn opens with reasoning
        self.thinking = False  # inside the reasoning span: `head` holds its last characters

    def add(self, piece: str) -> PartialOutput | None:
        span = self.reasoning
        if span is not None:
            piece = self._past_reasoning(span, piece)
            if not piece:
                return None
        value = self.partials.add(piece, lambda v: not may_be_call(v, self.tool_names))
        return None if value is NO_VALUE else PartialOutput(self.step, value)

    def _past_reasoning(self, span: ReasoningSpan, piece: str) -> str:
        """What of `piece` follows the reasoning span ("" while the span may still be open)."""
        if self.head is None:
            return piece
        text = self.head + piece
        if not self.thinking:
            if span.open.startswith(text):
                self.head = text
                return ""
            if not text.startswith(span.open):
                self.head = None
                return text
            self.thinking, text = True, text[len(span.open):]
        end = text.find(span.close)
        if end < 0:
            self.head = text[max(0, len(text) - len(span.close) + 1):]  # where the close may begin
            return ""
        self.head = None
        return text[end + len(span.close):]

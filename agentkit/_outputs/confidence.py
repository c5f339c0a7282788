"""How sure the model was of each value it wrote: token scores gathered per JSON leaf.

A runtime asked for `scores` returns one `TokenScore` per token (its probability under the
model, the mass the grammar's mask removed). Here the answer's JSON is read with the span of
every leaf value, and each leaf gets the tokens that wrote it: the tokens overlapping its text
(a string's characters, without the opening quote) and the one byte after it (a string's
closing quote, the delimiter that ends a number): where the model decided the value was over.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from runtimes import Generation, TokenScore, Usage

from .._tools.schema import escape
from .grounding import FieldGrounding

T = TypeVar("T")

_BLANK = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERALS = ("true", "false", "null")
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]
# A Python-list call as tool grammars write it: `name(key=<JSON>, ...)`.
_PY_CALL = re.compile(r"([A-Za-z_][\w.\-]*)\(", re.ASCII)
_PY_KEY = re.compile(r"[ \t\n\r]*(\w+)=")
_PY_SEPARATOR = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")


@dataclass(frozen=True)
class FieldConfidence:
    """How sure the model was of one leaf value.

    `probability`: the value's probability under the model, the product over the tokens that
    wrote it (from the model's whole distribution, before the grammar's mask).
    `min_token_probability`: its least likely token's. `masked_mass`: the chance that, sampling
    freely, at least one of those steps would have left the grammar (1 − ∏(1 − removed mass));
    None where the runtime cannot tell (a server's logprobs). `tokens`: how many tokens.
    """

    probability: float
    min_token_probability: float
    masked_mass: float | None
    tokens: int


@dataclass(frozen=True)
class Extraction(Generic[T]):
    """What `extract(T, text, details=True)` or `confidence=True` returns: the typed `value`,
    the JSON the model wrote (`text`), the tokens the whole extraction spent (`usage`, every
    correction included), and with `confidence=True` in `fields` a `FieldConfidence` for every
    leaf of the JSON by JSON pointer (`/name`, `/tags/0`; `""` for a value that is itself a
    leaf). `fields` is None where there are no scores (not asked for, or the runtime gave
    none), and `missing` then says why. `grounding` holds a `FieldGrounding` for each field
    `grounded=` held (or asked to hold) to the text: empty where none was."""

    value: T
    fields: dict[str, FieldConfidence] | None
    text: str
    missing: str | None = None
    usage: Usage = field(default_factory=Usage)
    grounding: tuple[FieldGrounding, ...] = ()

    def doubtful(self, below: float = 0.5) -> list[str]:
        """The pointers of the leaves whose probability is under `below`, least sure first:
        the fields to send to a person or a retry."""
        if self.fields is None:
            return []
        weak = [(c.probability, p) for p, c in self.fields.items() if c.probability < below]
        return [p for _, p in sorted(weak)]


@dataclass(frozen=True)
class Leaf:
    """A leaf value of a JSON text: its pointer and the characters `[start, end)` that spell it."""

    pointer: str
    start: int
    end: int
    string: bool


def json_leaves(text: str, start: int = 0) -> tuple[list[Leaf], int]:
    """The leaves of the JSON value at `text[start:]` (blanks before it skipped) and where the
    value ends. Empty objects and arrays are leaves. ValueError where no JSON value is there."""
    leaves: list[Leaf] = []
    end = _value(text, _BLANK.match(text, start).end(), "", leaves)  # type: ignore[union-attr]
    return leaves, end


def _value(text: str, at: int, pointer: str, leaves: list[Leaf]) -> int:
    char = text[at : at + 1]
    if char == '"':
        _, end = _scan_string(text, at + 1)
        leaves.append(Leaf(pointer, at, end, True))
        return end
    if char in ("{", "["):
        return _container(text, at, pointer, leaves)
    found = _NUMBER.match(text, at)
    if found is not None:
        leaves.append(Leaf(pointer, at, found.end(), False))
        return found.end()
    for literal in _LITERALS:
        if text.startswith(literal, at):
            leaves.append(Leaf(pointer, at, at + len(literal), False))
            return at + len(literal)
    raise ValueError(f"no JSON value at offset {at}")


def _container(text: str, at: int, pointer: str, leaves: list[Leaf]) -> int:
    close = "}" if text[at] == "{" else "]"
    pos = _BLANK.match(text, at + 1).end()  # type: ignore[union-attr]
    if text.startswith(close, pos):
        leaves.append(Leaf(pointer, at, pos + 1, False))
        return pos + 1
    for index in itertools.count():
        if close == "}":
            key, pos = _scan_string(text, pos + 1)
            pos = _BLANK.match(text, pos).end()  # type: ignore[union-attr]
            if not text.startswith(":", pos):
                raise ValueError(f"expected ':' at offset {pos}")
            pos = _BLANK.match(text, pos + 1).end()  # type: ignore[union-attr]
            child = f"{pointer}/{escape(key)}"
        else:
            child = f"{pointer}/{index}"
        pos = _BLANK.match(text, _value(text, pos, child, leaves)).end()  # type: ignore[union-attr]
        if text.startswith(close, pos):
            return pos + 1
        if not text.startswith(",", pos):
            raise ValueError(f"expected ',' or {close!r} at offset {pos}")
        pos = _BLANK.match(text, pos + 1).end()  # type: ignore[union-attr]
    raise AssertionError("unreachable")


class TokenSpans:
    """The tokens of a generation as byte ranges of its text, to find the ones a span overlaps."""

    def __init__(self, text: str, scores: Sequence[TokenScore]):
        data = text.encode("utf-8")
        if not all(isinstance(s, TokenScore) and isinstance(s.bytes, bytes) for s in scores):
            raise ValueError("the token scores are not TokenScores of bytes")
        if b"".join(s.bytes for s in scores) != data:
            raise ValueError("the token scores do not spell the answer's text")
        self.text = text
        self.scores = [checked(i, score) for i, score in enumerate(scores)]
        self._ends = list(itertools.accumulate(len(s.bytes) for s in scores))
        # Byte offset of each character (text with non-ASCII characters only).
        self._bytes = None if text.isascii() else [0, *itertools.accumulate(len(c.encode("utf-8")) for c in text)]

    def _byte(self, char: int) -> int:
        return char if self._bytes is None else self._bytes[char]

    def over(self, start: int, end: int) -> list[TokenScore]:
        """The tokens that overlap the characters `[start, end)`."""
        first, last = self._byte(start), self._byte(end)
        i = bisect.bisect_right(self._ends, first)
        chosen = []
        while i < len(self.scores) and (self._ends[i] - len(self.scores[i].bytes)) < last:
            chosen.append(self.scores[i])
            i += 1
        return chosen

    def confidence(self, leaf: Leaf) -> FieldConfidence:
        """The leaf's tokens: its text (a string's characters and closing quote) and the byte after."""
        start = leaf.start + 1 if leaf.string and leaf.end - leaf.start > 2 else leaf.start
        end = min(leaf.end + (0 if leaf.string else 1), len(self.text))
        return combine(self.over(start, end))


# How far above 0 a log-probability (or outside [0, 1] a masked mass) may come out of a runtime's
# float arithmetic (a logit minus the log-sum) and still be read as rounding, clamped.
_ROUNDING = 1e-6


def checked(index: int, score: TokenScore) -> TokenScore:
    """`score` with a logprob that is a float of at most 0 and a masked mass in [0, 1] (or
    None); ValueError where the runtime gave other numbers (a logprob of 1000, NaN), so that
    no confidence is made of them. A logprob below a float's range is -inf."""
    logprob, mass = score.logprob, score.masked_mass
    if isinstance(logprob, bool) or not isinstance(logprob, numbers.Real):
        raise ValueError(f"token {index}'s logprob is {type(logprob).__name__}, not a number")
    try:
        value = float(logprob)
    except OverflowError:
        value = -math.inf if logprob < 0 else math.inf
    if math.isnan(value) or value > _ROUNDING:
        raise ValueError(f"token {index}'s logprob {value:g} is not a log-probability (a number at most 0)")
    if mass is not None:
        if isinstance(mass, bool) or not isinstance(mass, numbers.Real) or not -_ROUNDING <= mass <= 1 + _ROUNDING:
            raise ValueError(f"token {index}'s masked mass is not a probability (a number from 0 to 1)")
        mass = min(1.0, max(0.0, float(mass)))
    return TokenScore(score.bytes, min(0.0, value), mass)


def combine(scores: Sequence[TokenScore]) -> FieldConfidence:
    """One value's confidence from the scores of the tokens that wrote it."""
    if not scores:
        raise ValueError("a value written by no token")
    total = sum(s.logprob for s in scores)
    least = min(s.logprob for s in scores)
    masses = [s.masked_mass for s in scores]
    masked = None if any(m is None for m in masses) else 1.0 - math.prod(1.0 - m for m in masses)  # type: ignore[operator]
    return FieldConfidence(math.exp(total), math.exp(least), masked, len(scores))


def field_confidences(generation: Generation) -> dict[str, FieldConfidence]:
    """Per leaf of the JSON value `generation.text` holds, how sure the model was of it."""
    if generation.token_scores is None:
        raise ValueError("the generation has no token scores")
    spans = TokenSpans(generation.text, generation.token_scores)
    leaves, _ = json_leaves(generation.text)
    return {leaf.pointer: spans.confidence(leaf) for leaf in leaves}


def no_scores_reason(runtime_name: str) -> str:
    return (f"runtime {runtime_name!r} gave no token scores (it has no logits to read them from, "
            "or the server returned no logprobs)")


def call_argument_confidences(generation: Generation, calls: Sequence[Any]) -> list[dict[str, FieldConfidence]] | None:
    """Per call of a turn, its arguments' leaves by pointer inside the arguments: calls written
    as JSON (`{"name": ..., "arguments": {...}}`, alone, in a list, a fence or tags) or as a
    Python list (`[f(a=1), g(b="x")]`); None where the text does not hold exactly those calls."""
    if generation.token_scores is None:
        return None
    try:
        spans = TokenSpans(generation.text, generation.token_scores)
    except ValueError:
        return None
    found = _json_calls(generation.text, spans, len(calls))
    if found is None:
        found = _python_calls(generation.text, spans, [c.name for c in calls])
    return found


def _python_calls(text: str, spans: TokenSpans, names: list[str]) -> list[dict[str, FieldConfidence]] | None:
    """The arguments of `names`' calls, in order, written as Python calls with JSON values."""
    found: list[dict[str, FieldConfidence]] = []
    pos = 0
    for name in names:
        call = _PY_CALL.search(text, pos)
        while call is not None and call.group(1) != name:
            call = _PY_CALL.search(text, call.end())
        if call is None:
            return None
        pos = call.end()
        fields: dict[str, FieldConfidence] = {}
        while not text.startswith(")", pos):
            if fields:
                separator = _PY_SEPARATOR.match(text, pos)
                if separator is None:
                    return None
                pos = separator.end()
            key = _PY_KEY.match(text, pos)
            if key is None:
                return None
            try:
                leaves, pos = json_leaves(text, key.end())
            except ValueError:
                return None
            fields.update((f"/{escape(key.group(1))}{leaf.pointer}", spans.confidence(leaf)) for leaf in leaves)
            pos = _BLANK.match(text, pos).end()  # type: ignore[union-attr]
        found.append(fields)
        pos += 1
    return found


def _json_calls(text: str, spans: TokenSpans, count: int) -> list[dict[str, FieldConfidence]] | None:
    """The arguments of the first `count` calls written as JSON objects."""
    found: list[dict[str, FieldConfidence]] = []
    pos = 0
    while len(found) < count:
        opening = min((i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0), default=-1)
        if opening < 0:
            return None
        try:
            leaves, end = json_leaves(text, opening)
            value = json.loads(text[opening:end])
        except ValueError:
            pos = opening + 1
            continue
        pos = end
        objects = value if isinstance(value, list) else [value]
        if not all(isinstance(one, dict) and set(one) == {"name", "arguments"} for one in objects):
            continue  # JSON that holds no call (in text or reasoning before the calls)
        prefixes = [f"/{i}" for i in range(len(objects))] if isinstance(value, list) else [""]
        for prefix in prefixes:
            inside = f"{prefix}/arguments"
            found.append({
                leaf.pointer[len(inside):]: spans.confidence(leaf)
                for leaf in leaves
                if leaf.pointer == inside or leaf.pointer.startswith(inside + "/")
            })
    return found if len(found) == count else None

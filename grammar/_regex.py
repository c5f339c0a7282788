"""Regular expressions (the syntax of JSON Schema `pattern`) compiled to grammar IR.

The meaning is Python's `re` on `str`, because that is what the `jsonschema` validator runs:
`\\d`, `\\w` and `\\s` are Unicode-aware, `.` is anything but a newline, `$` matches at the end
or before a final newline, `\\Z` only at the end. Python decides which patterns are valid (every
pattern goes through `re.compile` first); this module decides what the valid ones mean, and
refuses, with a `CompileError`, what the IR cannot state exactly: lookaround, backreferences,
conditionals, atomic groups, possessive repeats, word boundaries and inline flags.

Anchors are handled exactly, wherever they stand. Every sub-expression is read as a small set of
*variants*: a language of matched texts together with what the match demands of its
surroundings (nothing, or to start the string; nothing, to end it, or to end it up to one final
newline). Concatenation combines the demands, so `a?^b`, `(^|,)x` or `a$\\n?` mean exactly what
`re.search` makes of them.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import warnings

from ._errors import CompileError, LimitError
from ._grammar import Grammar
from ._ir.ranges import complement
from ._ir import (
    ANY_CHAR,
    EMPTY,
    MAX_CODE_POINT,
    NOTHING,
    Alt,
    Chars,
    Lit,
    Node,
    Repeat,
    Seq,
    alt,
    chars,
    lit,
    negate,
    one_char_ranges,
    opt,
    repeat,
    seq,
    star,
)

MAX_EXPANDED_SIZE = 10_000
"""Code-point positions a pattern may spell out once counted repeats are unrolled."""

MAX_NESTING = 100
"""Groups nested inside one another."""

MAX_ANCHORED_REPEAT = 8
"""The largest count a repeat of a group holding an anchor (`(^|x){0,3}`) may take."""

# What a match demands of the text before it, and after it.
_START_ANY, _START_BOS = 0, 1
_END_ANY, _END_EOS, _END_DOLLAR = 0, 1, 2

Variants = dict[tuple[int, int], Node]

_EMPTY_VARIANTS: Variants = {(_START_ANY, _END_ANY): EMPTY}

_SIMPLE_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"


# --- public entry points ----------------------------------------------------------------


def regex_node(pattern: str, *, pointer: str = "") -> Node:
    """The strings `s` for which `re.search(pattern, s)` finds a match, as one IR node."""
    variants = _variants(pattern, pointer)
    any_text = star(ANY_CHAR)
    after = {_END_ANY: any_text, _END_EOS: EMPTY, _END_DOLLAR: opt(lit("\n"))}
    parts = []
    for (start, end), body in variants:
        if (start, end) == (_START_ANY, _END_ANY) and _matches(body, ""):
            return any_text  # an empty match anywhere: every string matches
        parts.append(_searched(body, start == _START_ANY, after[end]))
    return alt(*parts)


def _searched(body: Node, free_start: bool, after: Node) -> Node:
    """`body` with any text before it (`free_start`) and `after` it, in the form an automaton
    reads with fewest configurations: a repeat beside any text needs only its fewest copies
    (`x{1,9}` then anything is `x` then anything), and one character class found anywhere is
    found at its first occurrence (`[a-z]+` searched is `[^a-z]*[a-z]` then anything), so
    reading a text keeps one place in the pattern rather than one per position a match could
    start at. The same language; a length bound over it then counts one way through."""
    free_end = after == star(ANY_CHAR)
    items = list(body.items) if isinstance(body, Seq) else [body]
    if free_end and items and isinstance(items[-1], Repeat):
        items[-1] = repeat(items[-1].item, items[-1].min, items[-1].min)
    if free_start and items and isinstance(items[0], Repeat):
        items[0] = repeat(items[0].item, items[0].min, items[0].min)
    core = seq(*items)
    ranges = one_char_ranges(core)
    if free_start and free_end and ranges is not None:
        return seq(star(negate(ranges)), core, after)
    return seq(star(ANY_CHAR) if free_start else EMPTY, core, after)


def from_regex(pattern: str) -> Grammar:
    """A grammar of the strings `pattern` matches whole (`re.fullmatch`), for raw text output."""
    body = alt(*(node for _, node in _variants(pattern, None)))
    return Grammar({"root": body}, source=f"regex {pattern!r}")


def _variants(pattern: str, pointer: str | None) -> tuple[tuple[tuple[int, int], Node], ...]:
    try:
        return _compiled(pattern)
    except CompileError as err:
        raise type(err)(err.reason, keyword="pattern", pointer=pointer) from None


@functools.lru_cache(maxsize=2048)
def _compiled(pattern: str) -> tuple[tuple[tuple[int, int], Node], ...]:
    check_pattern(pattern)
    variants = _Parser(pattern).parse()
    size = sum(_expanded_size(node) for node in variants.values())
    if size > MAX_EXPANDED_SIZE:
        raise LimitError(
            f"pattern {pattern!r} spells out {size} positions once its counted repeats are "
            f"unrolled; the limit is {MAX_EXPANDED_SIZE}"
        )
    return tuple(variants.items())


def check_pattern(pattern: str) -> None:
    """A `CompileError` unless Python's `re` takes `pattern` (`LimitError` past MAX_NESTING groups)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Python's parser recurses per group, so the bound on nesting comes first.
        if _group_depth(pattern) > MAX_NESTING:
            raise LimitError(f"groups nested more than {MAX_NESTING} deep in {pattern!r}")
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError, ValueError) as err:
            raise CompileError(f"pattern {pattern!r} is not a valid regular expression: {err}") from None


def _group_depth(pattern: str) -> int:
    """How deep `pattern`'s groups nest, read in one pass (escapes and classes skipped)."""
    depth = deepest = 0
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a class: `]` right after `[` or `[^` is a member, not its end
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth -= 1
        i += 1
    return deepest


def _expanded_size(node: Node) -> int:
    if isinstance(node, Lit):
        return len(node.text)
    if isinstance(node, Chars):
        return 1
    if isinstance(node, (Seq, Alt)):
        return sum(_expanded_size(item) for item in node.items)
    if isinstance(node, Repeat):
        count = node.max if node.max is not None else max(node.min, 1)
        return _expanded_size(node.item) * count
    return 1


# --- Python's Unicode classes -------------------------------------------------------------


@functools.cache
def _category(name: str) -> tuple[tuple[int, int], ...]:
    """The code points `\\d`, `\\w` or `\\s` matches in a `str` pattern, as sorted ranges.

    Derived from the same predicates `re` uses: `str.isdecimal` for digits, `str.isalnum` or
    `_` for word characters, `str.isspace` for whitespace.
    """
    test = {
        "digit": str.isdecimal,
        "word": lambda c: c.isalnum() or c == "_",
        "space": str.isspace,
    }[name]
    ranges: list[tuple[int, int]] = []
    start = -1
    for cp in range(MAX_CODE_POINT + 2):
        member = cp <= MAX_CODE_POINT and test(chr(cp))
        if member and start < 0:
            start = cp
        elif not member and start >= 0:
            ranges.append((start, cp - 1))
            start = -1
    return tuple(ranges)


_CLASS_ESCAPES = {
    "d": lambda: list(_category("digit")),
    "D": lambda: complement(_category("digit")),
    "w": lambda: list(_category("word")),
    "W": lambda: complement(_category("word")),
    "s": lambda: list(_category("space")),
    "S": lambda: complement(_category("space")),
}


# --- variant algebra ------------------------------------------------------------------------


def _add(out: Variants, key: tuple[int, int], node: Node) -> None:
    if node == NOTHING:
        return
    out[key] = alt(out[key], node) if key in out else node


def _union(*parts: Variants) -> Variants:
    out: Variants = {}
    for part in parts:
        for key, node in part.items():
            _add(out, key, node)
    return out


def _concat(xs: Variants, ys: Variants) -> Variants:
    """`xs` then `ys`, with each side's demands on its surroundings checked against the other."""
    out: Variants = {}
    for (x_start, x_end), x_text in xs.items():
        for (y_start, y_end), y_text in ys.items():
            start, left = x_start, x_text
            if y_start == _START_BOS:
                # `ys` must start the string: everything before it matched nothing.
                if not _matches(left, ""):
                    continue
                start, left = _START_BOS, EMPTY
            if x_end == _END_ANY:
                _add(out, (start, y_end), seq(left, y_text))
            elif x_end == _END_EOS:
                if _matches(y_text, ""):
                    _add(out, (start, _END_EOS), left)
            else:  # `$`: what follows is "" or a final "\n"
                if _matches(y_text, ""):
                    _add(out, (start, _END_EOS if y_end == _END_EOS else _END_DOLLAR), left)
                if _matches(y_text, "\n"):
                    _add(out, (start, _END_EOS), seq(left, lit("\n")))
    return out


def _repeat(xs: Variants, low: int, high: int | None, at: int, pattern: str) -> Variants:
    free_key = (_START_ANY, _END_ANY)
    if set(xs) <= {free_key}:
        return {free_key: _repeat_free(xs.get(free_key, NOTHING), low, high)}
    if low > MAX_ANCHORED_REPEAT or (high is not None and high > MAX_ANCHORED_REPEAT):
        raise CompileError(
            f"a group holding an anchor is repeated more than {MAX_ANCHORED_REPEAT} times at "
            f"offset {at} of {pattern!r}"
        )
    optional = _union(_EMPTY_VARIANTS, xs)
    out = _EMPTY_VARIANTS
    for _ in range(low):
        out = _concat(out, xs)
    if high is not None:
        for _ in range(high - low):
            out = _concat(out, optional)
        return out
    # Any run of iterations reduces to: up to two that start the string (or demand of its
    # end with an empty match), anchor-free iterations, then up to three that end it.
    free_run = {free_key: star(xs.get(free_key, NOTHING))}
    for part in (optional, optional, free_run, optional, optional, optional):
        out = _concat(out, part)
    return out


def _repeat_free(item: Node, low: int, high: int | None) -> Node:
    """`item{low,high}`, with `(x{a,}){b,c}` written `x{a*b,}`: the same language, and not
    the ambiguity that makes `(a+)+` costly for every consumer."""
    if isinstance(item, Repeat) and item.max is None and (low >= 1 or item.min <= 1):
        return repeat(item.item, item.min * low, None)
    return repeat(item, low, high)


def _matches(node: Node, text: str) -> bool:
    """Whether an anchor-free node (no references) matches all of a short `text`."""
    return len(text) in _ends(node, text, frozenset({0}))


def _ends(node: Node, text: str, starts: frozenset[int]) -> frozenset[int]:
    if not starts:
        return starts
    if isinstance(node, Lit):
        n = len(node.text)
        return frozenset(i + n for i in starts if text.startswith(node.text, i))
    if isinstance(node, Chars):
        return frozenset(i + 1 for i in starts if i < len(text) and ord(text[i]) in node)
    if isinstance(node, Seq):
        for item in node.items:
            starts = _ends(item, text, starts)
        return starts
    if isinstance(node, Alt):
        return frozenset().union(*(_ends(item, text, starts) for item in node.items))
    if isinstance(node, Repeat):
        current = starts
        for _ in range(node.min):
            following = _ends(node.item, text, current)
            if following == current:
                break
            current = following
        reached, frontier, count = current, current, node.min
        while frontier and (node.max is None or count < node.max):
            frontier = _ends(node.item, text, frontier) - reached
            reached |= frontier
            count += 1
        return reached
    raise TypeError(f"unexpected node in a regular expression: {node!r}")


# --- the parser -----------------------------------------------------------------------------


class _Parser:
    """Recursive descent over the pattern, following `re`'s own parser decision by decision."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.pos = 0
        self.depth = 0

    def error(self, message: str, at: int | None = None) -> CompileError:
        at = self.pos if at is None else at
        return CompileError(f"{message} at offset {at} of {self.pattern!r}")

    def peek(self, ahead: int = 0) -> str | None:
        i = self.pos + ahead
        return self.pattern[i] if i < len(self.pattern) else None

    def take(self) -> str:
        c = self.pattern[self.pos]
        self.pos += 1
        return c

    def parse(self) -> Variants:
        variants = self.alternation()
        if self.pos != len(self.pattern):
            raise self.error("unbalanced ')'")
        return variants

    def alternation(self) -> Variants:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.sequence())
        return _union(*branches)

    def sequence(self) -> Variants:
        done: Variants = _EMPTY_VARIANTS
        last: Variants | None = None
        while (c := self.peek()) is not None and c not in "|)":
            start = self.pos
            count = self.quantifier()
            if count is not None:
                if last is None:
                    raise self.error("nothing to repeat", start)
                last = _repeat(last, count[0], count[1], start, self.pattern)
                continue
            atom = self.atom()
            if atom is None:  # a comment group
                continue
            if last is not None:
                done = _concat(done, last)
            last = atom
        return done if last is None else _concat(done, last)

    def quantifier(self) -> tuple[int, int | None] | None:
        start = self.pos
        c = self.peek()
        if c == "?":
            low, high = 0, 1
        elif c == "*":
            low, high = 0, None
        elif c == "+":
            low, high = 1, None
        elif c == "{":
            counted = self.counted()
            if counted is None:
                return None
            low, high = counted
        else:
            return None
        if c != "{":
            self.pos += 1
        if self.peek() == "?":  # lazy: the same language
            self.pos += 1
        elif self.peek() == "+":
            raise CompileError(
                f"possessive repeats are not supported (offset {start} of {self.pattern!r})"
            )
        return low, high

    def counted(self) -> tuple[int, int | None] | None:
        """`{m}`, `{m,}`, `{,n}`, `{m,n}`, or None where `re` reads the brace as a literal."""
        i = self.pos + 1
        p = self.pattern
        lo_start = i
        while i < len(p) and p[i].isdigit() and p[i].isascii():
            i += 1
        lo = p[lo_start:i]
        if i < len(p) and p[i] == ",":
            i += 1
            hi_start = i
            while i < len(p) and p[i].isdigit() and p[i].isascii():
                i += 1
            hi = p[hi_start:i]
        else:
            hi = lo
        if i >= len(p) or p[i] != "}" or p[self.pos + 1] == "}":
            return None
        self.pos = i + 1
        return (int(lo) if lo else 0), (int(hi) if hi else None)

    def atom(self) -> Variants | None:
        c = self.take()
        if c == "(":
            return self.group()
        if c == "[":
            return _free(self.char_class())
        if c == ".":
            return _free(negate([(10, 10)]))
        if c == "^":
            return {(_START_BOS, _END_ANY): EMPTY}
        if c == "$":
            return {(_START_ANY, _END_DOLLAR): EMPTY}
        if c == "\\":
            return self.escape()
        return _free(chars([(ord(c), ord(c))]))

    def group(self) -> Variants | None:
        start = self.pos - 1
        if self.peek() == "?":
            self.pos += 1
            kind = self.take()
            if kind == "#":
                while self.take() != ")":
                    pass
                return None
            if kind == "P" and self.peek() == "<":
                self.pos = self.pattern.index(">", self.pos) + 1
            elif kind == "P":
                raise self.error("backreferences are not supported", start)
            elif kind in "=!" or (kind == "<" and self.peek() in ("=", "!")):
                raise self.error("lookaround assertions are not supported", start)
            elif kind == "(":
                raise self.error("conditional groups are not supported", start)
            elif kind == ">":
                raise self.error("atomic groups are not supported", start)
            elif kind != ":":
                raise self.error("inline flags are not supported", start)
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise LimitError(f"groups nested more than {MAX_NESTING} deep in {self.pattern!r}")
        inner = self.alternation()
        self.depth -= 1
        if self.peek() != ")":
            raise self.error("missing ')'", start)
        self.pos += 1
        return inner

    def escape(self) -> Variants:
        start = self.pos - 1
        c = self.take()
        if c == "A":
            return {(_START_BOS, _END_ANY): EMPTY}
        if c == "Z":
            return {(_START_ANY, _END_EOS): EMPTY}
        if c in "bB":
            raise self.error("word boundaries (\\b, \\B) are not supported", start)
        if c in _CLASS_ESCAPES:
            return _free(chars(_CLASS_ESCAPES[c]()))
        if c == "0":
            return _free(self.code_point(int("0" + self.take_while(_OCTAL, 2), 8)))
        if c.isdigit() and c.isascii():
            digits = c
            if (d := self.peek()) is not None and d.isdigit() and d.isascii():
                digits += self.take()
                if c in _OCTAL and digits[1] in _OCTAL and (self.peek() or "x") in _OCTAL:
                    return _free(self.code_point(int(digits + self.take(), 8)))
            raise self.error("backreferences are not supported", start)
        return _free(self.code_point(self.literal_escape(c)))

    def take_while(self, allowed: str, most: int) -> str:
        out = ""
        while len(out) < most and (c := self.peek()) is not None and c in allowed:
            out += self.take()
        return out

    def literal_escape(self, c: str) -> int:
        """The code point of a one-character escape that stands for itself or a named char."""
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        width = {"x": 2, "u": 4, "U": 8}.get(c)
        if width is not None:
            return int(self.take_while(_HEX, width), 16)
        if c == "N":
            end = self.pattern.index("}", self.pos)
            name = self.pattern[self.pos + 1 : end]
            self.pos = end + 1
            return ord(unicodedata.lookup(name))
        return ord(c)

    def code_point(self, cp: int) -> Node:
        # A surrogate has no UTF-8 form: no text the grammar produces can hold one.
        return chars([(cp, cp)])

    def char_class(self) -> Node:
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            c = self.take()
            if c == "]" and not first:
                break
            first = False
            low = self.class_item(c)
            if self.peek() == "-":
                self.pos += 1
                d = self.take()
                if d == "]":
                    ranges.extend(low)
                    ranges.append((45, 45))
                    break
                high = self.class_item(d)
                ranges.append((low[0][0], high[0][0]))
            else:
                ranges.extend(low)
        return negate(ranges) if negated else chars(ranges)

    def class_item(self, c: str) -> list[tuple[int, int]]:
        if c != "\\":
            return [(ord(c), ord(c))]
        e = self.take()
        if e in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[e]()
        if e == "b":
            return [(8, 8)]
        if e in _OCTAL:
            cp = int(e + self.take_while(_OCTAL, 2), 8)
            return [(cp, cp)]
        cp = self.literal_escape(e)
        return [(cp, cp)]


def _free(node: Node) -> Variants:
    return {(_START_ANY, _END_ANY): node}

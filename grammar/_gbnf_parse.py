"""GBNF, llama.cpp's grammar text, read into a `Grammar` and checked.

The parser reads llama.cpp's dialect as llama.cpp reads it (where newlines may stand, what an
escape means, how far a quantifier reaches), and refuses what llama.cpp refuses or cannot run:
undefined rules, a missing `root`, left recursion, an unbounded repeat of something that can
match nothing, repetition counts past llama.cpp's limits. It is also stricter in two places
where llama.cpp silently does something surprising: an empty class `[]` (llama.cpp drops it)
and a rule defined twice (llama.cpp keeps the last).
"""

from __future__ import annotations

from ._errors import CompileError, LimitError
from ._grammar import Grammar
from ._ir.analysis import left_recursion, nullable, nullable_rules
from ._gbnf_render import LLAMA_REPETITION_LIMIT, rules_made
from ._ir import (
    ANY_CHAR,
    EMPTY,
    MAX_CODE_POINT,
    NOTHING,
    Node,
    Ref,
    alt,
    chars,
    lit,
    negate,
    repeat,
    seq,
)

MAX_GROUP_DEPTH = 100
"""Groups nested past this are refused: reading a group recurses, as does what walks its nodes."""


def from_gbnf(text: str) -> Grammar:
    """The grammar a GBNF text states, its start rule `root`.

    Raises `CompileError` naming the line (and column) of the first problem.
    """
    return _Parser(text).parse()


def gbnf_problem(text: str) -> str | None:
    """The first problem in a GBNF text, as a message with its line number; None if sound.

    Checks the text on its own terms, as llama.cpp would read it: balanced groups, classes and
    string literals; a rule named `root`; every reference defined; no left recursion.
    """
    try:
        _Parser(text).parse()
    except CompileError as err:
        return err.reason
    return None


well_formed = gbnf_problem
"""The earlier name of `gbnf_problem` (which says what it returns: a problem, or None)."""


def _is_word(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "-")


class _Parser:
    """A reading of GBNF that follows llama.cpp's grammar parser step by step."""

    def __init__(self, text: str):
        self.text = text
        self.rules: dict[str, Node] = {}
        self.defined_at: dict[str, int] = {}
        self.references: list[tuple[str, int]] = []
        self.unbounded: list[tuple[Node, int]] = []
        self.symbols: set[str] = set()
        self.symbol_count = 0  # llama.cpp's rule count, for its repetition limit
        self.groups_open = 0  # parenthesised groups around the current position

    # positions and errors

    def where(self, pos: int) -> str:
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return f"line {line}, column {column}"

    def error(self, pos: int, message: str) -> CompileError:
        return CompileError(f"{self.where(pos)}: {message}", keyword="gbnf")

    def at(self, pos: int) -> str:
        return self.text[pos] if pos < len(self.text) else ""

    def space(self, pos: int, newline_ok: bool) -> int:
        text = self.text
        while pos < len(text):
            c = text[pos]
            if c == "#":
                while pos < len(text) and text[pos] not in "\r\n":
                    pos += 1
            elif c in " \t" or (newline_ok and c in "\r\n"):
                pos += 1
            else:
                break
        return pos

    def symbol(self, name: str) -> None:
        if name not in self.symbols:
            self.symbols.add(name)
            self.symbol_count += 1

    # the grammar

    def parse(self) -> Grammar:
        nul = self.text.find("\x00")
        if nul >= 0:
            raise self.error(nul, "NUL character in the grammar text")
        pos = self.space(0, True)
        while pos < len(self.text):
            pos = self.rule(pos)
        for name, at in self.references:
            if name not in self.rules:
                raise self.error(at, f"undefined rule {name!r}")
        if "root" not in self.rules:
            raise CompileError(
                "no rule named 'root': the start rule must be called root", keyword="gbnf"
            )
        empty = nullable_rules(self.rules)
        for item, at in self.unbounded:
            if nullable(item, empty):
                raise self.error(
                    at,
                    "an unbounded repetition of something that can match the empty string "
                    "(llama.cpp rejects it as left recursion or loops on it)",
                )
        cycle = left_recursion(self.rules, empty)
        if cycle:
            first = min(cycle, key=lambda name: self.defined_at[name])
            raise self.error(
                self.defined_at[first],
                "left recursion (" + " -> ".join(cycle) + "), which llama.cpp rejects",
            )
        return Grammar(self.rules, "root", source="gbnf")

    def name(self, pos: int) -> int:
        end = pos
        while end < len(self.text) and _is_word(self.text[end]):
            end += 1
        if end == pos:
            found = repr(self.text[pos]) if pos < len(self.text) else "the end of the text"
            raise self.error(pos, f"expected a rule name, found {found}")
        return end

    def rule(self, start: int) -> int:
        end = self.name(start)
        name = self.text[start:end]
        self.symbol(name)
        pos = self.space(end, False)
        if not self.text.startswith("::=", pos):
            raise self.error(pos, f"expected '::=' after the rule name {name!r}")
        if name in self.rules:
            first = self.where(self.defined_at[name]).split(",")[0]
            raise self.error(start, f"rule {name!r} is defined twice (first on {first})")
        self.defined_at[name] = start
        pos = self.space(pos + 3, True)
        node, pos = self.alternates(pos, nested=False)
        self.rules[name] = node
        c = self.at(pos)
        if c == "\r":
            pos += 2 if self.at(pos + 1) == "\n" else 1
        elif c == "\n":
            pos += 1
        elif c == ")":
            raise self.error(pos, "')' closes no open group")
        elif c:
            raise self.error(pos, f"unexpected {c!r}; a rule ends at the end of its line")
        return self.space(pos, True)

    def alternates(self, pos: int, *, nested: bool) -> tuple[Node, int]:
        node, pos = self.sequence(pos, nested)
        branches = [node]
        while self.at(pos) == "|":
            pos = self.space(pos + 1, True)
            node, pos = self.sequence(pos, nested)
            branches.append(node)
        return alt(*branches), pos

    def sequence(self, pos: int, nested: bool) -> tuple[Node, int]:
        items: list[Node] = []
        last = 0  # where the item a quantifier applies to starts
        reach = 1  # llama.cpp's count of rules that item stands for
        while pos < len(self.text):
            c = self.text[pos]
            start = pos
            if c == '"':
                last, reach = len(items), 1
                node, pos = self.literal(pos)
                if node != EMPTY:
                    items.append(node)
            elif c == "[":
                last, reach = len(items), 1
                node, pos = self.char_class(pos)
                items.append(node)
            elif c in "<!":
                raise self.error(pos, "token references (<...>) are not supported")
            elif _is_word(c):
                end = self.name(pos)
                name = self.text[pos:end]
                self.symbol(name)
                self.references.append((name, pos))
                last, reach = len(items), 1
                items.append(Ref(name))
                pos = end
            elif c == "(":
                before = self.symbol_count
                self.symbol_count += 1
                if self.groups_open >= MAX_GROUP_DEPTH:
                    # Reading a group recurses, and so does everything that walks its nodes.
                    raise LimitError(f"{self.where(pos)}: groups nest deeper than {MAX_GROUP_DEPTH}", keyword="gbnf")
                self.groups_open += 1
                node, pos = self.alternates(self.space(pos + 1, True), nested=True)
                self.groups_open -= 1
                if self.at(pos) != ")":
                    raise self.error(start, "'(' is never closed")
                last, reach = len(items), max(1, self.symbol_count - before)
                items.append(node)
                pos += 1
            elif c == ".":
                last, reach = len(items), 1
                items.append(ANY_CHAR)
                pos += 1
            elif c in "*+?{":
                if last == len(items):
                    raise self.error(pos, f"{c!r} has nothing before it to repeat")
                low, high, pos = self.bounds(pos, nested)
                reach = self.repeat_items(items, last, reach, low, high, start)
                continue
            else:
                break
            pos = self.space(pos, nested)
        return seq(*items), pos

    def bounds(self, pos: int, nested: bool) -> tuple[int, int | None, int]:
        c = self.text[pos]
        if c != "{":
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
            return low, high, self.space(pos + 1, nested)
        start = pos
        pos = self.space(pos + 1, nested)
        low_text, pos = self.integer(pos)
        if low_text is None:
            raise self.error(pos, "expected a number after '{'")
        pos = self.space(pos, nested)
        if self.at(pos) == "}":
            high: int | None = int(low_text)
        elif self.at(pos) == ",":
            pos = self.space(pos + 1, nested)
            high_text, pos = self.integer(pos)
            high = None if high_text is None else int(high_text)
            pos = self.space(pos, nested)
            if self.at(pos) != "}":
                raise self.error(pos, "expected '}' to close the repetition count")
        else:
            raise self.error(pos, "expected ',' or '}' in the repetition count")
        low = int(low_text)
        if high is not None and high < low:
            raise self.error(start, f"repetition maximum {high} is below its minimum {low}")
        if low > LLAMA_REPETITION_LIMIT or (high is not None and high > LLAMA_REPETITION_LIMIT):
            raise self.error(
                start, f"repetition count above llama.cpp's limit of {LLAMA_REPETITION_LIMIT}"
            )
        return low, high, self.space(pos + 1, nested)

    def integer(self, pos: int) -> tuple[str | None, int]:
        end = pos
        while end < len(self.text) and self.text[end] in "0123456789":
            end += 1
        return (self.text[pos:end] or None), end

    def repeat_items(
        self, items: list[Node], last: int, reach: int, low: int, high: int | None, at: int
    ) -> int:
        times = high if high else (low or 1)
        if reach * times >= LLAMA_REPETITION_LIMIT:
            raise self.error(
                at,
                f"this repetition expands to {reach * times} rules, past llama.cpp's limit of "
                f"{LLAMA_REPETITION_LIMIT}; move the repeated group into a rule of its own",
            )
        self.symbol_count += rules_made(low, high)
        item = seq(*items[last:])
        if high is None:
            self.unbounded.append((item, at))
        items[last:] = [repeat(item, low, high)]
        return reach * times

    def literal(self, start: int) -> tuple[Node, int]:
        pos = start + 1
        code_points: list[int] = []
        while True:
            if pos >= len(self.text):
                raise self.error(start, "string literal is never closed")
            if self.text[pos] == '"':
                break
            cp, pos = self.char(pos)
            code_points.append(cp)
        if any(cp > MAX_CODE_POINT or 0xD800 <= cp <= 0xDFFF for cp in code_points):
            return NOTHING, pos + 1  # no UTF-8 text holds such a code point
        return lit("".join(map(chr, code_points))), pos + 1

    def char_class(self, start: int) -> tuple[Node, int]:
        pos = start + 1
        negated = self.at(pos) == "^"
        if negated:
            pos += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if pos >= len(self.text):
                raise self.error(start, "character class is never closed")
            if self.text[pos] == "]":
                break
            low, pos = self.char(pos)
            high = low
            if self.at(pos) == "-" and self.at(pos + 1) != "]":
                if pos + 1 >= len(self.text):
                    raise self.error(start, "character class is never closed")
                high, pos = self.char(pos + 1)
            ranges.append((low, high))
        if not ranges:
            raise self.error(start, "empty character class (llama.cpp would drop it silently)")
        return (negate(ranges) if negated else chars(ranges)), pos + 1

    def char(self, pos: int) -> tuple[int, int]:
        """One character of a literal or class, escapes as llama.cpp reads them."""
        c = self.text[pos]
        if c != "\\":
            return ord(c), pos + 1
        e = self.at(pos + 1)
        width = {"x": 2, "u": 4, "U": 8}.get(e)
        if width is not None:
            digits = self.text[pos + 2 : pos + 2 + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(pos, f"expected {width} hex digits after '\\{e}'")
            return int(digits, 16), pos + 2 + width
        simple = {"t": 9, "r": 13, "n": 10, "\\": 92, '"': 34, "[": 91, "]": 93}
        if e in simple:
            return simple[e], pos + 2
        if not e:
            raise self.error(pos, "the text ends inside an escape")
        raise self.error(pos, f"unknown escape '\\{e}'")

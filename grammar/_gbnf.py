"""GBNF, llama.cpp's grammar text: render any IR grammar to it, parse it back, check it.

The renderer writes text llama.cpp's parser accepts and means exactly what the IR means:
classes are spelled as positive ranges (a negated class in llama.cpp would also match
surrogates and the junk its UTF-8 decoder makes of invalid bytes), a repeated item that can
match nothing is rewritten so llama.cpp sees no loop on an empty match, and counted repeats are
kept under llama.cpp's repetition limits by moving items into rules of their own.

The parser reads llama.cpp's dialect as llama.cpp reads it (where newlines may stand, what an
escape means, how far a quantifier reaches), and refuses what llama.cpp refuses or cannot run:
undefined rules, a missing `root`, left recursion, an unbounded repeat of something that can
match nothing, repetition counts past llama.cpp's limits. It is also stricter in two places
where llama.cpp silently does something surprising: an empty class `[]` (llama.cpp drops it)
and a rule defined twice (llama.cpp keeps the last).
"""

from __future__ import annotations

import re

from ._errors import CompileError, LimitError
from ._grammar import Grammar
from ._analysis import left_recursion, nullable, nullable_rules, productive_rules
from ._ir import (
    ANY_CHAR,
    EMPTY,
    MAX_CODE_POINT,
    NOTHING,
    Alt,
    Chars,
    Lit,
    Node,
    Ref,
    Repeat,
    Rules,
    Seq,
    alt,
    chars,
    lit,
    negate,
    repeat,
    seq,
)

LLAMA_REPETITION_LIMIT = 2000
"""llama.cpp refuses a repetition whose expansion (rules repeated x count) reaches this."""

MAX_GROUP_DEPTH = 100
"""Groups nested past this are refused: reading a group recurses, as does what walks its nodes."""

_CHUNK = 1000
"""Counted repeats at or past this many are split into nested rules when rendered."""

_LINE_WIDTH = 100

_NOTHING_CLASS = "[^\\x00-\\UFFFFFFFF]"  # no code point, valid or not, is outside this range

_SURROGATE = re.compile("[\\ud800-\\udfff]")


# --- rendering ---------------------------------------------------------------------------


def to_gbnf(rules: Rules) -> str:
    """The grammar as GBNF text for llama.cpp, its start rule named `root`.

    Raises `CompileError` for a left-recursive grammar, which llama.cpp cannot run.
    """
    prepared = _Prepared(rules)
    names = _rule_names(prepared.order, prepared.root)
    return _Renderer(names).render(prepared.rules, prepared.order)


class _Prepared:
    """The reachable rules, simplified, with no unbounded repeat of a nullable item."""

    def __init__(self, rules: Rules):
        self.root = rules.root
        if rules.root not in rules.rules:
            raise CompileError(f"start rule {rules.root!r} is not defined", keyword="root")
        reachable = rules.reachable()
        missing = [name for name in reachable if name not in rules.rules]
        if missing:
            raise CompileError(f"rule {missing[0]!r} is referenced but not defined", keyword="ref")
        source = {name: rules.rules[name] for name in reachable}
        productive = productive_rules(source)
        simplified = {name: _simplify(node, productive) for name, node in source.items()}
        self.nullable = nullable_rules(simplified)
        cycle = left_recursion(simplified, self.nullable)
        if cycle:
            raise CompileError(
                "the grammar is left-recursive (" + " -> ".join(cycle) + "), which llama.cpp "
                "cannot run",
                keyword="ref",
            )
        # Rewriting loops keeps the grammar free of left recursion: every derivation of a new
        # rule is one of an old rule with empty matches left out.
        self.rules: dict[str, Node] = dict(simplified)
        self.non_empty: dict[str, str] = {}
        for name, node in simplified.items():
            self.rules[name] = self.loop_safe(node)
        self.order = Rules(self.rules, self.root).reachable()

    def loop_safe(self, node: Node) -> Node:
        """`node` with every unbounded repeat of a nullable item `x*` written `(x minus "")*`."""
        if isinstance(node, Seq):
            return seq(*(self.loop_safe(item) for item in node.items))
        if isinstance(node, Alt):
            return alt(*(self.loop_safe(item) for item in node.items))
        if isinstance(node, Repeat):
            item = self.loop_safe(node.item)
            if node.max is None and nullable(item, self.nullable):
                return repeat(self.loop_safe(self.non_empty_part(item)), 0, None)
            return repeat(item, node.min, node.max)
        return node

    def non_empty_part(self, node: Node) -> Node:
        """The non-empty strings of `node` (its language minus the empty string)."""
        if isinstance(node, (Lit, Chars)):
            return node
        if isinstance(node, Ref):
            return Ref(self.non_empty_rule(node.name)) if node.name in self.nullable else node
        if isinstance(node, Alt):
            return alt(*(self.non_empty_part(item) for item in node.items))
        if isinstance(node, Seq):
            # The first non-empty item is item i; every item before it matched nothing.
            branches = []
            for i, item in enumerate(node.items):
                branches.append(seq(self.non_empty_part(item), *node.items[i + 1 :]))
                if not nullable(item, self.nullable):
                    break
            return alt(*branches)
        if nullable(node.item, self.nullable):
            return repeat(self.non_empty_part(node.item), 1, node.max)
        return repeat(node.item, max(node.min, 1), node.max)

    def non_empty_rule(self, name: str) -> str:
        if name not in self.non_empty:
            new = f"{name}-nonempty"
            while new in self.rules:
                new += "-"
            self.non_empty[name] = new
            self.rules[new] = NOTHING  # holds the name while the body is built
            self.rules[new] = self.loop_safe(self.non_empty_part(self.rules[name]))
        return self.non_empty[name]


def _simplify(node: Node, productive: set[str]) -> Node:
    """`node` rebuilt through the IR constructors, references to empty languages removed."""
    if isinstance(node, Lit):
        # A surrogate has no UTF-8 form; llama.cpp would match the bytes it decodes to one.
        return NOTHING if _SURROGATE.search(node.text) else lit(node.text)
    if isinstance(node, Chars):
        return chars(node.ranges)
    if isinstance(node, Seq):
        return seq(*(_simplify(item, productive) for item in node.items))
    if isinstance(node, Alt):
        items = [_simplify(item, productive) for item in node.items]
        if EMPTY in items and len(items) > 1:  # `x | ""` reads better as `x?`
            return repeat(alt(*(item for item in items if item != EMPTY)), 0, 1)
        return alt(*items)
    if isinstance(node, Repeat):
        return repeat(_simplify(node.item, productive), node.min, node.max)
    return node if node.name in productive else NOTHING


def _rule_names(order: list[str], root: str) -> dict[str, str]:
    """GBNF names (lowercase letters, digits, dashes), unique, the start rule named `root`."""
    names = {root: "root"}
    taken = {"root"}
    for name in order:
        if name == root:
            continue
        base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "rule"
        candidate, k = base, 2
        while candidate in taken:
            candidate = f"{base}-{k}"
            k += 1
        names[name] = candidate
        taken.add(candidate)
    return names


_TOP, _ITEM, _ATOM = 0, 1, 2  # where an expression stands: rule body, sequence item, operand


class _Renderer:
    def __init__(self, names: dict[str, str]):
        self.names = names
        self.taken = set(names.values())
        self.lines: list[str] = []
        self.current = "root"

    def render(self, rules: dict[str, Node], order: list[str]) -> str:
        for name in order:
            self.current = self.names[name]
            self.define(self.current, rules[name])
        return "\n".join(self.lines) + "\n"

    def define(self, gname: str, node: Node) -> None:
        slot = len(self.lines)
        self.lines.append("")
        if node == NOTHING:
            body = _NOTHING_CLASS
        elif isinstance(node, Alt):
            alternatives = [self.expr(item, _ITEM)[0] for item in node.items]
            body = " | ".join(alternatives)
            if len(gname) + len(body) > _LINE_WIDTH:
                body = " |\n    ".join(alternatives)
        else:
            body = self.expr(node, _TOP)[0]
        self.lines[slot] = f"{gname} ::= {body}"

    def helper(self, node_text: str) -> str:
        """A new rule holding `node_text`, named after the rule being rendered."""
        k = 1
        while f"{self.current}-{k}" in self.taken:
            k += 1
        name = f"{self.current}-{k}"
        self.taken.add(name)
        self.lines.append(f"{name} ::= {node_text}")
        return name

    def expr(self, node: Node, where: int) -> tuple[str, int]:
        """GBNF text for `node`, and how many rules llama.cpp will create when reading it."""
        if isinstance(node, Lit):
            return _quote(node.text), 0
        if isinstance(node, Chars):
            return _char_class(node.ranges), 0
        if isinstance(node, Ref):
            return self.names[node.name], 1
        if isinstance(node, Seq):
            if not node.items:
                return '""', 0
            parts = [self.expr(item, _ITEM) for item in node.items]
            return self.group(
                " ".join(p[0] for p in parts), sum(p[1] for p in parts), where == _ATOM
            )
        if isinstance(node, Alt):
            if not node.items:
                return _NOTHING_CLASS, 0
            parts = [self.expr(item, _ITEM) for item in node.items]
            return self.group(
                " | ".join(p[0] for p in parts), sum(p[1] for p in parts), where != _TOP
            )
        text, made = self.repetition(node)
        return self.group(text, made, where == _ATOM)

    @staticmethod
    def group(text: str, made: int, parenthesize: bool) -> tuple[str, int]:
        return (f"({text})", made + 1) if parenthesize else (text, made)

    def repetition(self, node: Repeat) -> tuple[str, int]:
        text, made = self.expr(node.item, _TOP)
        times = node.max if node.max else (node.min or 1)
        big = node.min >= _CHUNK or (node.max is not None and node.max >= _CHUNK)
        if isinstance(node.item, (Lit, Chars, Ref)):
            atom = text
        elif big or (made + 1) * times >= _CHUNK:
            # llama.cpp multiplies a group's rules by the count; a rule reference counts once.
            atom, made = self.helper(text), 1
        else:
            atom, made = f"({text})", made + 1
        if big:
            counted, more = self.counted(atom, node.min, node.max)
            return counted, made + more
        return atom + _quantifier(node.min, node.max), made + _rules_made(node.min, node.max)

    def counted(self, atom: str, low: int, high: int | None) -> tuple[str, int]:
        """`atom{low,high}` for any counts, as nested repeats of `atom{_CHUNK}` where large;
        with how many rules llama.cpp creates reading the text (helper rules aside)."""
        if (high is None and low < _CHUNK) or (high is not None and high < _CHUNK):
            if high == 0:
                return "", 0
            return atom + _quantifier(low, high), _rules_made(low, high)
        block = self.helper(f"{atom}{{{_CHUNK}}}")
        blocks, rest = divmod(low, _CHUNK)
        parts = [self.counted(block, blocks, blocks), self.counted(atom, rest, rest)]
        if high is None:
            parts.append(self.counted(atom, 0, None))
        elif high > low:
            more_blocks, more_rest = divmod(high - low, _CHUNK)
            if more_blocks == 0:
                parts.append(self.counted(atom, 0, high - low))
            else:
                below = _join(
                    [self.counted(block, 0, more_blocks - 1), self.counted(atom, 0, _CHUNK - 1)]
                )
                top = _join(
                    [
                        self.counted(block, more_blocks, more_blocks),
                        self.counted(atom, 0, more_rest),
                    ]
                )
                parts.append((f"({below[0]} | {top[0]})", below[1] + top[1] + 1))
        return _join(parts)


def _join(parts: list[tuple[str, int]]) -> tuple[str, int]:
    texts = [text for text, _ in parts if text]
    return (" ".join(texts) or '""'), sum(made for _, made in parts)


def _quantifier(low: int, high: int | None) -> str:
    if (low, high) == (0, 1):
        return "?"
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if low == high:
        return "" if low == 1 else f"{{{low}}}"
    return f"{{{low},{high}}}"


def _rules_made(low: int, high: int | None) -> int:
    return 1 if high is None else high - low


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CLASS_ESCAPES = {**_ESCAPES, "]": "\\]", "[": "\\[", "-": "\\x2D", "^": "\\x5E"}


def _char(cp: int, table: dict[str, str]) -> str:
    c = chr(cp)
    if c in table:
        return table[c]
    if cp < 0x20 or cp == 0x7F:
        return f"\\x{cp:02X}"
    if cp < 0x80 or c.isprintable():
        return c
    return f"\\u{cp:04X}" if cp <= 0xFFFF else f"\\U{cp:08X}"


def _quote(text: str) -> str:
    return '"' + "".join(_char(ord(c), _ESCAPES) for c in text) + '"'


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    if not ranges:
        return _NOTHING_CLASS
    parts = []
    for lo, hi in ranges:
        if lo == hi:
            parts.append(_char(lo, _CLASS_ESCAPES))
        elif hi == lo + 1:
            parts.append(_char(lo, _CLASS_ESCAPES) + _char(hi, _CLASS_ESCAPES))
        else:
            parts.append(_char(lo, _CLASS_ESCAPES) + "-" + _char(hi, _CLASS_ESCAPES))
    return "[" + "".join(parts) + "]"


# --- parsing -------------------------------------------------------------------------------


def from_gbnf(text: str) -> Grammar:
    """The grammar a GBNF text states, its start rule `root`.

    Raises `CompileError` naming the line (and column) of the first problem.
    """
    return _Parser(text).parse()


def well_formed(text: str) -> str | None:
    """The first problem in a GBNF text, as a message with its line number; None if sound.

    Checks the text on its own terms, as llama.cpp would read it: balanced groups, classes and
    string literals; a rule named `root`; every reference defined; no left recursion.
    """
    try:
        _Parser(text).parse()
    except CompileError as err:
        return err.reason
    return None


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
        self.symbol_count += _rules_made(low, high)
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

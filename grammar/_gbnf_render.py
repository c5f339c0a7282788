"""GBNF, llama.cpp's grammar text, rendered from any IR grammar.

The renderer writes text llama.cpp's parser accepts and means exactly what the IR means:
classes are spelled as positive ranges (a negated class in llama.cpp would also match
surrogates and the junk its UTF-8 decoder makes of invalid bytes), a repeated item that can
match nothing is rewritten so llama.cpp sees no loop on an empty match, and counted repeats are
kept under llama.cpp's repetition limits by moving items into rules of their own. One
exception: GBNF cannot count beside a language, so a `Counted` language (a format or pattern
under a long length bound) is rendered as its fallback, the bound spread over the language's
parts (a sub-language: narrower, never looser). It knows rules, not grammars: `Grammar.to_gbnf`
calls it, and `_gbnf_parse` reads its text back.
"""

from __future__ import annotations

import re

from ._errors import CompileError
from ._ir.analysis import left_recursion, nullable, nullable_rules, productive_rules
from ._ir import (
    EMPTY,
    NOTHING,
    Alt,
    Chars,
    Counted,
    Lit,
    Node,
    Ref,
    Repeat,
    Rules,
    Seq,
    alt,
    chars,
    lit,
    rebuilt,
    repeat,
    seq,
    walk,
)

LLAMA_REPETITION_LIMIT = 2000
"""llama.cpp refuses a repetition whose expansion (rules repeated x count) reaches this."""

_CHUNK = 1000
"""Counted repeats at or past this many are split into nested rules when rendered."""

_LINE_WIDTH = 100

_NOTHING_CLASS = "[^\\x00-\\UFFFFFFFF]"  # no code point, valid or not, is outside this range

_SURROGATE = re.compile("[\\ud800-\\udfff]")



def to_gbnf(rules: Rules) -> str:
    """The grammar as GBNF text for llama.cpp, its start rule named `root`.

    Raises `CompileError` for a left-recursive grammar, which llama.cpp cannot run.
    """
    prepared = _Prepared(rules)
    names = _rule_names(prepared.order, prepared.root)
    return _Renderer(names).render(prepared.rules, prepared.order)


def _spread(node: Node) -> Node:
    """`node` with each `Counted` language replaced by its fallback."""
    if not any(isinstance(n, Counted) for n in walk(node)):
        return node
    return rebuilt(node, lambda leaf: leaf.fallback if isinstance(leaf, Counted) else leaf)


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
        source = {name: _spread(rules.rules[name]) for name in reachable}
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
        return atom + _quantifier(node.min, node.max), made + rules_made(node.min, node.max)

    def counted(self, atom: str, low: int, high: int | None) -> tuple[str, int]:
        """`atom{low,high}` for any counts, as nested repeats of `atom{_CHUNK}` where large;
        with how many rules llama.cpp creates reading the text (helper rules aside)."""
        if (high is None and low < _CHUNK) or (high is not None and high < _CHUNK):
            if high == 0:
                return "", 0
            return atom + _quantifier(low, high), rules_made(low, high)
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


def rules_made(low: int, high: int | None) -> int:
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

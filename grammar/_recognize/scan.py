"""Regular expressions that match, in one step, what the recognizer would otherwise read a
character at a time: runs of a code-point class, and a `Counted` language's strings."""

from __future__ import annotations

import re
from functools import lru_cache

from .._errors import CompileError
from .._ir import Alt, Chars, Counted, Lit, Node, Seq, liveness
from .._ir.ranges import Ranges, normal, union


@lru_cache(maxsize=1024)
def class_pattern(ranges: Ranges, most: int | None):
    """The `match` of a regex for a run of up to `most` code points of `ranges`."""
    count = "*" if most is None or most >= 1_000_000_000 else f"{{0,{most}}}"
    return re.compile(f"{class_regex(ranges)}{count}").match


def class_regex(ranges: Ranges) -> str:
    """A regex class of the code points of `ranges`."""
    return "[" + "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges) + "]"


class CountedScan:
    """Where a `Counted` language's strings that start at a position end: one pass that reads
    a character at a time (at most one move of a state matches: a character has one JSON
    spelling, and the spellings are a prefix code) and notes each place its automaton may stop."""

    def __init__(self, node: Counted):
        self.node = node
        self.steps = [
            re.compile("|".join(f"({_regex_of(piece)})" for piece, _ in row)).match if row else None
            for row in node.moves
        ]
        self.targets = [[t for _, t in row] for row in node.moves]
        live = liveness(node)
        self.live = live
        first: Ranges = ()
        for piece, t in node.moves[0] if node.moves else ():
            if live.live[live.after(0)] >> t & 1:
                first = union(first, _first_of(piece))
        self.first = first

    def __call__(self, text: str, j: int) -> list[int]:
        live, steps, targets = self.live, self.steps, self.targets
        q, k, p = 0, 0, j
        ends = []
        while True:
            if p > j and live.exits(k) >> q & 1:
                ends.append(p)
            if k == self.node.max or steps[q] is None:
                return ends
            m = steps[q](text, p)
            if m is None:
                return ends
            q = targets[q][m.lastindex - 1]
            k = live.after(k)
            p = m.end()
            if not live.live[k] >> q & 1:
                return ends


@lru_cache(maxsize=64)
def counted_scan(node: Counted) -> CountedScan:
    return CountedScan(node)


def _regex_of(node: Node) -> str:
    """A regular expression for a small node without repeats or references (a character's
    JSON spellings)."""
    if isinstance(node, Lit):
        return re.escape(node.text)
    if isinstance(node, Chars):
        return class_regex(node.ranges)
    if isinstance(node, Seq):
        return "".join(f"(?:{_regex_of(item)})" for item in node.items)
    if isinstance(node, Alt):
        return "|".join(f"(?:{_regex_of(item)})" for item in node.items) or "(?!)"
    raise CompileError(f"a counted language's character is a {type(node).__name__}", keyword="node")


def _first_of(node: Node) -> Ranges:
    """The code points a small node's strings begin with (it matches no empty string)."""
    if isinstance(node, Lit):
        return ((ord(node.text[0]), ord(node.text[0])),)
    if isinstance(node, Chars):
        return normal(node.ranges)
    if isinstance(node, Seq):
        return _first_of(node.items[0])
    if isinstance(node, Alt):
        out: Ranges = ()
        for item in node.items:
            out = union(out, _first_of(item))
        return out
    raise CompileError(f"a counted language's character is a {type(node).__name__}", keyword="node")

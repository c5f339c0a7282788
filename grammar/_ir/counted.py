"""Which (state, count) pairs of a `Counted` language can still end in it.

A back end that spells the count out (the automaton, a sampler) keeps only the pairs from which
some string of the language can still be finished within the bounds: every prefix it allows
can then be completed, as with any other node.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .nodes import NOTHING, Counted, Node


@dataclass(frozen=True, slots=True)
class Liveness:
    """`live[k]`: the states (a bit each) from which, after k characters, the language can
    still be finished; counts run 0..`top` (with no upper bound, counts past `min` are kept as
    `min`). `exits[k]`: the states where a string of k characters may end. Counts `steady`
    (first, last) all have the same live states and exits, or None: what lets a back end treat
    the counts far from both ends of that run alike."""

    top: int
    live: tuple[int, ...]
    final: int
    min: int
    max: int | None
    steady: tuple[int, int] | None

    def exits(self, k: int) -> int:
        return self.final if k >= self.min and (self.max is None or k <= self.max) else 0

    def after(self, k: int) -> int:
        """The count after one more character from count k."""
        return k + 1 if k < self.top else k


def liveness(node: Counted) -> Liveness:
    targets = tuple(tuple(t for _, t in row) for row in node.moves)
    return _liveness(targets, node.final, node.min, node.max)


@lru_cache(maxsize=256)
def _liveness(targets: tuple[tuple[int, ...], ...], final: tuple[bool, ...], lo: int, hi: int | None) -> Liveness:
    succ = [sum(1 << t for t in set(row)) for row in targets]
    fin = sum(1 << q for q, f in enumerate(final) if f)

    def before(x: int) -> int:
        return sum(1 << q for q, s in enumerate(succ) if s & x)

    top = lo if hi is None else hi
    live = [0] * (top + 1)
    if hi is None:
        x = fin
        while (y := fin | before(x)) != x:
            x = y
        live[top] = x
    else:
        live[top] = fin if lo <= top else 0
    for k in range(top - 1, -1, -1):
        if k >= lo and k + 2 <= top and live[k + 1] == live[k + 2]:
            live[k] = live[k + 1]  # exits are the same from lo to hi: nothing changes below
        else:
            live[k] = (fin if k >= lo else 0) | before(live[k + 1])
    steady = None
    if hi is not None and lo < hi:
        last = lo
        while last < hi and live[last + 1] == live[lo]:
            last += 1
        steady = (lo, last)
    return Liveness(top, tuple(live), fin, lo, hi, steady)


def counted(moves: list[list[tuple[Node, int]]], final: list[bool], lo: int, hi: int | None, fallback: Node) -> Node:
    """A `Counted` node (NOTHING where no string of the language is lo..hi characters long)."""
    node = Counted(tuple(tuple(row) for row in moves), tuple(final), lo, hi, fallback)
    if (hi is not None and hi < lo) or not liveness(node).live[0] & 1:
        return NOTHING
    return node

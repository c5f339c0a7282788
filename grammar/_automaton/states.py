"""The numbers and bounds every part of the automaton shares: the dead and not-yet-found
successors, the size and depth bounds, a configuration's return stack, a state's
configurations, and when a table lookup goes flat."""

from __future__ import annotations

DEAD = -1
UNBUILT = -2

MAX_DFA_STATES = 200_000
MAX_STACK_DEPTH = 64
MAX_CLOSURE = 20_000

# Cells from which a lookup in a state table or the token byte matrix goes as one flat take:
# a 2-D fancy index costs twice as much per cell, three array calls fewer below a few hundred.
FLAT_TAKE = 512

Stack = tuple  # (return state, parent stack, depth) or () for the empty stack


def stack_depth(stack: Stack) -> int:
    """How many return states `stack` holds."""
    return stack[2] if stack else 0


Configs = tuple  # a state's configurations: sorted (NFA state, stack) pairs, each once


def configurations(pairs: list[tuple[int, Stack]]) -> Configs:
    """`pairs` as a state's configurations. A sorted tuple, not a frozenset: a tuple of numbers
    and stacks (tuples of numbers) drops out of the cycle collector's view, where a set per
    state would stay in it as long as the grammar lives, and each full collection would walk
    them all."""
    if len(pairs) == 1:  # most
        return tuple(pairs)
    return tuple(sorted(set(pairs)))

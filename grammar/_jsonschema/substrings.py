"""The spans of a source text as a DFA over code points.

A string value held to a span of a text has the text's spans as its language: its substrings
that start and end where `starts` and `ends` allow (where a word does) and never read a pair
`apart` refuses. A state is the set of offsets the string read so far may have reached in the
source (its occurrences, from allowed starts), so the automaton is deterministic and acyclic
(offsets only grow) and holds one state per distinct set: about one per character of natural
text, whose spans soon occur once. The `lang` machinery then intersects it with the field's own
constraints and writes it as rules like any other string language.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .lang import DFA, Edges

_SURROGATES = (0xD800, 0xDFFF)  # no UTF-8 text holds one, so no JSON string written here does


def span_automaton(source: str, starts: Sequence[bool] | None = None, ends: Sequence[bool] | None = None,
                   apart: Callable[[int, int], bool] | None = None) -> DFA:
    """The DFA of the spans of `source` (the empty one included), state 0 the start.

    `starts` (one flag per offset 0..len(source) - 1): a span begins only at an offset flagged.
    `ends` (one flag per end offset 0..len(source)): it ends only at one flagged. `apart`: it
    never reads code point b right after a where `apart(a, b)` (a is -1 for its first).
    A span never holds a lone surrogate (its string could not be written as UTF-8 JSON).
    """
    codes = [ord(ch) for ch in source]
    first = tuple(i for i in range(len(codes)) if starts is None or starts[i])
    index: dict[tuple[int, ...], int] = {}
    sets: list[tuple[int, ...]] = [first]  # per state, the offsets of the next character to read
    edges: list[Edges] = []
    final: list[bool] = []
    for state, offsets in enumerate(sets):  # grows as states are found
        moves: dict[int, list[int]] = {}
        for i in offsets:
            if i == len(codes):
                continue
            c = codes[i]
            if _SURROGATES[0] <= c <= _SURROGATES[1]:
                continue
            if apart is not None and apart(codes[i - 1] if state else -1, c):
                continue
            moves.setdefault(c, []).append(i + 1)
        row = []
        for c in sorted(moves):
            key = tuple(moves[c])
            target = index.get(key)
            if target is None:
                target = index[key] = len(sets)
                sets.append(key)
            row.append((c, c, target))
        edges.append(row)
        final.append(state == 0 or ends is None or any(ends[j] for j in offsets))
    return DFA(edges, final)

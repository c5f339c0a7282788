"""The substrings of a source text as a DFA over code points: its suffix automaton.

A string value held to a span of a text has the text's substrings as its language. The suffix
automaton is their smallest deterministic automaton (at most 2n - 1 states and 3n - 4 moves for
n characters, built in linear time), every state final, and acyclic: the `lang` machinery then
intersects it with the field's own constraints and writes it as rules like any other string
language.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .lang import DFA, Edges

_SURROGATES = (0xD800, 0xDFFF)  # no UTF-8 text holds one, so no JSON string written here does


def suffix_automaton(source: str, ends: Sequence[bool] | None = None,
                     apart: Callable[[int, int], bool] | None = None) -> DFA:
    """The DFA of every substring of `source` (the empty one included), state 0 the start.

    With `ends` (one flag per end offset 0..len(source)), only the substrings with some
    occurrence ending at an offset flagged: a state is final where one of its end positions is
    (found up the suffix links, which hold each state's end positions). With `apart`, only
    those that never read code point b right after a where `apart(a, b)` (a is -1 at the
    start): every string of a state ends with the same character, so that is a move left out.

    A span never holds a lone surrogate (its string could not be written as UTF-8 JSON): the
    moves that read one are left out, which leaves out exactly the spans that hold one.
    """
    nexts: list[dict[int, int]] = [{}]
    link = [-1]
    length = [0]
    own = [True]  # whether a state ends at a flagged offset itself (the empty string: kept)
    read = [-1]  # the character every string of a state ends with
    last = 0
    for i, ch in enumerate(source):
        c = ord(ch)
        cur = len(nexts)
        nexts.append({})
        length.append(length[last] + 1)
        link.append(0)
        own.append(ends is None or ends[i + 1])
        read.append(c)
        p = last
        while p != -1 and c not in nexts[p]:
            nexts[p][c] = cur
            p = link[p]
        if p != -1:
            q = nexts[p][c]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(nexts)
                nexts.append(dict(nexts[q]))
                length.append(length[p] + 1)
                link.append(link[q])
                own.append(False)
                read.append(c)
                while p != -1 and nexts[p].get(c) == q:
                    nexts[p][c] = clone
                    p = link[p]
                link[q] = link[cur] = clone
        last = cur
    edges: list[Edges] = [
        [(c, c, moves[c]) for c in sorted(moves)
         if not _SURROGATES[0] <= c <= _SURROGATES[1] and not (apart is not None and apart(a, c))]
        for a, moves in zip(read, nexts)
    ]
    if ends is None:
        return DFA(edges, [True] * len(nexts))
    final = [False] * len(nexts)
    final[0] = True
    for q, flagged in enumerate(own):
        while flagged and not final[q]:  # up the links, each state marked once
            final[q] = True
            q = link[q]
    return DFA(edges, final)

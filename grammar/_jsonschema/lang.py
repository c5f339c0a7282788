"""Regular languages of decoded strings, as small DFAs over code-point ranges.

The IR has no intersection or complement, yet a string may have to satisfy a pattern and a
length, two patterns, or be a property name outside the declared ones. Such languages are built
here: IR (without references) -> NFA -> DFA on disjoint code-point ranges, combined by product or
complement, then written back to IR as right-linear rules. Sizes are bounded (`LimitError`).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Callable

from .._errors import LimitError
from .._ir import ANY_CHAR, EMPTY, NOTHING, Alt, Chars, Lit, Node, Ref, Repeat, Seq, alt, chars, lit, ref, seq, star
from .._ir.nodes import RULE_HEIGHT

MAX_NFA_STATES = 20_000
MAX_DFA_STATES = 10_000
UNIVERSE: tuple[tuple[int, int], ...] = ANY_CHAR.ranges

Edges = list[tuple[int, int, int]]  # (lo, hi, target), sorted, disjoint


class DFA:
    """A deterministic automaton: `edges[s]` sorted disjoint ranges, `final[s]`, start state 0.

    Missing ranges go to an implicit dead state.
    """

    def __init__(self, edges: list[Edges], final: list[bool]):
        self.edges = edges
        self.final = final

    @property
    def size(self) -> int:
        return len(self.final)

    def step(self, state: int, cp: int) -> int | None:
        row = self.edges[state]
        i = bisect_right(row, (cp, 0x110000, 0)) - 1
        if i >= 0 and row[i][0] <= cp <= row[i][1]:
            return row[i][2]
        return None

    def matches(self, text: str) -> bool:
        state: int | None = 0
        for ch in text:
            state = self.step(state, ord(ch))
            if state is None:
                return False
        return self.final[state]

    def is_empty(self) -> bool:
        return not any(self.final[s] for s in self._reachable())

    def shortest(self) -> str | None:
        """The shortest text the automaton accepts (the least code points first among equals),
        None where it accepts none: a breadth-first walk, each state reached once."""
        paths: dict[int, str] = {0: ""}
        order = [0]
        for s in order:  # grows as states are reached, shortest paths first
            if self.final[s]:
                return paths[s]
            for lo, _, t in self.edges[s]:
                if t not in paths:
                    paths[t] = paths[s] + chr(lo)
                    order.append(t)
        return None

    def _reachable(self) -> list[int]:
        seen = {0}
        order = [0]
        for s in order:
            for _, _, t in self.edges[s]:
                if t not in seen:
                    seen.add(t)
                    order.append(t)
        return order


# --- IR -> NFA -> DFA ------------------------------------------------------------------------


class _NFA:
    def __init__(self):
        self.eps: list[list[int]] = []
        self.moves: list[list[tuple[tuple[tuple[int, int], ...], int]]] = []

    def new(self) -> int:
        if len(self.eps) >= MAX_NFA_STATES:
            raise LimitError(f"string constraint needs more than {MAX_NFA_STATES} automaton states")
        self.eps.append([])
        self.moves.append([])
        return len(self.eps) - 1

    def build(self, node: Node, start: int) -> int:
        """Add `node` from `start`; return its end state."""
        if isinstance(node, Lit):
            cur = start
            for ch in node.text:
                nxt = self.new()
                self.moves[cur].append((((ord(ch), ord(ch)),), nxt))
                cur = nxt
            return cur
        if isinstance(node, Chars):
            end = self.new()
            self.moves[start].append((node.ranges, end))
            return end
        if isinstance(node, Seq):
            cur = start
            for item in node.items:
                cur = self.build(item, cur)
            return cur
        if isinstance(node, Alt):
            end = self.new()
            for item in node.items:
                s = self.new()
                self.eps[start].append(s)
                self.eps[self.build(item, s)].append(end)
            return end
        if isinstance(node, Repeat):
            cur = start
            for _ in range(node.min):
                cur = self.build(node.item, cur)
            if node.max is None:
                loop = self.new()
                self.eps[cur].append(loop)
                self.eps[self.build(node.item, loop)].append(loop)
                return loop
            end = self.new()
            self.eps[cur].append(end)
            for _ in range(node.max - node.min):
                cur = self.build(node.item, cur)
                self.eps[cur].append(end)
            return end
        if isinstance(node, Ref):
            raise LimitError("a string language must not reference rules")
        raise TypeError(f"not an IR node: {node!r}")


def from_node(node: Node) -> DFA:
    """The DFA of a reference-free IR node over code points."""
    nfa = _NFA()
    start = nfa.new()
    end = nfa.build(node, start)

    def closure(states) -> frozenset[int]:
        out = set(states)
        stack = list(states)
        while stack:
            s = stack.pop()
            for t in nfa.eps[s]:
                if t not in out:
                    out.add(t)
                    stack.append(t)
        return frozenset(out)

    first = closure([start])
    index = {first: 0}
    order = [first]
    edges: list[Edges] = []
    final: list[bool] = []
    for current in order:
        final.append(end in current)
        moves = [m for s in current for m in nfa.moves[s]]
        row: Edges = []
        for lo, hi, targets in _split(moves):
            target = closure(targets)
            if target not in index:
                if len(order) >= MAX_DFA_STATES:
                    raise LimitError(f"string constraint needs more than {MAX_DFA_STATES} automaton states")
                index[target] = len(order)
                order.append(target)
            _append(row, lo, hi, index[target])
        edges.append(row)
    return _minimize(DFA(edges, final))


def _split(moves) -> list[tuple[int, int, frozenset[int]]]:
    """Disjoint ranges with the set of targets reached on each (a sweep over range ends)."""
    events: dict[int, list[tuple[int, int]]] = {}
    for ranges, t in moves:
        for lo, hi in ranges:
            events.setdefault(lo, []).append((t, 1))
            events.setdefault(hi + 1, []).append((t, -1))
    active: dict[int, int] = {}
    out: list[tuple[int, int, frozenset[int]]] = []
    points = sorted(events)
    for here, after in zip(points, points[1:] + [None]):
        for t, delta in events[here]:
            n = active.get(t, 0) + delta
            if n:
                active[t] = n
            else:
                active.pop(t, None)
        if active and after is not None:
            targets = frozenset(active)
            if out and out[-1][1] + 1 == here and out[-1][2] == targets:
                out[-1] = (out[-1][0], after - 1, targets)
            else:
                out.append((here, after - 1, targets))
    return out


def _append(row: Edges, lo: int, hi: int, target: int) -> None:
    if row and row[-1][1] + 1 == lo and row[-1][2] == target:
        row[-1] = (row[-1][0], hi, target)
    else:
        row.append((lo, hi, target))


# --- combinations ----------------------------------------------------------------------------


def intersect(a: DFA, b: DFA) -> DFA:
    return _product(a, b, lambda x, y: x and y, complete=False)


def union(a: DFA, b: DFA) -> DFA:
    return _product(a, b, lambda x, y: x or y, complete=True)


def complement(a: DFA) -> DFA:
    """Every decoded string (no surrogates) that `a` rejects."""
    full = _completed(a)
    return _minimize(DFA(full.edges, [not f for f in full.final]))


def _completed(a: DFA) -> DFA:
    sink = a.size
    edges: list[Edges] = []
    for s in range(a.size + 1):
        row: Edges = []
        existing = a.edges[s] if s < a.size else []
        for lo, hi in UNIVERSE:
            cur = lo
            for elo, ehi, t in existing:
                if ehi < cur or elo > hi:
                    continue
                if elo > cur:
                    _append(row, cur, elo - 1, sink)
                _append(row, max(elo, cur), min(ehi, hi), t)
                cur = min(ehi, hi) + 1
            if cur <= hi:
                _append(row, cur, hi, sink)
        edges.append(row)
    return DFA(edges, list(a.final) + [False])


def _product(a: DFA, b: DFA, keep: Callable[[bool, bool], bool], *, complete: bool) -> DFA:
    if complete:
        a, b = _completed(a), _completed(b)
    index = {(0, 0): 0}
    order = [(0, 0)]
    edges: list[Edges] = []
    final: list[bool] = []
    for x, y in order:
        final.append(keep(a.final[x], b.final[y]))
        row: Edges = []
        ea, eb = a.edges[x], b.edges[y]
        i = j = 0
        while i < len(ea) and j < len(eb):
            lo = max(ea[i][0], eb[j][0])
            hi = min(ea[i][1], eb[j][1])
            if lo <= hi:
                pair = (ea[i][2], eb[j][2])
                if pair not in index:
                    if len(order) >= MAX_DFA_STATES:
                        raise LimitError(f"string constraint needs more than {MAX_DFA_STATES} automaton states")
                    index[pair] = len(order)
                    order.append(pair)
                _append(row, lo, hi, index[pair])
            if ea[i][1] < eb[j][1]:
                i += 1
            else:
                j += 1
        edges.append(row)
    return _minimize(DFA(edges, final))


MINIMIZE_UP_TO = 400


def _minimize(d: DFA) -> DFA:
    """Trim states that cannot reach a final state, then (for small automata) merge equivalent
    states by Moore's refinement. A row's signature is its (label, target block) pairs, with
    labels interned per (state, target) range set: equal signatures mean equal behaviour (the
    converse may fail, which only leaves some equivalent states apart)."""
    reverse: dict[int, set[int]] = {}
    for s in range(d.size):
        for _, _, t in d.edges[s]:
            reverse.setdefault(t, set()).add(s)
    live = {s for s in range(d.size) if d.final[s]}
    stack = list(live)
    while stack:
        t = stack.pop()
        for s in reverse.get(t, ()):
            if s not in live:
                live.add(s)
                stack.append(s)
    if 0 not in live:
        return DFA([[]], [False])
    labels: dict[tuple, int] = {}
    rows: list[list[tuple[int, int]]] = []
    for s in range(d.size):
        groups: dict[int, list[tuple[int, int]]] = {}
        for lo, hi, t in d.edges[s]:
            if t in live:
                groups.setdefault(t, []).append((lo, hi))
        rows.append([(labels.setdefault(tuple(rs), len(labels)), t) for t, rs in groups.items()])
    block = [0 if d.final[s] else 1 for s in range(d.size)]
    count = len({block[s] for s in live})
    if d.size > MINIMIZE_UP_TO:
        block = list(range(d.size))
    while d.size <= MINIMIZE_UP_TO:
        signatures: dict[tuple, int] = {}
        new_block = []
        for s in range(d.size):
            if s not in live:
                new_block.append(-1)
                continue
            sig = (block[s], frozenset((label, block[t]) for label, t in rows[s]))
            new_block.append(signatures.setdefault(sig, len(signatures)))
        block = new_block
        if len(signatures) == count:
            break
        count = len(signatures)
    # Renumber with the start block first.
    order = {block[0]: 0}
    for s in sorted(live):
        order.setdefault(block[s], len(order))
    edges: list[Edges] = [[] for _ in order]
    final = [False] * len(order)
    done = set()
    for s in sorted(live):
        b = order[block[s]]
        if b in done:
            continue
        done.add(b)
        final[b] = d.final[s]
        row: Edges = []
        for lo, hi, t in d.edges[s]:
            if t in live:
                _append(row, lo, hi, order[block[t]])
        edges[b] = row
    return DFA(edges, final)


# --- DFA -> IR -------------------------------------------------------------------------------


# States inlined one inside another, at most: each nests its body about three node levels deeper
# (an alternation of sequences, a loop before it), so a rule body stays within the height the IR
# keeps bodies to, and `shallow` has nothing to cut up again.
_INLINED_STATES = RULE_HEIGHT // 3


def to_node(d: DFA, rule: Callable[[str, Node], Node], tag: str) -> Node:
    """The DFA's language as IR: states become right-linear rules, except those with a single
    way in and no cycle through them, which are inlined (up to a depth)."""
    if d.is_empty():
        return NOTHING
    incoming = [0] * d.size
    for s in range(d.size):
        for t in {t for _, _, t in d.edges[s] if t != s}:
            incoming[t] += 1
    cyclic = _on_cycles(d)
    shared = {s for s in range(d.size) if incoming[s] > 1 or s in cyclic}
    pending: list[int] = []
    built: set[int] = set()

    def target(t: int, depth: int) -> Node:
        if t in shared or depth >= _INLINED_STATES:
            shared.add(t)
            if t not in built:
                built.add(t)
                pending.append(t)
            return ref(f"{tag}-s{t}")
        return body(t, depth + 1)

    def body(s: int, depth: int) -> Node:
        self_loop = [(lo, hi) for lo, hi, t in d.edges[s] if t == s]
        groups: dict[int, list[tuple[int, int]]] = {}
        for lo, hi, t in d.edges[s]:
            if t != s:
                groups.setdefault(t, []).append((lo, hi))
        node = alt(EMPTY if d.final[s] else NOTHING, *(seq(chars(rs), target(t, depth)) for t, rs in groups.items()))
        return seq(star(chars(self_loop)), node) if self_loop else node

    try:
        root = target(0, 0) if 0 in shared else body(0, 0)
        while pending:
            s = pending.pop()
            rule(f"{tag}-s{s}", body(s, 0))
        return root
    finally:
        target = body = None  # noqa: F841 - each closure refers to the other: free them without the cycle collector


def _on_cycles(d: DFA) -> set[int]:
    """States on a cycle through at least one other state (Tarjan's SCCs of size > 1)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    out: set[int] = set()
    counter = 0
    successors = [sorted({t for _, _, t in d.edges[v] if t != v}) for v in range(d.size)]
    for root in range(d.size):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = successors[v]
            if i < len(succ):
                work.append((v, i + 1))
                w = succ[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.update(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return out


def lengths(lo: int, hi: int | None) -> DFA:
    """Strings of lo..hi code points: a chain of states counting up to the bound."""
    last = lo if hi is None else hi
    if last + 1 > MAX_DFA_STATES:
        raise LimitError(f"string length bound {last} needs more than {MAX_DFA_STATES} automaton states")
    edges: list[Edges] = []
    for i in range(last + 1):
        target = i + 1 if i < last else (i if hi is None else None)
        edges.append([] if target is None else [(a, b, target) for a, b in UNIVERSE])
    return DFA(edges, [i >= lo for i in range(last + 1)])


def literal_set(texts) -> DFA:
    return from_node(alt(*(lit(t) for t in texts)) if texts else NOTHING)

"""A grammar held to a byte budget: the sub-language of sentences at most `n` bytes long.

A runtime that decodes locally can close a document when its token budget runs out (it steers
the end); a server cannot, and a grammar that lets the model run on ends at the budget with half
a document. Every token is at least one byte, so a grammar whose longest sentence is at most
`max_tokens` bytes always finishes. `within_bytes` makes one from any grammar by lowering bounds,
never raising them: what it returns accepts only sentences of the original, so it is never a
looser grammar, and it refuses (`LimitError`) where even the shortest sentence does not fit,
never handing back an empty one.

How the room is shared: a sequence gives each part its shortest and shares what is left, the
parts that need little (a bounded run of blanks) first, the rest evenly; a repeat keeps as many
copies as fit at their longest, or as many one-byte copies as fit (an ASCII string under a
budget is as long as the budget), whichever a sentence takes; a character class keeps the
characters that fit. A rule is copied for each budget it is used under, rounded down to one of
a few steps (fewer for a recursive rule), so its copies stay few.
"""

from __future__ import annotations

import math
from typing import Iterator

from ._errors import CompileError, LimitError
from ._grammar import Grammar
from ._ir import EMPTY, NOTHING, Alt, Chars, Counted, Lit, Node, Ref, Repeat, Rules, Seq, alt, chars, repeat, seq
from ._ir.counted import liveness

INF = math.inf
_UTF8_TOPS = (0x7F, 0x7FF, 0xFFFF)  # the last code point of each UTF-8 length, 1 to 3 bytes


def utf8_length(cp: int) -> int:
    return 1 + sum(cp > top for top in _UTF8_TOPS)


def _bytes_of(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class ByteLengths:
    """The shortest and longest sentence, in UTF-8 bytes, of each rule and node of a rule set
    (inf: none longest; a node with no sentence has shortest inf and longest -inf). Longest
    is an upper bound (a recursive rule's is inf, as is a counted language's with no maximum)."""

    def __init__(self, rules: dict[str, Node]):
        self.rules = rules
        self._lo: dict[Node, float] = {}
        self._hi: dict[Node, float] = {}
        self.rule_lo = self._rule_shortest()
        self.recursive = _recursive(rules)
        self.rule_hi: dict[str, float] = {name: INF for name in self.recursive}
        for name in _children_first(rules):
            if name not in self.recursive:
                self.rule_hi[name] = self.hi(rules[name])

    def _rule_shortest(self) -> dict[str, float]:
        known = {name: INF for name in self.rules}
        changed = True
        while changed:  # a fixpoint: each pass can only lower a rule's shortest
            changed = False
            for name, body in self.rules.items():
                found = _lo(body, known, {})
                if found < known[name]:
                    known[name], changed = found, True
        return known

    def lo(self, node: Node) -> float:
        return _lo(node, self.rule_lo, self._lo)

    def hi(self, node: Node) -> float:
        found = self._hi.get(node)
        if found is None:
            found = self._hi[node] = _hi(node, self)
        return found


def _lo(node: Node, rules: dict[str, float], memo: dict[Node, float]) -> float:
    found = memo.get(node)
    if found is not None:
        return found
    kind = type(node)
    if kind is Lit:
        found = _bytes_of(node.text)
    elif kind is Chars:
        found = utf8_length(node.ranges[0][0]) if node.ranges else INF
    elif kind is Seq:
        found = sum(_lo(item, rules, memo) for item in node.items)
    elif kind is Alt:
        found = min((_lo(item, rules, memo) for item in node.items), default=INF)
    elif kind is Repeat:
        found = 0 if node.min == 0 else node.min * _lo(node.item, rules, memo)
    elif kind is Ref:
        found = rules.get(node.name, INF)
    else:
        found = _counted_lo(node, rules, memo)
    if kind is not Ref:
        memo[node] = found
    return found


def _counted_lo(node: Counted, rules: dict[str, float], memo: dict[Node, float]) -> float:
    """The fewest characters a counted string can have, times its cheapest character."""
    cheapest = min((_lo(c, rules, memo) for row in node.moves for c, _ in row), default=INF)
    reach, final = 1, sum(1 << q for q, f in enumerate(node.final) if f)
    top = node.min + len(node.moves) if node.max is None else min(node.max, node.min + len(node.moves))
    for count in range(top + 1):
        if count >= node.min and reach & final:
            return count * cheapest if count else 0
        reach = sum(1 << t for q, row in enumerate(node.moves) if reach >> q & 1 for _, t in row)
        if not reach:
            break
    return INF


def _hi(node: Node, lengths: ByteLengths) -> float:
    kind = type(node)
    if kind is Lit:
        return _bytes_of(node.text)
    if kind is Chars:
        return utf8_length(node.ranges[-1][1]) if node.ranges else -INF
    if kind is Seq:
        parts = [lengths.hi(item) for item in node.items]
        return -INF if -INF in parts else sum(parts)
    if kind is Alt:
        return max((lengths.hi(item) for item in node.items), default=-INF)
    if kind is Repeat:
        one = lengths.hi(node.item)
        if one == -INF:
            return 0 if node.min == 0 else -INF
        if one == 0:
            return 0
        return INF if node.max is None else node.max * one
    if kind is Ref:
        return lengths.rule_hi.get(node.name, INF)
    widest = max((lengths.hi(c) for row in node.moves for c, _ in row), default=0)
    return INF if node.max is None else node.max * max(widest, 0)


def _references(node: Node) -> Iterator[str]:
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is Ref:
            yield n.name
        elif type(n) in (Seq, Alt):
            stack.extend(n.items)
        elif type(n) is Repeat:
            stack.append(n.item)


def _recursive(rules: dict[str, Node]) -> set[str]:
    """The rules that can reach themselves."""
    edges = {name: set(_references(body)) & rules.keys() for name, body in rules.items()}
    out = set()
    for start in rules:
        seen, todo = set(), list(edges[start])
        while todo:
            name = todo.pop()
            if name == start:
                out.add(start)
                break
            if name not in seen:
                seen.add(name)
                todo.extend(edges[name])
    return out


def _children_first(rules: dict[str, Node]) -> list[str]:
    """The rules, each after those it refers to (cycles broken anywhere)."""
    order: list[str] = []
    state: dict[str, int] = {}
    for start in rules:
        stack = [(start, iter(sorted(set(_references(rules[start])) & rules.keys())))]
        state.setdefault(start, 1)
        if state[start] == 2:
            continue
        while stack:
            name, refs = stack[-1]
            following = next((r for r in refs if r not in state), None)
            if following is None:
                stack.pop()
                state[name] = 2
                order.append(name)
            else:
                state[following] = 1
                stack.append((following, iter(sorted(set(_references(rules[following])) & rules.keys()))))
    return order


def _step(b: int, parts: int) -> int:
    """`b` rounded down to one of `parts` steps between a power of two and the next, so a rule
    is copied for few budgets (a recursive rule for fewer still)."""
    if b < 2 * parts:
        return b
    top = 1 << (b.bit_length() - 1)
    return top + (b - top) // (top // parts) * (top // parts)


class _Bounder:
    def __init__(self, g: Grammar):
        self.source = g.rules
        self.lengths = ByteLengths(self.source)
        self.rules: dict[str, Node] = {}
        self.copies: dict[tuple[str, int], str] = {}

    def ref(self, name: str, b: int) -> Node:
        if self.lengths.rule_hi[name] <= b:
            self._keep(name)
            return Ref(name)
        if self.lengths.rule_lo[name] > b:
            return NOTHING
        stepped = _step(b, 2 if name in self.lengths.recursive else 8)
        if self.lengths.rule_lo[name] <= stepped:  # else the budget as it is: the rule still fits
            b = stepped
        copy = self.copies.get((name, b))
        if copy is None:
            # A suffix: a copy is not the rule it was made from, and keeps none of its marks.
            copy = self.copies[(name, b)] = f"{name}@{b}"
            self.rules[copy] = NOTHING  # a placeholder while its body is bounded
            self.rules[copy] = self.node(self.source[name], b)
        return Ref(copy)

    def _keep(self, name: str) -> None:
        """A rule kept whole, with every rule it reaches."""
        todo = [name]
        while todo:
            n = todo.pop()
            if n not in self.rules:
                self.rules[n] = self.source[n]
                todo.extend(_references(self.source[n]))

    def node(self, node: Node, b: int) -> Node:
        lengths = self.lengths
        if lengths.hi(node) <= b:
            for name in _references(node):
                self._keep(name)
            return node
        if lengths.lo(node) > b:
            return NOTHING
        kind = type(node)
        if kind is Chars:
            top = _UTF8_TOPS[b - 1] if b <= 3 else None
            return node if top is None else chars((lo, min(hi, top)) for lo, hi in node.ranges if lo <= top)
        if kind is Alt:
            return alt(*(self.node(item, b) for item in node.items))
        if kind is Seq:
            return seq(*(self.node(item, share) for item, share in zip(node.items, self._shares(node.items, b))))
        if kind is Repeat:
            return self._repeat(node, b)
        if kind is Ref:
            return self.ref(node.name, b)
        return self._counted(node, b)

    def _shares(self, items: tuple[Node, ...], b: int) -> list[int]:
        """Each item's budget: its shortest, and a share of the rest, the items that want
        least served first (water filling)."""
        lo = [int(self.lengths.lo(item)) for item in items]
        want = [self.lengths.hi(item) - low for item, low in zip(items, lo)]
        left = b - sum(lo)
        given = [0] * len(items)
        open_ = sorted(range(len(items)), key=lambda i: want[i])
        for n, i in enumerate(open_):
            fair = left // (len(open_) - n)
            given[i] = int(min(want[i], fair))
            left -= given[i]
        return [low + extra for low, extra in zip(lo, given)]

    def _repeat(self, node: Repeat, b: int) -> Node:
        item, least = node.item, node.min
        lo, hi = self.lengths.lo(item), self.lengths.hi(item)
        most = INF if node.max is None else node.max
        forms = []
        if hi < INF and hi > 0 and b // hi >= least:  # copies at their longest
            forms.append(repeat(self.node(item, int(hi)), least, int(min(most, b // hi))))
        if 0 < lo < hi and b // lo > (b // hi if hi < INF else 0) and b // lo >= least:
            # copies at their shortest: as many of those as fit (an ASCII string's characters)
            forms.append(repeat(self.node(item, int(lo)), least, int(min(most, b // lo))))
        if not forms:
            # fewer copies, each with room: at least `min`, up to four, each at least twice its shortest
            fits = b // (2 * lo) if lo else b
            count = int(max(least, min(most, 4, max(fits, 1 if lo <= b else 0))))
            if count == 0:
                return EMPTY
            forms.append(repeat(self.node(item, b // count), least, count))
        return alt(*forms)

    def _counted(self, node: Counted, b: int) -> Node:
        widest = max((self.lengths.hi(c) for row in node.moves for c, _ in row), default=1)
        most = b // max(int(widest), 1)
        if most < node.min:
            return NOTHING
        bounded = Counted(node.moves, node.final, node.min, most, self.node(node.fallback, b))
        return bounded if liveness(bounded).live[0] & 1 else NOTHING


def within_bytes(g: Grammar, n: int) -> Grammar:
    """The sentences of `g` at most `n` UTF-8 bytes long, as a grammar whose longest sentence is
    at most `n` bytes (so a model writing at least one byte a token finishes within `n`
    tokens). `g` itself where it is bounded so already. Raises `LimitError` where no sentence
    of `g` fits, or none could be kept that does."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise CompileError(f"a byte budget must be a whole number >= 0, not {n!r}", keyword="max_bytes")
    bounder = _Bounder(g)
    lengths = bounder.lengths
    shortest, longest = lengths.rule_lo[g.root], lengths.rule_hi[g.root]
    if longest <= n:
        return g
    if shortest > n:
        raise LimitError(f"no sentence of {g!r} fits {n} bytes: the shortest is {int(shortest)} bytes",
                         keyword="max_bytes")
    try:
        root = bounder.ref(g.root, n)
    except RecursionError:
        raise LimitError(f"{g!r} nests too deeply to bound to {n} bytes", keyword="max_bytes") from None
    if not isinstance(root, Ref):
        raise LimitError(f"no sentence of {g!r} could be kept within {n} bytes", keyword="max_bytes")
    out = Grammar(bounder.rules, root.name, dropped=g.dropped, ignored=g.ignored, source=g.source,
                  schema=g.schema, reasoning=g.reasoning, grounding=g.grounding)
    low, high = shortest_bytes(out), longest_bytes(out)
    if low is None:
        raise LimitError(f"no sentence of {g!r} could be kept within {n} bytes (its shortest is "
                         f"{int(shortest)} bytes)", keyword="max_bytes")
    if high is None or high > n:  # a rule that recurses without reading a byte
        raise LimitError(f"{g!r} could not be bounded to {n} bytes", keyword="max_bytes")
    return out


def shortest_bytes(g: Grammar) -> int | None:
    """The length in UTF-8 bytes of `g`'s shortest sentence (None: it has none)."""
    found = ByteLengths(g.rules).rule_lo[g.root]
    return None if found == INF else int(found)


def longest_bytes(g: Grammar) -> int | None:
    """An upper bound on the length in UTF-8 bytes of `g`'s sentences, exact where it holds
    no recursion or counted language (None: unbounded)."""
    found = ByteLengths(g.rules).rule_hi[g.root]
    return None if found == INF else max(int(found), 0)

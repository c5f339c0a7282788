"""The recognizer's tables: nullable, FIRST and FOLLOW sets of the lowered grammar, then one
flat row per state (what it expects, its owner, its one-character lookahead), and the
predictions made from them, memoised per (nonterminal, next character)."""

from __future__ import annotations

import weakref
from bisect import bisect_right

from .._errors import CompileError, LimitError
from .._ir import Rules
from .._ir.ranges import Ranges, intersects, union
from .lowering import Lowering
from .scan import class_pattern

MAX_STATES = 2_000_000

EOF = -1  # the end of the text, as a member of lookahead sets

# State kinds: what the state expects next.
DONE, NT, CHAR, LIT, CLASS, RUN, REP, SCAN = range(8)


class Members(dict):
    """Membership of characters in a set of ranges, memoised per character ('' is the end)."""

    __slots__ = ("_bounds",)
    _MEMO = 4096

    def __init__(self, ranges: Ranges):
        super().__init__()
        self._bounds = [b for lo, hi in ranges if hi >= 0 for b in (max(lo, 0), hi + 1)]
        self[""] = bool(ranges) and ranges[0][0] == EOF

    def __missing__(self, ch: str) -> bool:
        found = bisect_right(self._bounds, ord(ch)) & 1 == 1
        if len(self) < self._MEMO:
            self[ch] = found
        return found


def _sym_first(sym: tuple, first: list[Ranges]) -> Ranges:
    tag = sym[0]
    if tag == "N":
        return first[sym[1]]
    if tag == "L":
        cp = ord(sym[1][0])
        return ((cp, cp),)
    return sym[1]


def _sym_nullable(sym: tuple, nullable: list[bool]) -> bool:
    tag = sym[0]
    if tag == "N":
        return nullable[sym[1]]
    if tag == "R":
        return sym[2] == 0
    if tag == "S":
        return sym[3]
    return False


def _propagate(sets: list[Ranges], edges: list[list[int]]) -> None:
    """Close `sets` under `sets[b] ⊇ sets[a]` for every edge a -> b."""
    work = [a for a in range(len(sets)) if sets[a] and edges[a]]
    while work:
        a = work.pop()
        for b in edges[a]:
            grown = union(sets[b], sets[a])
            if grown != sets[b]:
                sets[b] = grown
                work.append(b)


def _nullable(prods: list[list[list[tuple]]], reps: dict) -> list[bool]:
    """Which nonterminals derive the empty string."""
    nullable = [False] * len(prods)
    changed = True
    while changed:
        changed = False
        for nt in range(len(prods)):
            if nullable[nt]:
                continue
            rep = reps.get(nt)
            if rep is not None:
                null = rep[1] == 0 or nullable[rep[0]]
            else:
                null = any(all(_sym_nullable(s, nullable) for s in p) for p in prods[nt])
            if null:
                nullable[nt] = changed = True
    return nullable


def _first(prods: list[list[list[tuple]]], reps: dict, nullable: list[bool]) -> list[Ranges]:
    """The code points each nonterminal's sentences can start with."""
    first: list[Ranges] = [()] * len(prods)
    into: list[list[int]] = [[] for _ in prods]
    for nt, rows in enumerate(prods):
        rep = reps.get(nt)
        if rep is not None:
            into[rep[0]].append(nt)
            first[nt] = rep[3]
            continue
        for prod in rows:
            for sym in prod:
                if sym[0] == "N":
                    into[sym[1]].append(nt)
                else:
                    first[nt] = union(first[nt], _sym_first(sym, first))
                if not _sym_nullable(sym, nullable):
                    break
    _propagate(first, into)
    return first


Suffixes = list[tuple[list[Ranges], list[bool]]]


def _follow(
    prods: list[list[list[tuple]]],
    reps: dict,
    nullable: list[bool],
    first: list[Ranges],
    start: int,
) -> tuple[list[Ranges], list[Suffixes]]:
    """FOLLOW of each nonterminal (the end of text as `EOF`), and for every production
    position the FIRST of the rest of the production and whether that rest is nullable."""
    suffixes: list[Suffixes] = []
    follow: list[Ranges] = [()] * len(prods)
    feeds: list[list[int]] = [[] for _ in prods]
    follow[start] = ((EOF, EOF),)
    for nt, rows in enumerate(prods):
        table: Suffixes = []
        for prod in rows:
            sfirst: list[Ranges] = [()] * (len(prod) + 1)
            snull = [True] * (len(prod) + 1)
            for i in range(len(prod) - 1, -1, -1):
                sym = prod[i]
                if sym[0] == "N":
                    follow[sym[1]] = union(follow[sym[1]], sfirst[i + 1])
                    if snull[i + 1]:
                        feeds[nt].append(sym[1])
                if _sym_nullable(sym, nullable):
                    sfirst[i] = union(_sym_first(sym, first), sfirst[i + 1])
                    snull[i] = snull[i + 1]
                else:
                    sfirst[i] = _sym_first(sym, first)
                    snull[i] = False
            table.append((sfirst, snull))
        suffixes.append(table)
        rep = reps.get(nt)
        if rep is not None:
            item, _, most, _ = rep
            feeds[nt].append(item)
            if most is None or most >= 2:
                follow[item] = union(follow[item], first[nt])
    _propagate(follow, feeds)
    return follow, suffixes


class Compiled:
    """Flat state tables for the recognizer, plus memoised predictions."""

    def __init__(self, rules: Rules):
        low = Lowering(rules)
        try:
            root = low.run()
        except RecursionError:
            raise LimitError("grammar is nested too deeply to lower", keyword="node") from None
        prods, reps = low.prods, low.reps
        start = low.new_nt()
        prods[start] = [[("N", root)]]
        count = len(prods)
        nullable = _nullable(prods, reps)
        for nt, (item, least, most, scan) in list(reps.items()):
            if nullable[item] and least:
                # Missing copies can always be empty ones.
                reps[nt] = (item, 0, most, scan)
        first = _first(prods, reps, nullable)
        follow, suffixes = _follow(prods, reps, nullable, first, start)

        members: dict[Ranges, Members] = {}

        def member(ranges: Ranges) -> Members:
            found = members.get(ranges)
            if found is None:
                found = members[ranges] = Members(ranges)
            return found

        kind: list[int] = []
        arg: list = []
        lhs: list[int] = []
        look: list[Members] = []
        initial: list[list[int]] = [[] for _ in range(count)]

        def state(k: int, a, owner: int, ahead: Ranges) -> int:
            kind.append(k)
            arg.append(a)
            lhs.append(owner)
            look.append(member(ahead))
            if len(kind) > MAX_STATES:
                raise LimitError(f"grammar lowers to more than {MAX_STATES} recognizer states")
            return len(kind) - 1

        for nt in range(count):
            rep = reps.get(nt)
            if rep is not None:
                item, least, most, scan = rep
                runs = None
                if scan:
                    alone = not intersects(scan, union(first[item], follow[nt]))
                    runs = (class_pattern(scan, most), alone, member(first[item]))
                counter = (item, least, most, runs)
                initial[nt].append(state(REP, counter, nt, union(first[nt], follow[nt])))
                state(DONE, None, nt, follow[nt])
                continue
            for prod, (sfirst, snull) in zip(prods[nt], suffixes[nt]):
                ahead = [union(f, follow[nt]) if null else f for f, null in zip(sfirst, snull)]
                initial[nt].append(len(kind))
                for i, sym in enumerate(prod):
                    tag = sym[0]
                    if tag == "N":
                        state(NT, sym[1], nt, ahead[i])
                    elif tag == "L":
                        state(CHAR if len(sym[1]) == 1 else LIT, sym[1], nt, ahead[i])
                    elif tag == "C":
                        state(CLASS, member(sym[1]), nt, ahead[i])
                    elif tag == "S":
                        state(SCAN, (sym[2], sym[3]), nt, ahead[i])
                    else:
                        alone = not intersects(sym[1], ahead[i + 1])
                        state(RUN, (class_pattern(sym[1], sym[3]), sym[2], alone), nt, ahead[i])
                state(DONE, None, nt, ahead[-1])

        self.size = len(kind)
        self.kind = kind
        self.arg = arg
        self.lhs = lhs
        self.look = look
        self.initial = initial
        self.nullable = nullable
        self.start = initial[start][0]
        self.accept = self.start + 1
        self.predictions: list[dict[str, tuple[tuple[int, ...], frozenset[int]]]] = [
            {} for _ in range(count)
        ]

    def predict(self, nt: int, ch: str) -> tuple[tuple[int, ...], frozenset[int]]:
        """States to add when `nt` is first expected before `ch`, and the nonterminals covered.

        Follows leftmost expectations transitively, stepping over nullable symbols, keeping only
        states whose lookahead admits `ch`.
        """
        cache = self.predictions[nt]
        found = cache.get(ch)
        if found is not None:
            return found
        kind, arg, look, nullable = self.kind, self.arg, self.look, self.nullable
        states: list[int] = []
        added: set[int] = set()
        covered = {nt}
        stack = [nt]
        while stack:
            for s in self.initial[stack.pop()]:
                while s not in added and look[s][ch]:
                    added.add(s)
                    states.append(s)
                    k = kind[s]
                    if k == NT or k == REP:
                        want = arg[s] if k == NT else arg[s][0]
                        if want not in covered:
                            covered.add(want)
                            stack.append(want)
                        if k == NT and nullable[want]:
                            s += 1
                            continue
                    elif (k == RUN and arg[s][1] == 0) or (k == SCAN and arg[s][1]):
                        s += 1
                        continue
                    break
        found = cache[ch] = (tuple(states), frozenset(covered))
        if len(cache) > 4096:
            cache.clear()
        return found


_CACHE: dict[int, tuple[weakref.ref, tuple, Compiled]] = {}


def compiled(rules: Rules) -> Compiled:
    """The lowered form of `rules`, built once per Rules object while its rules stay the same."""
    key = id(rules)
    fingerprint = (rules.root, tuple(rules.rules.items()))
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is rules and _same(hit[1], fingerprint):
        return hit[2]
    if rules.root not in rules.rules:
        raise CompileError(f"start rule {rules.root!r} is not defined", keyword="root")
    compiled = Compiled(rules)
    ref = weakref.ref(rules, lambda _, key=key: _CACHE.pop(key, None))
    _CACHE[key] = (ref, fingerprint, compiled)
    return compiled


def _same(old: tuple, new: tuple) -> bool:
    if old[0] != new[0] or len(old[1]) != len(new[1]):
        return False
    return all(a[0] == b[0] and a[1] is b[1] for a, b in zip(old[1], new[1]))

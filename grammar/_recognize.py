"""The executable meaning of a grammar: does the whole of a text belong to its language?

An Earley recognizer over a lowered form of the IR, exact for every context-free grammar the IR
can state (left recursion, nullable rules, ambiguity included). The lowering runs once per
`Rules` object and is cached:

- every rule and every nested alternation becomes a nonterminal with flat productions; literal
  runs are single terminals, matched in one step;
- a repeat of a code-point class (`[a-z]{0,50}`, `[^"\\\\]*`) is one terminal that scans the whole
  run with a compiled regular expression; `(class | other)*` becomes `class* (other class*)*` so
  string bodies scan the same way;
- any other repeat is one state with a counter in the item, so `{0,5000}` costs no copies;
- each state knows its one-character lookahead set (FIRST of what follows it, and FOLLOW of its
  rule where that is nullable), and an item whose next character can't start what it still needs
  is never added. Predictions are precomputed per (nonterminal, next character).

Empty completions are never replayed: a state waiting on a nullable nonterminal is advanced when
it is predicted (Aycock and Horspool), which makes the recognizer exact with nullable rules.

Work is bounded: the items created, completions tried and characters scanned are counted, and
past `WORK_BASE + WORK_PER_CHAR * len(text)` the recognizer raises `LimitError` rather than
answering, so the same question gets the same verdict on every machine.
"""

from __future__ import annotations

import re
import weakref
from bisect import bisect_right
from functools import lru_cache

from ._errors import CompileError, LimitError
from ._ir import Alt, Chars, Counted, Lit, Node, Ref, Repeat, Rules, Seq, liveness, one_char_ranges
from ._ir.ranges import Ranges, intersects, normal, union

WORK_BASE = 250_000
WORK_PER_CHAR = 250
MAX_STATES = 2_000_000

_EOF = -1  # the end of the text, as a member of lookahead sets

# State kinds: what the state expects next.
_DONE, _NT, _CHAR, _LIT, _CLASS, _RUN, _REP, _SCAN = range(8)


def accepts(rules: Rules, text: str, *, work_limit: int | None = None) -> bool:
    """Whether the whole of `text` (code points) is a sentence of `rules`, starting at the root.

    `work_limit` overrides the default bound on work; exceeding it raises `LimitError`.
    """
    compiled = _compiled(rules)
    limit = WORK_BASE + WORK_PER_CHAR * len(text) if work_limit is None else work_limit
    return _recognize(compiled, text, limit)


# --- character sets ------------------------------------------------------------------------


class _Members(dict):
    """Membership of characters in a set of ranges, memoised per character ('' is the end)."""

    __slots__ = ("_bounds",)
    _MEMO = 4096

    def __init__(self, ranges: Ranges):
        super().__init__()
        self._bounds = [b for lo, hi in ranges if hi >= 0 for b in (max(lo, 0), hi + 1)]
        self[""] = bool(ranges) and ranges[0][0] == _EOF

    def __missing__(self, ch: str) -> bool:
        found = bisect_right(self._bounds, ord(ch)) & 1 == 1
        if len(self) < self._MEMO:
            self[ch] = found
        return found


@lru_cache(maxsize=1024)
def _class_pattern(ranges: Ranges, most: int | None):
    """The `match` of a regex for a run of up to `most` code points of `ranges`."""
    count = "*" if most is None or most >= 1_000_000_000 else f"{{0,{most}}}"
    return re.compile(f"{_class_regex(ranges)}{count}").match


def _class_regex(ranges: Ranges) -> str:
    """A regex class of the code points of `ranges`."""
    return "[" + "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges) + "]"


# --- lowering ------------------------------------------------------------------------------

# Symbols of a lowered production:
#   ("N", nonterminal) | ("L", text) | ("C", ranges) | ("R", ranges, min, max)
#   | ("S", first ranges, scan, nullable): a `Counted` language, whose ends `scan` finds


def _class_of(node: Node) -> Ranges | None:
    """The code points `node` matches if it matches exactly one of a set of them, else None."""
    one = one_char_ranges(node)
    if one is not None:
        return normal(one)
    if isinstance(node, Alt):
        out: Ranges = ()
        for item in node.items:
            part = _class_of(item)
            if part is None:
                return None
            out = union(out, part)
        return out
    return None


class _Lowering:
    """Rules -> nonterminals with flat productions (or counted repeats)."""

    def __init__(self, rules: Rules):
        self.rules = rules
        self.prods: list[list[list[tuple]]] = []
        self.reps: dict[int, tuple[int, int, int | None, Ranges]] = {}
        self.rule_nt: dict[str, int] = {}
        self.alt_nt: dict[int, int] = {}
        self.wrap_nt: dict[int, int] = {}
        self.repeat_syms: dict[int, list[tuple]] = {}
        self.todo: list[tuple[int, Node]] = []
        self.made: list[Node] = []  # nodes built here, kept alive while ids key the caches

    def run(self) -> int:
        root = self.rule(self.rules.root)
        while self.todo:
            nt, node = self.todo.pop()
            if isinstance(node, Alt) and len(node.items) > 1 and _class_of(node) is None:
                self.prods[nt] = [self.symbols(item) for item in node.items]
            else:
                self.prods[nt] = [self.symbols(node)]
        return root

    def new_nt(self) -> int:
        self.prods.append([])
        return len(self.prods) - 1

    def rule(self, name: str) -> int:
        nt = self.rule_nt.get(name)
        if nt is None:
            if name not in self.rules.rules:
                raise CompileError(f"rule {name!r} is referenced but not defined", keyword="ref")
            nt = self.rule_nt[name] = self.new_nt()
            self.todo.append((nt, self.rules.rules[name]))
        return nt

    def symbols(self, node: Node) -> list[tuple]:
        if isinstance(node, Lit):
            return [("L", node.text)] if node.text else []
        if isinstance(node, Chars):
            return [("C", normal(node.ranges))]
        if isinstance(node, Ref):
            return [("N", self.rule(node.name))]
        if isinstance(node, Seq):
            out: list[tuple] = []
            for item in node.items:
                for sym in self.symbols(item):
                    if sym[0] == "L" and out and out[-1][0] == "L":
                        out[-1] = ("L", out[-1][1] + sym[1])
                    else:
                        out.append(sym)
            return out
        if isinstance(node, Alt):
            if len(node.items) == 1:
                return self.symbols(node.items[0])
            cls = _class_of(node)
            if cls is not None:
                return [("C", cls)]
            nt = self.alt_nt.get(id(node))
            if nt is None:
                nt = self.alt_nt[id(node)] = self.new_nt()
                self.prods[nt] = [self.symbols(item) for item in node.items]
            return [("N", nt)]
        if isinstance(node, Counted):
            scan = _counted_scan(node)
            return [("S", scan.first, scan, bool(liveness(node).exits(0) & 1))]
        if isinstance(node, Repeat):
            syms = self.repeat_syms.get(id(node))
            if syms is None:
                syms = self.repeat_syms[id(node)] = self.repeat(node.item, node.min, node.max)
            return list(syms)
        raise CompileError(f"unknown grammar node {type(node).__name__}", keyword="node")

    def wrap(self, node: Node) -> int:
        """A nonterminal deriving exactly `node`."""
        nt = self.wrap_nt.get(id(node))
        if nt is None:
            syms = self.symbols(node)
            if len(syms) == 1 and syms[0][0] == "N":
                nt = syms[0][1]
            else:
                nt = self.new_nt()
                self.prods[nt] = [syms]
            self.wrap_nt[id(node)] = nt
        return nt

    def counted(self, item: int, least: int, most: int | None, scan: Ranges = ()) -> tuple:
        """A repeat of `item`, or of one code point of `scan`, counted in the item."""
        nt = self.new_nt()
        self.prods[nt] = []
        self.reps[nt] = (item, least, most, scan)
        return ("N", nt)

    def repeat(self, item: Node, least: int, most: int | None) -> list[tuple]:
        if least < 0 or (most is not None and most < least):
            return [("C", ())]
        if most == 0:
            return []
        cls = _class_of(item)
        if cls is not None:
            if not cls:
                return [] if least == 0 else [("C", ())]
            if least == most == 1:
                return [("C", cls)]
            return [("R", cls, least, most)]
        if least == most == 1:
            return self.symbols(item)
        if least == 0 and most == 1:
            nt = self.new_nt()
            self.prods[nt] = [self.symbols(item), []]
            return [("N", nt)]
        if isinstance(item, Alt):
            single = [part for part in item.items if _class_of(part) is not None]
            other = [part for part in item.items if _class_of(part) is None]
            cls = ()
            for part in single:
                cls = union(cls, _class_of(part))
            if cls and other:
                rest = other[0] if len(other) == 1 else Alt(tuple(other))
                self.made.append(rest)
                if most is not None:
                    # Bounded: the repeat scans runs of the class itself and waits on the rest.
                    return [self.counted(self.wrap(rest), least, most, cls)]
                # (c | e)* == c* (e c*)*: the class runs scan in one step.
                run = ("R", cls, 0, None)
                body = self.new_nt()
                self.prods[body] = [self.symbols(rest) + [run]]
                tail = [run, self.counted(body, 0, None)]
                if least == 0:
                    return tail
                return self.repeat(item, least, least) + tail
        return [self.counted(self.wrap(item), least, most)]


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
    """FOLLOW of each nonterminal (the end of text as `_EOF`), and for every production
    position the FIRST of the rest of the production and whether that rest is nullable."""
    suffixes: list[Suffixes] = []
    follow: list[Ranges] = [()] * len(prods)
    feeds: list[list[int]] = [[] for _ in prods]
    follow[start] = ((_EOF, _EOF),)
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


class _Compiled:
    """Flat state tables for the recognizer, plus memoised predictions."""

    def __init__(self, rules: Rules):
        low = _Lowering(rules)
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

        members: dict[Ranges, _Members] = {}

        def member(ranges: Ranges) -> _Members:
            found = members.get(ranges)
            if found is None:
                found = members[ranges] = _Members(ranges)
            return found

        kind: list[int] = []
        arg: list = []
        lhs: list[int] = []
        look: list[_Members] = []
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
                    runs = (_class_pattern(scan, most), alone, member(first[item]))
                counter = (item, least, most, runs)
                initial[nt].append(state(_REP, counter, nt, union(first[nt], follow[nt])))
                state(_DONE, None, nt, follow[nt])
                continue
            for prod, (sfirst, snull) in zip(prods[nt], suffixes[nt]):
                ahead = [union(f, follow[nt]) if null else f for f, null in zip(sfirst, snull)]
                initial[nt].append(len(kind))
                for i, sym in enumerate(prod):
                    tag = sym[0]
                    if tag == "N":
                        state(_NT, sym[1], nt, ahead[i])
                    elif tag == "L":
                        state(_CHAR if len(sym[1]) == 1 else _LIT, sym[1], nt, ahead[i])
                    elif tag == "C":
                        state(_CLASS, member(sym[1]), nt, ahead[i])
                    elif tag == "S":
                        state(_SCAN, (sym[2], sym[3]), nt, ahead[i])
                    else:
                        alone = not intersects(sym[1], ahead[i + 1])
                        state(_RUN, (_class_pattern(sym[1], sym[3]), sym[2], alone), nt, ahead[i])
                state(_DONE, None, nt, ahead[-1])

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
                    if k == _NT or k == _REP:
                        want = arg[s] if k == _NT else arg[s][0]
                        if want not in covered:
                            covered.add(want)
                            stack.append(want)
                        if k == _NT and nullable[want]:
                            s += 1
                            continue
                    elif (k == _RUN and arg[s][1] == 0) or (k == _SCAN and arg[s][1]):
                        s += 1
                        continue
                    break
        found = cache[ch] = (tuple(states), frozenset(covered))
        if len(cache) > 4096:
            cache.clear()
        return found


_CACHE: dict[int, tuple[weakref.ref, tuple, _Compiled]] = {}


def _compiled(rules: Rules) -> _Compiled:
    """The lowered form of `rules`, built once per Rules object while its rules stay the same."""
    key = id(rules)
    fingerprint = (rules.root, tuple(rules.rules.items()))
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is rules and _same(hit[1], fingerprint):
        return hit[2]
    if rules.root not in rules.rules:
        raise CompileError(f"start rule {rules.root!r} is not defined", keyword="root")
    compiled = _Compiled(rules)
    ref = weakref.ref(rules, lambda _, key=key: _CACHE.pop(key, None))
    _CACHE[key] = (ref, fingerprint, compiled)
    return compiled


def _same(old: tuple, new: tuple) -> bool:
    if old[0] != new[0] or len(old[1]) != len(new[1]):
        return False
    return all(a[0] == b[0] and a[1] is b[1] for a, b in zip(old[1], new[1]))


# --- recognition ---------------------------------------------------------------------------


def _recognize(g: _Compiled, text: str, limit: int) -> bool:
    """Earley sets over positions 0..n; an item is one int: state + S * (origin + (n+1) * count)."""
    n = len(text)
    size = g.size
    span = n + 1
    step = size * span  # one more repetition of a counted repeat
    chars = list(text)
    chars.append("")
    kind, arg, lhs, look, nullable = g.kind, g.arg, g.lhs, g.look, g.nullable
    predictions, predict = g.predictions, g.predict

    pending: list[list[int] | None] = [None] * span
    seen: list[set[int] | None] = [None] * span
    waiting: list[dict[int, list[int]] | None] = [None] * span
    pending[0] = [g.start]
    seen[0] = {g.start}
    furthest = 0
    used = 0

    for j in range(span):
        work = pending[j]
        if work is None:
            if j > furthest:
                return False
            continue
        pending[j] = None
        here = seen[j]
        ch = chars[j]
        waits: dict[int, list[int]] = {}
        waiting[j] = waits
        predicted: set[int] = set()
        base = size * j
        while work:
            key = work.pop()
            s = key % size
            k = kind[s]
            if k == _NT:
                want = arg[s]
                queue = waits.get(want)
                if queue is None:
                    waits[want] = [key]
                else:
                    queue.append(key)
                if want not in predicted:
                    cached = predictions[want].get(ch)
                    states, covered = cached if cached is not None else predict(want, ch)
                    predicted |= covered
                    for t in states:
                        t += base
                        if t not in here:
                            here.add(t)
                            work.append(t)
                if nullable[want] and look[s + 1][ch]:
                    key += 1
                    if key not in here:
                        here.add(key)
                        work.append(key)
            elif k == _DONE:
                origin = key // size
                if origin == j:
                    continue  # empty: its waiters were advanced when they predicted it
                queue = waiting[origin].get(lhs[s])
                if not queue:
                    continue
                used += len(queue)
                if used > limit:
                    raise LimitError(
                        f"recognizer work exceeded {limit} steps at offset {j} of {n}",
                        keyword="accepts",
                    )
                for w in queue:
                    t = w % size
                    if kind[t] == _REP:
                        least, most = arg[t][1], arg[t][2]
                        if most is None and w // step >= least:
                            nxt = w
                        else:
                            nxt = w + step
                    else:
                        t += 1
                        nxt = w + 1
                    if look[t][ch] and nxt not in here:
                        here.add(nxt)
                        work.append(nxt)
            elif k == _CHAR:
                if ch == arg[s]:
                    p = j + 1
                    if look[s + 1][chars[p]]:
                        key += 1
                        found = seen[p]
                        if found is None:
                            seen[p] = {key}
                            pending[p] = [key]
                            if p > furthest:
                                furthest = p
                        elif key not in found:
                            found.add(key)
                            pending[p].append(key)
            elif k == _CLASS:
                if arg[s][ch]:
                    p = j + 1
                    if look[s + 1][chars[p]]:
                        key += 1
                        found = seen[p]
                        if found is None:
                            seen[p] = {key}
                            pending[p] = [key]
                            if p > furthest:
                                furthest = p
                        elif key not in found:
                            found.add(key)
                            pending[p].append(key)
            elif k == _LIT:
                lit = arg[s]
                if text.startswith(lit, j):
                    p = j + len(lit)
                    if look[s + 1][chars[p]]:
                        key += 1
                        found = seen[p]
                        if found is None:
                            seen[p] = {key}
                            pending[p] = [key]
                            if p > furthest:
                                furthest = p
                        elif key not in found:
                            found.add(key)
                            pending[p].append(key)
            elif k == _RUN:
                match, least, alone = arg[s]
                after = look[s + 1]
                if least == 0 and after[ch] and key + 1 not in here:
                    here.add(key + 1)
                    work.append(key + 1)
                m = match(text, j).end() - j
                if m:
                    used += m >> 4
                    ends = (m,) if alone else range(max(least, 1), m + 1)
                    nxt = key + 1
                    for e in ends:
                        p = j + e
                        if e < least or not after[chars[p]]:
                            continue
                        found = seen[p]
                        if found is None:
                            seen[p] = {nxt}
                            pending[p] = [nxt]
                            if p > furthest:
                                furthest = p
                        elif nxt not in found:
                            found.add(nxt)
                            pending[p].append(nxt)
            elif k == _SCAN:
                scan, null = arg[s]
                after = look[s + 1]
                if null and after[ch] and key + 1 not in here:
                    here.add(key + 1)
                    work.append(key + 1)
                nxt = key + 1
                for p in scan(text, j):
                    used += 1
                    if not after[chars[p]]:
                        continue
                    found = seen[p]
                    if found is None:
                        seen[p] = {nxt}
                        pending[p] = [nxt]
                        if p > furthest:
                            furthest = p
                    elif nxt not in found:
                        found.add(nxt)
                        pending[p].append(nxt)
            else:  # _REP: a counted repeat, item count in the key
                rest = key // size
                origin = rest % span
                count = rest // span
                item, least, most, runs = arg[s]
                if count >= least and origin != j and look[s + 1][ch]:
                    done = s + 1 + size * origin
                    if done not in here:
                        here.add(done)
                        work.append(done)
                if most is not None and count >= most:
                    continue
                queue = waits.get(item)
                if queue is None:
                    waits[item] = [key]
                else:
                    queue.append(key)
                if item not in predicted:
                    cached = predictions[item].get(ch)
                    states, covered = cached if cached is not None else predict(item, ch)
                    predicted |= covered
                    for t in states:
                        t += base
                        if t not in here:
                            here.add(t)
                            work.append(t)
                if runs is None:
                    continue
                # Copies that are single code points of the scanned class (bounded repeats
                # only): one run at a time.
                match, alone, starts = runs
                m = match(text, j).end() - j
                if m > most - count:
                    m = most - count
                if not m:
                    continue
                used += m >> 4
                done = s + 1 + size * origin
                again = s + size * origin
                after = look[s + 1]
                for e in (m,) if alone else range(1, m + 1):
                    p = j + e
                    c = count + e
                    nxt_ch = chars[p]
                    for nxt in (
                        done if c >= least and after[nxt_ch] else -1,
                        again + step * c if c < most and starts[nxt_ch] else -1,
                    ):
                        if nxt < 0:
                            continue
                        found = seen[p]
                        if found is None:
                            seen[p] = {nxt}
                            pending[p] = [nxt]
                            if p > furthest:
                                furthest = p
                        elif nxt not in found:
                            found.add(nxt)
                            pending[p].append(nxt)
        used += len(here)
        if used > limit:
            raise LimitError(
                f"recognizer work exceeded {limit} steps at offset {j} of {n}", keyword="accepts"
            )
        if j < n:
            seen[j] = None
    final = seen[n]
    return final is not None and g.accept in final


class _CountedScan:
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
def _counted_scan(node: Counted) -> _CountedScan:
    return _CountedScan(node)


def _regex_of(node: Node) -> str:
    """A regular expression for a small node without repeats or references (a character's
    JSON spellings)."""
    if isinstance(node, Lit):
        return re.escape(node.text)
    if isinstance(node, Chars):
        return _class_regex(node.ranges)
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

"""How many tokens a grammar state is from a complete document: what a runtime needs to close
the document before its token budget runs out.

Two bounds, cached per state:

- `lower`: a breadth-first search over token transitions, exact when it reaches a complete
  state within `MAX_COMPLETION_SEARCH` states; otherwise the depth it reached, still a lower
  bound.
- `upper`: a count of tokens that certainly suffices. A shortest completion spelled in
  single-byte tokens gives one: per NFA state, the fewest bytes to the end of its rule (a
  fixed point over byte, epsilon and call edges, taking byte edges only where the vocabulary
  has a single-byte token), summed over a configuration's return stack, on paths that stay
  within the stack-depth bound. Each exact search adds its own, for every state on the path it
  found.

A decoder that only takes tokens after which `upper` still fits in the budget left ends with a
whole document whenever the first state's bound fitted: some token always keeps it fitting.

What a search proves about the states on its path is kept per matcher (`Known`), never shared
across matchers: the search from a state is a function of that state alone (and cached as one),
but which states a matcher asked about depends on its document, so bounds pooled across
matchers would make one document's steering depend on what others were written before it.
"""

from __future__ import annotations

import heapq
import threading
import weakref
from collections import defaultdict, deque
from typing import TYPE_CHECKING, Iterator

import numpy as np

from .._automaton.states import MAX_STACK_DEPTH, stack_depth
from .._errors import MatcherError
from .common import _distinct

if TYPE_CHECKING:
    from .._automaton.nfa import _NFA, CountedBlock
    from .compiled import CompiledGrammar

# Breadth-first search for the shortest completion stops after this many states; the
# distance found so far is then still a valid lower bound.
MAX_COMPLETION_SEARCH = 2_000

UNKNOWN = 1 << 30  # no bound known


_OF: weakref.WeakKeyDictionary[CompiledGrammar, Completion] = weakref.WeakKeyDictionary()
_OF_LOCK = threading.Lock()


def completion_of(compiled: CompiledGrammar) -> Completion:
    """The distances of `compiled`'s states, found as matchers ask for them and kept as long as
    `compiled` lives (shared by every matcher over it)."""
    found = _OF.get(compiled)
    if found is None:
        with _OF_LOCK:
            found = _OF.get(compiled)
            if found is None:
                found = _OF[compiled] = Completion(compiled)
    return found


class Known:
    """What one matcher's searches proved: distances to completion (`lower`: exact along the
    shortest paths they found, else the bound a search that ran out reached), and lower bounds
    for the states such a search went through (`beyond`). Kept per matcher (see the module
    docstring)."""

    __slots__ = ("lower", "beyond")

    def __init__(self) -> None:
        self.lower: dict[int, tuple[int, bool]] = {}
        self.beyond: dict[int, int] = {}


class Completion:
    """Distances to completion for one compiled grammar (thread-safe under its lock)."""

    def __init__(self, compiled: CompiledGrammar) -> None:
        # A proxy: kept for as long as the compiled grammar lives, and a strong reference back
        # would keep the grammar (and every state) alive for good.
        self.compiled = weakref.proxy(compiled)
        # Each state's own search: (depth, exact, the states it proved distances for, each with
        # its distance: a shortest path when exact, else the states it went through with the
        # lower bound each got).
        self._searches: dict[int, tuple[int, bool, tuple[tuple[int, int], ...]]] = {}
        self._spelled: dict[int, int] = {}  # upper bounds from single-byte spellings
        self._frames: tuple[list[int], list[int]] | None = None
        self._blocks: dict[int, list[tuple[int, ...]]] = {}  # see `_to_block_end`

    # -- bounds -------------------------------------------------------------------------------

    def lower(self, state: int, known: Known) -> tuple[int, bool]:
        """Fewest tokens from `state` to a complete document, and whether the count is exact;
        what the search proves goes into `known`."""
        found = known.lower.get(state)
        if found is not None:
            return found
        depth, exact, proved = self._search(state)
        if exact:
            for u, steps in proved:
                known.lower[u] = (steps, True)
        else:
            known.lower[state] = (depth, False)
            beyond = known.beyond
            for u, bound in proved:
                if beyond.get(u, 0) < bound:
                    beyond[u] = bound
        return depth, exact

    def _search(self, state: int) -> tuple[int, bool, tuple[tuple[int, int], ...]]:
        """Breadth-first search for the shortest completion from `state` (see `lower`)."""
        done = self._searches.get(state)
        if done is not None:
            return done
        a = self.compiled.automaton
        if a.accepting[state]:
            done = (0, True, ((state, 0),))
            self._searches[state] = done
            return done
        parent = {state: -1}
        reached = {state: 0}  # each state's distance from `state`
        level = [state]
        depth = 0
        while level and done is None:
            depth += 1
            following = []
            for s in level:
                for v in self.compiled.successors(s).tolist():
                    if v in parent:
                        continue
                    parent[v] = s
                    reached[v] = depth
                    if a.accepting[v]:
                        # Each state on a shortest path is exactly as far from the end as its
                        # place on it.
                        path, u = [], v
                        while u >= 0:
                            path.append((u, len(path)))
                            u = parent[u]
                        done = (depth, True, tuple(path))
                        break
                    following.append(v)
                    if len(parent) > MAX_COMPLETION_SEARCH:
                        # No state closer than `depth` completes: one `k` tokens in is at least
                        # `depth - k` from completion.
                        done = (depth, False, tuple((u, depth - k) for u, k in reached.items()))
                        break
                if done is not None:
                    break
            level = following
        if done is None:
            raise MatcherError(f"no completion is reachable from {a.describe(state)}")
        self._searches[state] = done
        return done

    def upper(self, state: int, known: Known | None = None) -> int:
        """Tokens that certainly suffice to complete from `state` (`UNKNOWN` if no bound is
        known): the single-byte spelling's count, or a shorter one `known` holds."""
        if self.compiled.automaton.accepting[state]:
            return 0
        spelled = self._spelled.get(state)
        if spelled is None:
            spelled = self._spelled[state] = self._spelling_length(state)
        proved = None if known is None else known.lower.get(state)
        return min(spelled, proved[0]) if proved is not None and proved[1] else spelled

    def within(self, state: int, n: int, known: Known) -> bool:
        """Whether a completion of at most `n` tokens is certain (False: not proved)."""
        if self.upper(state, known) <= n:
            return True
        if known.beyond.get(state, 0) > n:
            return False  # a search that ran out of states went through it: too far, no new one
        low, exact = self.lower(state, known)
        return exact and low <= n

    # -- tokens -------------------------------------------------------------------------------

    def tokens_within(self, state: int, n: int, known: Known) -> np.ndarray:
        """Allowed token ids after which a completion in `n - 1` more tokens is certain, EOS
        where the document is already whole; the shortest completion's tokens if none is."""
        c = self.compiled
        ids, ends = c.token_ends(state)
        fits = [v for v in _distinct(ends).tolist() if self.upper(v, known) <= n - 1]
        if not fits:
            return self.shortest_tokens(state, known)
        chosen = ids[np.isin(ends, fits)]
        if c.automaton.accepting[state]:
            chosen = np.concatenate([chosen, c.tables.eos_ids])
        return _distinct(chosen).astype(np.int32)

    def shortest_tokens(self, state: int, known: Known) -> np.ndarray:
        """Allowed token ids that begin a shortest completion from `state` (EOS if complete).

        Where the search cannot find the shortest (a long bounded string numbers a state per
        character, past what it may visit), those that begin the shortest completion known
        for certain: each such token lowers that bound, so following them always ends.
        """
        c = self.compiled
        if c.automaton.accepting[state]:
            return c.tables.eos_ids
        ids, ends = c.token_ends(state)
        candidates = _distinct(ends).tolist()
        if not candidates:
            raise MatcherError(f"no token is allowed in {c.automaton.describe(state)}")
        if state not in known.beyond:
            # A search that finds a shortest path records it in `upper`. Inside the states a
            # search that ran out went through, another would cover less and run out too:
            # steering there ranks tokens by the certain bounds alone, searching again once
            # past them (so a document thousands of tokens from whole costs a search every
            # few dozen tokens, not at every one).
            self.lower(state, known)
        dist = {v: self.upper(v, known) for v in candidates}
        if min(dist.values()) >= UNKNOWN:  # nothing certain: the nearest lower bound
            dist = {v: self.lower(v, known)[0] for v in candidates}
        nearest = min(dist.values())
        best = [v for v in candidates if dist[v] == nearest]
        return _distinct(ids[np.isin(ends, best)]).astype(np.int32)

    # -- single-byte spellings ----------------------------------------------------------------

    def _spelling_length(self, state: int) -> int:
        """The shortest completion from `state` in single-byte tokens, within the depth bound."""
        to_end, pushes = self._frame_distances()
        best = UNKNOWN
        for q, stack in self.compiled.automaton.configs[state]:
            total = to_end[q]
            depth = stack_depth(stack)
            if total >= UNKNOWN or depth + pushes[q] > MAX_STACK_DEPTH:
                continue
            while stack:
                ret, stack, _ = stack
                depth -= 1
                if to_end[ret] >= UNKNOWN or depth + pushes[ret] > MAX_STACK_DEPTH:
                    total = UNKNOWN
                    break
                total += to_end[ret]
            best = min(best, total)
        return best

    def _frame_distances(self) -> tuple[list[int], list[int]]:
        """Per NFA state: the fewest spellable bytes to the end of its rule, and how many calls
        deep that shortest path goes.

        Knuth's generalisation of Dijkstra: a call edge costs the callee's distance plus the
        return state's, both nonnegative, so settling states in order of distance converges.
        """
        if self._frames is not None:
            return self._frames
        nfa = self.compiled.automaton.nfa
        is_tail = self.compiled.automaton.is_tail_return
        n = len(nfa.eps)
        reachable = np.concatenate([[0], np.cumsum(self.compiled.tables.single_bytes)]).tolist()
        # By state, only for the states that have some (a list per state would make tens of
        # thousands the cycle collector then walks, where a counted language is long).
        steps: defaultdict[int, list[int]] = defaultdict(list)  # byte edges a single token can take
        users: defaultdict[int, list[int]] = defaultdict(list)  # states whose distance depends on one
        # A bounded `Counted` language's states are left out of the fixed point: the fewest
        # bytes from each to its language's end are found layer by layer (`_to_block_end`), so
        # its entry stands for them all and the rest are filled in once its end is known.
        entries: dict[int, tuple[int, int]] = {}  # entry -> (fewest bytes to its end, end)
        inside: list[tuple[int, int]] = []  # the runs of states the blocks' layers hold
        for block in nfa.counted_blocks:
            bytes_to_end = self._to_block_end(block, reachable)
            entries[block.entry] = (bytes_to_end[0][0], block.end)
            users[block.end].append(block.entry)
            inside.extend((first, first + size) for first, size, _, _ in block.layers)
        for q in _outside(n, inside):
            for lo, hi, t in nfa.byte_edges[q]:
                if reachable[hi + 1] > reachable[lo]:
                    steps[q].append(t)
                    users[t].append(q)
            for t in nfa.eps[q]:
                users[t].append(q)
            for callee, ret in nfa.calls[q]:
                users[callee].append(q)
                users[ret if ret >= 0 else q - ret].append(q)
        to_end = [UNKNOWN] * n
        pushes = [0] * n
        heap = []
        for q in range(n):
            if nfa.rule_end[q] or q == nfa.root_end:
                to_end[q] = 0
                heap.append((0, q))
        heapq.heapify(heap)
        while heap:
            dq, q = heapq.heappop(heap)
            if dq > to_end[q]:
                continue
            for p in users.get(q, ()):
                best, deep = to_end[p], pushes[p]
                through = entries.get(p)
                if through is not None and through[0] + to_end[through[1]] < best:
                    best = through[0] + to_end[through[1]]
                    deep = max(pushes[through[1]], 1 if through[0] else 0)
                for t in steps.get(p, ()):
                    if to_end[t] + 1 < best:
                        best, deep = to_end[t] + 1, pushes[t]
                for t in nfa.eps[p]:
                    if to_end[t] < best:
                        best, deep = to_end[t], pushes[t]
                for callee, ret in nfa.calls[p]:
                    if ret < 0:
                        ret = p - ret  # counted from the caller (see `_NFA.calls`)
                    cost = to_end[callee] + to_end[ret]
                    if cost < best:
                        # A tail call pushes no frame (see `Automaton.is_tail_return`).
                        deep = pushes[callee] if is_tail(ret) else max(pushes[callee] + 1, pushes[ret])
                        best = cost
                if best < to_end[p]:
                    to_end[p], pushes[p] = best, deep
                    heapq.heappush(heap, (best, p))
        for block in nfa.counted_blocks:
            after, deep = to_end[block.end], pushes[block.end]
            for (first, size, _, _), bytes_to_end in zip(block.layers, self._to_block_end(block, reachable)):
                if after >= UNKNOWN:
                    continue
                to_end[first : first + size] = [min(d + after, UNKNOWN) for d in bytes_to_end]
                pushes[first : first + size] = [deep if d == 0 else max(deep, 1) for d in bytes_to_end]
        self._frames = (to_end, pushes)
        return self._frames

    def _to_block_end(self, block: CountedBlock, reachable: list[int]) -> list[tuple[int, ...]]:
        """Per layer of `block`, the fewest single-byte tokens from each of its states to the
        language's end: from the last count back, a layer from the next one's, and the counts
        far from the bound (one shape, the same ends, the same next layer) copied. Cached."""
        found = self._blocks.get(block.entry)
        if found is not None:
            return found
        nfa = self.compiled.automaton.nfa
        cost: dict[int, int] = {}
        out: list[tuple[int, ...]] = []
        ahead: tuple[int, ...] = ()
        before: tuple | None = None
        for first, size, shape, ends in reversed(block.layers):
            key = (shape, ends, ahead)
            if key == before:
                out.append(ahead)
                continue
            here = []
            for j in range(size):
                if ends >> j & 1:
                    here.append(0)
                    continue
                best = UNKNOWN
                if shape >= 0:
                    bodies, places = block.shapes[shape][j]
                    for b, at in zip(bodies, places):
                        c = cost.get(b)
                        if c is None:
                            c = cost[b] = _spelled_body(nfa, b, reachable)
                        best = min(best, c + ahead[at])
                here.append(min(best, UNKNOWN))
            before = key
            ahead = tuple(here)
            out.append(ahead)
        out.reverse()
        self._blocks[block.entry] = out
        return out


def _outside(n: int, runs: list[tuple[int, int]]) -> Iterator[int]:
    """The states 0..n-1 outside the runs [a, b)."""
    at = 0
    for a, b in sorted(runs):
        yield from range(at, a)
        at = max(at, b)
    yield from range(at, n)


def _spelled_body(nfa: _NFA, start: int, reachable: list[int]) -> int:
    """The fewest single-byte tokens spelling one string of the body that starts at `start`
    (a character of a `Counted` language: byte and epsilon edges to its rule's end), or
    UNKNOWN where it calls anything or no single-byte tokens spell it."""
    dist = {start: 0}
    todo = deque([start])
    while todo:
        q = todo.popleft()
        d = dist[q]
        if nfa.calls[q]:
            return UNKNOWN
        if nfa.rule_end[q]:
            return d
        for t in nfa.eps[q]:
            if dist.get(t, UNKNOWN) > d:
                dist[t] = d
                todo.appendleft(t)
        for lo, hi, t in nfa.byte_edges[q]:
            if reachable[hi + 1] > reachable[lo] and dist.get(t, UNKNOWN) > d + 1:
                dist[t] = d + 1
                todo.append(t)
    return UNKNOWN

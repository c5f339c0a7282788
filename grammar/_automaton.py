"""The grammar IR lowered to a byte-level automaton, determinised lazily.

Code points become UTF-8 byte ranges; each rule becomes a piece of one NFA. References to rules
used once are inlined; references inside a recursive cycle, to rules used in several places, and
the item of a long counted repeat (one call per count) become *calls* that push a return state.
A configuration is an NFA state plus a stack of return states, and one deterministic state is
the closed set of configurations the input so far can be in: a DFA where the grammar is
regular, a pushdown automaton (bounded in depth) where it recurses.

States are numbered on first reach, and each successor is found on first use, one byte class
at a time (most states are only ever left by one or two of their bytes). Bytes the automaton
never tells apart share a class (`class_of`); `rows[s][class_of[b]]` is the successor of state
`s` on byte `b` (-1: dead, -2: not found yet), and the numpy `table` (the same, one int16 or
int32 row per state) is what the vectorised token walk in `_masks` gathers from.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ._analysis import left_recursion, nullable, nullable_rules
from ._errors import CompileError, LimitError
from ._ir import Alt, Chars, Lit, Node, Ref, Repeat, Rules, Seq, walk

DEAD = -1
UNBUILT = -2

MAX_NFA_STATES = 400_000
MAX_DFA_STATES = 200_000
MAX_STACK_DEPTH = 64
MAX_CLOSURE = 20_000
_SIZE_CHECK = 20_000  # NFA states after which a lower bound on the total is worked out once
_SPELLED_REPEAT = 4_096  # states past which a counted repeat calls its item instead of copying it
_SPELLED_COPIES = 64  # ... or copies past which it does (the counts far from its bounds share masks)
# ... or, for an item that reads one character (a small finite language, as a string's character
# is), copies past which it does: each count's mask then comes from one profile of the tokens
# (see `_masks`), not a walk of the vocabulary per count.
_CHARACTER_COPIES = 8
_CHARACTER_NODES = 64  # nodes past which an item is not taken for one character
_FEW_CELLS = 4  # successors of one state a vectorised walk computes one by one, not as a row
# Node levels that rules inlined within one another may nest to in all, past which the next
# rule is called instead: emitting and sizing a fragment recurse per level, and a chain of rules
# each used once (the rest of an object of hundreds of optional members, each "rest" holding the
# next; a long string automaton's states) nests as deep as it is long. Calling a rule that does
# not recurse keeps the language.
_INLINE_DEPTH = 160


# --- UTF-8 lowering --------------------------------------------------------------------------

_UTF8_BOUNDS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))


@lru_cache(maxsize=4096)
def utf8_ranges(lo: int, hi: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Byte-range sequences whose union encodes exactly the code points lo..hi."""
    out: list[list[tuple[int, int]]] = []
    for blo, bhi in _UTF8_BOUNDS:
        a, b = max(lo, blo), min(hi, bhi)
        if a <= b:
            _split(a, b, out)
    return tuple(tuple(seq) for seq in out)


def _split(lo: int, hi: int, out: list[list[tuple[int, int]]]) -> None:
    # Split until the range is "rectangular": every continuation byte spans its full range.
    n = len(chr(lo).encode("utf-8", "surrogatepass"))
    for i in range(1, n):
        m = (1 << (6 * i)) - 1
        if lo & ~m != hi & ~m:
            if lo & m != 0:
                _split(lo, lo | m, out)
                _split((lo | m) + 1, hi, out)
                return
            if hi & m != m:
                _split(lo, (hi & ~m) - 1, out)
                _split(hi & ~m, hi, out)
                return
    a = chr(lo).encode("utf-8", "surrogatepass")
    b = chr(hi).encode("utf-8", "surrogatepass")
    out.append([(x, y) for x, y in zip(a, b)])


# --- rule graph analysis ---------------------------------------------------------------------


def _recursive_rules(graph: dict[str, list[str]]) -> set[str]:
    """Names of rules that lie on a reference cycle (Tarjan's SCC, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: set[str] = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    scc.append(w)
                    if w == node:
                        break
                if len(scc) > 1 or node in graph[node]:
                    out.update(scc)
    return out


def _shared_rules(rules: Rules, graph: dict[str, list[str]], recursive: set[str]) -> set[str]:
    """Rules referred to from several places that do not recurse: emitted once and called, so
    the states inside them share their token sets across every place that uses them, and so
    the automaton stays in proportion to the grammar (a rule inlined at two places that inlines
    one at two places, and so on, as an object's optional members do, doubles at each level)."""
    uses: dict[str, int] = {}
    for name in graph:
        for node in walk(rules.rules[name]):
            if isinstance(node, Ref) and node.name not in recursive:
                uses[node.name] = uses.get(node.name, 0) + 1
    return {name for name, n in uses.items() if n > 1}


def check_left_recursion(rules: Rules, graph: dict[str, list[str]], recursive: set[str]) -> None:
    """Refuse left recursion: a rule that can reach itself before consuming any input (only
    rules on a reference cycle can)."""
    if not recursive:
        return
    reachable = {name: rules.rules[name] for name in graph}
    cycle = left_recursion(reachable, nullable_rules(reachable))
    if cycle:
        raise CompileError(
            f"rule {cycle[0]!r} is left-recursive ({' -> '.join(cycle)})", keyword="left-recursion"
        )


# --- NFA ----------------------------------------------------------------------------------


class _NFA:
    """Thompson-style NFA over bytes with call edges for recursive rules."""

    def __init__(self, rules: Rules, graph: dict[str, list[str]]):
        self.rules = rules
        # Each state's edges are tuples, extended as they are added: tuples of numbers drop out
        # of the cycle collector's view, where hundreds of lists per grammar would stay in it.
        self.byte_edges: list[tuple[tuple[int, int, int], ...]] = []
        self.eps: list[tuple[int, ...]] = []
        self.calls: list[tuple[tuple[int, int], ...]] = []  # (callee start state, return state)
        self.rule_end: list[bool] = []
        self.recursive = _recursive_rules(graph)
        check_left_recursion(rules, graph, self.recursive)
        self.shared = _shared_rules(rules, graph, self.recursive)
        self.starts: dict[str, int] = {}
        self.pending: list[tuple[Node, int, tuple[str, ...]]] = []  # (rule or body, its start, inlining)
        self.bodies: dict[Node, int] = {}  # items of long counted repeats, emitted once and called
        # Return state of a call of a body -> (repeat, copies made on return, min, max): what
        # lets states that differ only in counts far from both bounds share a mask.
        self.counted: dict[int, tuple[int, int, int, int | None]] = {}
        # Repeat number -> (its body's start, the state its copies end in): where a count's
        # state goes on once the repeat is done (see `CompiledGrammar._counted_mask`).
        self.count_sites: dict[int, tuple[int, int]] = {}
        self._sites = 0
        self._nullable: set[str] | None = None
        self._depths: dict[str, int] = {}  # see `_depth_of`
        # The return state of a frame whose caller is unknown: a state seen only from inside a
        # rule (see `Automaton.frame_split`) pops to it where the rule ends.
        self.exit = self.new()
        self.root_start = self.new()
        try:
            self.root_end = self._emit(rules.rules[rules.root], self.root_start, (rules.root,))
            while self.pending:
                node, start, inlining = self.pending.pop()
                self.rule_end[self._emit(node, start, inlining)] = True
        except RecursionError:  # a single rule nested deeper than Python's stack goes
            raise LimitError("grammar nests too deeply to build its automaton", keyword="depth") from None
        # A shared rule or a repeated body does not recurse, so its calls nest no deeper than
        # the rules do: they go past the stack-depth bound, which would otherwise change the
        # language.
        self.shared_starts = {self.starts[name] for name in self.shared if name in self.starts}
        self.shared_starts.update(self.bodies.values())
        # The byte each state reads where it is a *link* of a literal (one single-byte edge,
        # nothing else: a configuration there has one successor, a configuration again), else -1.
        self.link_bytes = [
            edges[0][0] if len(edges) == 1 and edges[0][0] == edges[0][1] and not eps and not calls and not end
            else -1
            for edges, eps, calls, end in zip(self.byte_edges, self.eps, self.calls, self.rule_end)
        ]
        self.link_bytes[self.root_end] = -1

    def _fewest_states(self) -> int:
        """A lower bound on the states `_emit` makes: the root and each rule it reaches a call
        of emitted once, inlined rules again at each use (a class counted as one state; stops
        counting past the limit)."""
        rules = self.rules.rules
        called = self.recursive | self.shared
        sizes: dict[int, int] = {}  # by node identity: shared subtrees are counted once per use
        todo = [self.rules.root]
        seen = set(todo)
        total = 0
        while todo and total <= MAX_NFA_STATES:
            calls: list[str] = []
            name = todo.pop()
            total += self._fewest(rules[name], rules, called, sizes, calls, self._depth_of(name))
            for name in calls:
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
        return total

    def _fewest(self, node: Node, rules: dict[str, Node], called: set[str], sizes: dict[int, int],
                calls: list[str], chain: int) -> int:
        """The fewest states `node` makes, inside inlined rules `chain` node levels deep in all
        (see `_inlines`); the called rules it meets go into `calls`."""
        kind = type(node)
        if kind is Lit:
            return len(node.text)
        if kind is Chars:
            return 1
        found = sizes.get(id(node))
        if found is not None:
            return found
        if kind is Seq or kind is Alt:
            n = kind is Alt  # an alternation's end state
            for item in node.items:
                n += self._fewest(item, rules, called, sizes, calls, chain)
                if n > MAX_NFA_STATES:
                    break
        elif kind is Repeat:  # `min` copies and a loop, or `max` copies, and one more state
            n = 1 if node.max == 0 else _repeat_states(
                self._fewest(node.item, rules, called, sizes, calls, chain), node
            )
        elif node.name not in rules:
            n = 1
        elif node.name in called or not self._inlines(chain, node.name):
            n = 1
            calls.append(node.name)
        else:  # inlined where it is used (it does not recurse)
            n = self._fewest(rules[node.name], rules, called, sizes, calls, chain + self._depth_of(node.name))
        n = min(n, MAX_NFA_STATES + 1)
        sizes[id(node)] = n
        return n

    def _check_size(self) -> None:
        """Past `_SIZE_CHECK` states, refuse a grammar whose states certainly exceed the limit
        before spending the time to find out state by state (small grammars never pay)."""
        if self._fewest_states() > MAX_NFA_STATES:
            raise _too_large()

    def new(self) -> int:
        if len(self.eps) >= MAX_NFA_STATES:
            raise _too_large()
        if len(self.eps) == _SIZE_CHECK:
            self._check_size()
        self.byte_edges.append(())
        self.eps.append(())
        self.calls.append(())
        self.rule_end.append(False)
        return len(self.eps) - 1

    def _room_for(self, n: int) -> int:
        """The number the first of `n` states about to be made gets, once they are allowed."""
        first = len(self.eps)
        if first + n > MAX_NFA_STATES:
            raise _too_large()
        if first <= _SIZE_CHECK < first + n:
            self._check_size()
        return first

    def new_chain(self, s: int, data: bytes) -> int:
        """Fresh states reading `data` one byte each from state `s`; returns the last."""
        n = len(data)
        first = self._room_for(n)
        self.byte_edges[s] += ((data[0], data[0], first),)
        self.byte_edges += [((b, b, first + i),) for i, b in enumerate(data[1:], 1)]
        self.byte_edges.append(())
        self.eps += [()] * n
        self.calls += [()] * n
        self.rule_end += [False] * n
        return first + n - 1

    def _start_of(self, name: str) -> int:
        if name not in self.starts:
            self.starts[name] = self.new()
            self.pending.append((self.rules.rules[name], self.starts[name], (name,)))
        return self.starts[name]

    def _body_of(self, node: Repeat, inlining: tuple[str, ...]) -> int | None:
        """The start of `node`'s item emitted once as a called body, where spelling out one
        copy per count would make too many states (`maxLength: 5000` over a string's
        characters, `maxItems` over objects with bounded strings: nested, they multiply) or
        many counts (a call's return state tells a count's masks apart only near the bounds:
        see `counted`); None where the copies spelled out stay few."""
        copies = node.max if node.max is not None else node.min
        if copies < 2:
            return None
        called = self.recursive | self.shared
        size = self._fewest(node.item, self.rules.rules, called, {}, [], self._chain_depth(inlining))
        if not _calls_item(size, copies, node.item):
            return None
        start = self.bodies.get(node.item)
        if start is None:
            start = self.bodies[node.item] = self.new()
            self.pending.append((node.item, start, inlining))
        return start

    def _count_site(self, node: Repeat) -> int | None:
        """A number for this repeat, where each copy reads at least a byte (so a token can
        complete no more copies than it has bytes; see `counted`), else None."""
        if self._nullable is None:
            self._nullable = nullable_rules(self.rules.rules)
        if nullable(node.item, self._nullable):
            return None
        self._sites += 1
        return self._sites

    def _copy(self, node: Repeat, body: int | None, site: int | None, done: int, s: int,
              inlining: tuple[str, ...]) -> int:
        """The copy of `node`'s item that makes `done` copies, from state `s`: spelled out, or
        a call of its `body` whose return state notes the count."""
        if body is None:
            return self._emit(node.item, s, inlining)
        ret = self.new()
        self.calls[s] += ((body, ret),)
        if site is not None:
            self.counted[ret] = (site, done, node.min, node.max)
        return ret

    def _called_counts(self, node: Repeat, body: int, site: int | None, s: int) -> int:
        """A bounded repeat whose item is called, from state `s`: the return state of each
        count and the end made at once (the `_copy` calls of a loop over the counts, in bulk:
        a 100-character string inside each of 20 spelled-out array items makes 2,000)."""
        lo, hi = node.min, node.max
        assert hi is not None and hi >= 1
        first = self._room_for(hi + 1)
        end = first + hi  # after the return states of counts 1..hi
        leave = (end,)
        self.calls[s] += ((body, first),)
        self.calls += [((body, r + 1),) for r in range(first, end - 1)]
        self.calls += [(), ()]
        if lo == 0:
            self.eps[s] += leave
        self.eps += [leave if done >= lo else () for done in range(1, hi + 1)]
        self.eps.append(())
        self.byte_edges += [()] * (hi + 1)
        self.rule_end += [False] * (hi + 1)
        if site is not None:
            self.counted.update((first + done - 1, (site, done, lo, hi)) for done in range(1, hi + 1))
            self.count_sites[site] = (body, end)
        return end

    def _emit(self, node: Node, s: int, inlining: tuple[str, ...]) -> int:
        """Add `node`'s fragment starting at state `s`; return its end state."""
        if isinstance(node, Lit):
            # Most states are these: made at once.
            return self.new_chain(s, node.text.encode("utf-8", "surrogatepass"))
        if isinstance(node, Chars):
            end = self.new()
            self._emit_chars(node, s, end)
            return end
        if isinstance(node, Seq):
            for item in node.items:
                s = self._emit(item, s, inlining)
            return s
        if isinstance(node, Alt):
            # Every branch starts at `s` itself: no fragment leads back to the state it starts
            # at (a loop gets a fresh state of its own), so no branch can run into another, and
            # `s` holds the first bytes of all of them (one configuration, not one per branch).
            end = self.new()
            for item in node.items:
                self.eps[self._emit(item, s, inlining)] += (end,)
            return end
        if isinstance(node, Repeat):
            body = self._body_of(node, inlining)
            site = self._count_site(node) if body is not None else None
            if body is not None and node.max is not None:
                return self._called_counts(node, body, site, s)
            for done in range(1, node.min + 1):
                s = self._copy(node, body, site, done, s, inlining)
            if node.max is None:
                loop = self.new()
                self.eps[s] += (loop,)
                body_end = self._copy(node, body, site, node.min + 1, loop, inlining)
                self.eps[body_end] += (loop,)
                if site is None:
                    return loop
                end = self.new()  # the loop's way out alone, without its next copy
                self.eps[loop] += (end,)
                self.count_sites[site] = (body, end)
                return end
            end = self.new()
            for done in range(node.min + 1, node.max + 1):
                self.eps[s] += (end,)
                s = self._copy(node, body, site, done, s, inlining)
            self.eps[s] += (end,)
            if site is not None:
                self.count_sites[site] = (body, end)
            return end
        if isinstance(node, Ref):
            if node.name not in self.rules.rules:
                raise CompileError(f"rule {node.name!r} is not defined", keyword="ref")
            if node.name not in self.recursive and not self._inlines(self._chain_depth(inlining), node.name):
                self.shared.add(node.name)
            if node.name in self.recursive or node.name in self.shared:
                ret = self.new()
                callee = self._start_of(node.name)
                self.calls[s] += ((callee, ret),)
                return ret
            if node.name in inlining:  # cannot happen for non-recursive rules
                raise CompileError(f"rule {node.name!r} refers to itself", keyword="ref")
            return self._emit(self.rules.rules[node.name], s, inlining + (node.name,))
        raise TypeError(f"not a grammar node: {node!r}")

    def _depth_of(self, name: str) -> int:
        """How many node levels rule `name`'s body nests (found once per rule)."""
        found = self._depths.get(name)
        if found is None:
            found = self._depths[name] = node_depth(self.rules.rules[name]) if name in self.rules.rules else 1
        return found

    def _chain_depth(self, inlining: tuple[str, ...]) -> int:
        return sum(self._depth_of(name) for name in inlining)

    def _inlines(self, chain: int, name: str) -> bool:
        """Whether rule `name` (not recursive) is inlined inside rules `chain` levels deep."""
        return chain + self._depth_of(name) <= _INLINE_DEPTH

    def _emit_chars(self, node: Chars, s: int, end: int) -> None:
        # A small trie over the byte-range sequences shares common prefixes.
        trie: dict[tuple[int, int], dict] = {}
        for lo, hi in node.ranges:
            for ranges in utf8_ranges(lo, hi):
                level = trie
                for r in ranges:
                    level = level.setdefault(r, {})
        self._emit_trie(trie, s, end)

    def _emit_trie(self, trie: dict, s: int, end: int) -> None:
        for (lo, hi), sub in trie.items():
            if not sub:
                self.byte_edges[s] += ((lo, hi, end),)
            else:
                t = self.new()
                self.byte_edges[s] += ((lo, hi, t),)
                self._emit_trie(sub, t, end)


def node_depth(node: Node) -> int:
    """Levels of nesting in `node` (references not followed; a leaf is 1), each shared subtree
    measured once; iterative, as a node may nest deeper than Python recurses."""
    depths: dict[int, int] = {}
    todo: list[tuple[Node, bool]] = [(node, False)]
    while todo:
        n, children_done = todo.pop()
        if id(n) in depths:
            continue
        kind = type(n)
        children = n.items if kind is Seq or kind is Alt else (n.item,) if kind is Repeat else ()
        if children and not children_done:
            todo.append((n, True))
            todo.extend((c, False) for c in children if id(c) not in depths)
            continue
        depths[id(n)] = 1 + max((depths[id(c)] for c in children), default=0)
    return depths[id(node)]


def _calls_item(item_states: int, copies: int, item: Node) -> bool:
    """Whether a repeat of `copies` copies of `item`, of `item_states` states, calls the item
    (see `_NFA._body_of`) rather than spelling each copy out."""
    if item_states <= 2:
        return False
    if item_states * copies > _SPELLED_REPEAT or copies > _SPELLED_COPIES:
        return True
    return copies > _CHARACTER_COPIES and is_character(item)


def is_character(node: Node) -> bool:
    """Whether `node` is a small language of bounded length, without repeats or references
    (a string's character, with its escapes): a repeat of it counts characters."""
    todo = [node]
    seen = 0
    while todo:
        n = todo.pop()
        seen += 1
        kind = type(n)
        if seen > _CHARACTER_NODES or kind is Repeat or kind is Ref:
            return False
        if kind is Seq or kind is Alt:
            todo.extend(n.items)
    return True


def _repeat_states(item_states: int, node: Repeat) -> int:
    """The fewest states a repeat of an item of `item_states` states makes: each copy spelled
    out, or one return state per copy past the body made once. (Counting the loop's copy too,
    it calls wherever `_body_of` does, so the count stays a lower bound.)"""
    copies = node.max if node.max is not None else node.min + 1
    if _calls_item(item_states, copies, node.item):
        return copies + 1
    return item_states * copies + 1


def _ascending(edges: list[tuple[int, int, int]]) -> bool:
    """Whether each edge starts where the one before it ends, or later (as a class's edges
    are made: then none overlap)."""
    end = 0
    for lo, hi, _ in edges:
        if lo < end:
            return False
        end = hi
    return True


def _too_large() -> LimitError:
    return LimitError(f"grammar too large: more than {MAX_NFA_STATES} automaton states", keyword="size")


# --- lazily determinised automaton ---------------------------------------------------------

Stack = tuple  # (return state, parent stack, depth) or () for the empty stack


class Automaton:
    """Deterministic byte automaton over sets of (NFA state, return stack) configurations."""

    # Slots: attribute reads are most of the hot paths, and stay fast however many there are.
    __slots__ = (
        "nfa", "class_of", "class_list", "_reps", "_class_edges", "n_classes", "class_bounds", "single_byte",
        "_forced", "_unbuilt", "_overlapping", "configs", "index", "accepting", "depths", "rows", "_whole", "_capacity", "table", "exits",
        "_exit_config", "_frames", "_moves", "_single_moves", "link_bytes", "links", "_jumps", "_runs",
        "_spans", "_locals", "_tails", "start",
    )

    def __init__(self, rules: Rules):
        graph = rules.graph()
        self.nfa = nfa = _NFA(rules, graph)
        self._classes(nfa)
        self.configs: list[frozenset] = []
        self.index: dict[frozenset, int] = {}
        self.accepting: list[bool] = []
        self.depths: list[int] = []  # deepest return stack among a state's configurations
        self.rows: list[list[int]] = []  # successor by byte class, UNBUILT until computed
        self._whole: list[bool] = []  # whether every cell of a state's row is computed
        self._capacity = 64  # rows of `table` and `exits`
        self.table = np.full((self._capacity, self.n_classes), UNBUILT, dtype=np.int16)
        self.exits = np.zeros(self._capacity, dtype=bool)  # states where the frame they were seen from may end
        self._exit_config = (nfa.exit, ())
        self._frames: dict[int, tuple[int, Stack, int, int] | None] = {}
        self._moves: dict[frozenset, int] = {}
        self._single_moves: dict[tuple[int, Stack], int] = {}
        self.link_bytes = nfa.link_bytes
        self.links: list[tuple[int, Stack] | None] = []  # a state's one configuration, where at a link
        self._jumps: dict[tuple[int, bytes], int] = {}  # (link state, bytes) -> where `walk` leads
        self._runs: dict[int, tuple[bytes, int, int]] = {}  # see `literal_run`
        self._spans: dict[int, list[tuple[int, int]]] = {}  # see `byte_spans`
        self._locals: dict[int, tuple[tuple[int, ...], bool, tuple[int, ...]]] = {}
        self._tails: dict[int, bool] = {}  # see `is_tail_return`
        self.start = self._intern(self._closure([(nfa.root_start, ())]))

    def _classes(self, nfa: _NFA) -> None:
        """Partition 0..255 into classes the NFA never tells apart."""
        los = {lo for edges in nfa.byte_edges for lo, _, _ in edges}
        his = {hi for edges in nfa.byte_edges for _, hi, _ in edges}
        bounds = sorted(los.union([hi + 1 for hi in his], (0, 256)))
        self.class_of = np.repeat(np.arange(len(bounds) - 1, dtype=np.int32), np.diff(bounds))
        self.class_list = self.class_of.tolist()
        self._reps: dict[tuple[int, int], list[int]] = {}
        # Each NFA state's byte edges as (first class, end class, target) intervals, made on
        # first use (see `class_edges`): most states sit inside literals, which a walk crosses
        # by their bytes alone.
        self._class_edges: list[list[tuple[int, int, int]] | None] = [None] * len(nfa.byte_edges)
        self._overlapping: set[int] = set()  # NFA states some of whose edges read a byte alike
        self.n_classes = len(bounds) - 1
        self._unbuilt = [UNBUILT] * self.n_classes  # the row of a state none of whose successors is known
        self.class_bounds = bounds  # class c holds the bytes class_bounds[c] .. class_bounds[c + 1] - 1
        # The byte of each class that holds exactly one, else -1: a state whose one live class
        # is such a class forces that byte.
        self.single_byte = [lo if hi - lo == 1 else -1 for lo, hi in zip(bounds, bounds[1:])]
        self._forced: dict[int, int] = {}

    def class_edges(self, q: int) -> list[tuple[int, int, int]]:
        """NFA state `q`'s byte edges as (first class, end class, target) intervals."""
        found = self._class_edges[q]
        if found is None:
            cl = self.class_list
            found = self._class_edges[q] = [(cl[lo], cl[hi] + 1, t) for lo, hi, t in self.nfa.byte_edges[q]]
            if len(found) > 1 and not _ascending(found):
                spans = sorted(found)
                if any(b[0] < a[1] for a, b in zip(spans, spans[1:])):
                    # Edges from different fragments that read some byte alike: a loop's body
                    # and what follows the loop (`a* ab`), branches of an alternation.
                    self._overlapping.add(q)
        return found

    def _overlaps(self, configs: frozenset) -> bool:
        """Whether the one configuration in `configs` has edges that overlap."""
        ((q, _),) = configs
        self.class_edges(q)
        return q in self._overlapping

    def representatives(self, lo: int, hi: int) -> list[int]:
        """One byte of each byte class that meets lo..hi (bytes of a class behave alike)."""
        key = (lo, hi)
        found = self._reps.get(key)
        if found is None:
            cl = self.class_list
            found = [b for b in range(lo, hi + 1) if b == lo or cl[b] != cl[b - 1]]
            self._reps[key] = found
        return found

    def _local_closure(self, q: int) -> tuple[tuple[int, ...], bool, tuple[int, ...]]:
        """What epsilon edges alone reach from NFA state `q`: the states with byte edges,
        whether the root's end is among them, and those that call or end a rule (where there
        are none, the closure of `(q, stack)` is the first on the same stack)."""
        found = self._locals.get(q)
        if found is None:
            nfa = self.nfa
            if not (nfa.eps[q] or nfa.calls[q] or nfa.rule_end[q]):  # inside a literal, say
                found = self._locals[q] = ((q,) if nfa.byte_edges[q] else (), q == nfa.root_end, ())
                return found
            seen = {q}
            todo = [q]
            states = []
            specials = []
            while todo:
                u = todo.pop()
                if nfa.byte_edges[u]:
                    states.append(u)
                if nfa.calls[u] or nfa.rule_end[u]:
                    specials.append(u)
                for t in nfa.eps[u]:
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
            found = self._locals[q] = (tuple(states), nfa.root_end in seen, tuple(specials))
        return found

    def is_tail_return(self, q: int) -> bool:
        """Whether return state `q` only ends the calling rule: a call that returns there (a
        tail call, such as each optional property's "rest of the object" in a JSON object's
        chain) goes straight back to the caller's caller, so it pushes no frame and a long
        chain of them neither deepens the stack nor meets the depth bound. Decided on first
        use: a schema of many bounded strings has thousands of calls, few of them taken."""
        found = self._tails.get(q)
        if found is None:
            found = self._tails[q] = self._only_ends_rule(q)
        return found

    def _only_ends_rule(self, q: int) -> bool:
        """Whether epsilon edges from `q` lead only to the end of its (called) rule: no byte,
        no call, and not the end of the root, which a configuration on the empty stack needs."""
        states, ends_root, specials = self._local_closure(q)
        nfa = self.nfa
        return not states and not ends_root and bool(specials) and not any(nfa.calls[u] for u in specials)

    def _closure(self, seeds: list[tuple[int, Stack]]) -> tuple[frozenset, bool]:
        if len(seeds) == 1:
            q, stack = seeds[0]
            states, ends_root, specials = self._local_closure(q)
            if not specials:  # the common case, and every case without calls: no search
                return frozenset([(u, stack) for u in states]), ends_root and not stack
        # A search over configurations, each step one state's local closure: its calls push
        # a frame, its rule ends pop one.
        nfa = self.nfa
        seen: set[tuple[int, Stack]] = set()
        todo = list(seeds)
        kernel = []
        accept = False
        while todo:
            cfg = todo.pop()
            if cfg in seen:
                continue
            seen.add(cfg)
            if len(seen) > MAX_CLOSURE:
                raise LimitError("grammar too ambiguous: state closure too large", keyword="size")
            q, stack = cfg
            if q == nfa.exit:
                kernel.append(cfg)  # the frame this state was seen from may end here
                continue
            states, ends_root, specials = self._local_closure(q)
            kernel.extend([(u, stack) for u in states])
            if ends_root and not stack:
                accept = True
            for u in specials:
                if nfa.calls[u]:
                    depth = stack_depth(stack)
                    for callee, ret in nfa.calls[u]:
                        if stack and self.is_tail_return(ret):
                            todo.append((callee, stack))  # returns where the caller would
                        elif depth < MAX_STACK_DEPTH or callee in nfa.shared_starts:
                            todo.append((callee, (ret, stack, depth + 1)))
                if nfa.rule_end[u] and stack:
                    todo.append((stack[0], stack[1]))
        return frozenset(kernel), accept

    def _intern(self, closed: tuple[frozenset, bool]) -> int:
        key = closed
        found = self.index.get(key)  # type: ignore[arg-type]
        if found is not None:
            return found
        kernel, accept = closed
        if not kernel and not accept:
            return DEAD
        sid = len(self.configs)
        if sid >= MAX_DFA_STATES:
            raise LimitError(f"more than {MAX_DFA_STATES} grammar states visited", keyword="size")
        self.configs.append(kernel)
        # The deepest stack counts; without recursion only calls of shared rules push, which
        # the depth bound does not apply to.
        self.depths.append(max([st[2] for _, st in kernel if st], default=0) if self.nfa.recursive else 0)
        self.accepting.append(accept)
        self.rows.append(self._unbuilt)  # shared until a successor is written (most never are)
        self._whole.append(False)
        self.index[key] = sid  # type: ignore[index]
        if sid >= self._capacity:
            rows = self._capacity = self._capacity * 2
            # 16-bit state numbers while they fit: half the memory for most grammars.
            dtype = np.int16 if rows <= np.iinfo(np.int16).max else np.int32
            grown = np.full((rows, self.n_classes), UNBUILT, dtype=dtype)
            grown[: self.table.shape[0]] = self.table
            self.table = grown
            self.exits = np.concatenate([self.exits, np.zeros(rows - self.exits.size, dtype=bool)])
        if self._exit_config in kernel:
            self.exits[sid] = True
        link = None
        if len(kernel) == 1:
            (link,) = kernel
            if self.link_bytes[link[0]] < 0:
                link = None
        self.links.append(link)
        return sid

    def frame_split(self, s: int) -> tuple[int, Stack, int, int] | None:
        """State `s` split at the innermost call frame its deepest configurations share:
        `(local, frame, outside, depth)`, or None where there is no such frame.

        `local` holds the configurations inside that frame, with the frame replaced by one
        that returns to the exit state and their stack depths counted from the frame's
        `depth`, so it behaves as they do until the frame ends (while the depth bound is not
        reached) and is the same state wherever the rule is called from: the tokens that stay
        inside are found once for all of them. `frame` is that frame's stack (the state it
        returns to, above its caller's stack), and `outside` the state of the other
        configurations (-1 if none), such as those that follow an integer that may end here,
        or close the array a value may start.
        """
        if s in self._frames:
            return self._frames[s]
        configs = self.configs[s]
        stacks = {stack for _, stack in configs if stack}
        found = None
        if stacks:
            high = max(stack[2] for stack in stacks)
            common = {stack for stack in stacks if stack[2] == high}
            while len(common) > 1:
                common = {stack[1] for stack in common}
            (frame,) = common
            if frame:
                base = frame[2]
                exit_frame = (self.nfa.exit, (), 0)
                if base == high:
                    # The frame is the innermost: no configuration lies deeper inside it.
                    kept = [cfg for cfg in configs if cfg[1] == frame]
                    inside = frozenset([(q, exit_frame) for q, _ in kept])
                else:
                    bottom: dict[Stack, Stack] = {frame: exit_frame}

                    def within(stack: Stack) -> bool:
                        if not stack or stack[2] < base:
                            return False
                        while stack[2] > base:
                            stack = stack[1]
                        return stack == frame

                    kept = [(q, stack) for q, stack in configs if within(stack)]
                    inside = frozenset([(q, _rebased(stack, bottom, base)) for q, stack in kept])
                outside = configs.difference(kept)
                found = (
                    self._intern((inside, False)),
                    frame,
                    self._intern((outside, False)) if outside else DEAD,
                    base,
                )
        self._frames[s] = found
        return found

    def call_starts(self, callee: int) -> tuple[int, ...] | None:
        """The NFA states with byte edges a call of `callee` starts in, or None where its start
        calls further or ends at once (then its closure depends on more than the frame)."""
        states, ends_root, specials = self._local_closure(callee)
        return None if specials or ends_root else states

    def inside_frame(self, states: tuple[int, ...]) -> int:
        """The state of NFA states `states` seen inside a call frame whoever made it, numbered
        as `frame_split` numbers its `local` states."""
        exit_frame = (self.nfa.exit, (), 0)
        return self._intern((frozenset([(q, exit_frame) for q in states]), False))

    def _successor(self, moved: list[tuple[int, Stack]]) -> int:
        key = frozenset(moved)
        nxt = self._moves.get(key)
        if nxt is None:
            nxt = self._moves[key] = self._intern(self._closure(moved))
        return nxt

    def successor(self, s: int, c: int) -> int:
        """The state after a byte of class `c` in state `s` (computed on first use, alone: most
        states are only ever left by one or two of their bytes)."""
        configs = self.configs[s]
        moves = None
        if len(configs) == 1:
            ((q, stack),) = configs
            edges = self.class_edges(q)
            if q in self._overlapping:
                moves = [(t, stack) for lo, hi, t in edges if lo <= c < hi]
            else:
                nxt = DEAD
                for lo, hi, t in edges:
                    if lo <= c < hi:
                        nxt = self.state_at(t, stack)
                        break
        else:
            moves = [(t, stack) for q, stack in configs for lo, hi, t in self.class_edges(q) if lo <= c < hi]
        if moves is not None:
            nxt = self._successor(moves) if moves else DEAD
        row = self.rows[s]
        if row is self._unbuilt:
            row = self.rows[s] = row.copy()
        row[c] = nxt
        self.table[s, c] = nxt
        return nxt

    def build(self, s: int) -> list[int]:
        """The whole successor row of state `s` (built on first use)."""
        if self._whole[s]:
            return self.rows[s]
        succ = [DEAD] * self.n_classes
        configs = self.configs[s]
        if len(configs) == 1 and not self._overlaps(configs):
            # The common case: one configuration, whose edges do not overlap.
            ((q, stack),) = configs
            for lo, hi, t in self.class_edges(q):
                succ[lo:hi] = [self.state_at(t, stack)] * (hi - lo)
        else:
            # Sweep the class boundaries: between two of them, the same edges apply.
            starts: dict[int, list[tuple[int, Stack]]] = {}
            stops: dict[int, list[tuple[int, Stack]]] = {}
            for q, stack in configs:
                for lo, hi, t in self.class_edges(q):
                    starts.setdefault(lo, []).append((t, stack))
                    stops.setdefault(hi, []).append((t, stack))
            active: list[tuple[int, Stack]] = []
            bounds = sorted(starts.keys() | stops.keys())
            for lo, hi in zip(bounds, bounds[1:]):
                for move in stops.get(lo, ()):
                    active.remove(move)
                active.extend(starts.get(lo, ()))
                if active:
                    succ[lo:hi] = [self._successor(active)] * (hi - lo)
        self.rows[s] = succ
        self.table[s] = succ
        self._whole[s] = True
        return succ

    def gather(self, states: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """`table[states, classes]`, computing the cells not built yet (a state asked for
        many of its bytes is built whole)."""
        nxt = self.table[states, classes]
        unbuilt = nxt == UNBUILT
        if np.count_nonzero(unbuilt):
            wanted: dict[int, list[int]] = {}
            width = self.n_classes
            # A set, not np.unique: the cells to build are few, and np.unique's fixed cost is
            # most of a walk's time.
            for key in sorted(set((states[unbuilt].astype(np.int64) * width + classes[unbuilt]).tolist())):
                s, c = divmod(key, width)
                wanted.setdefault(s, []).append(c)
            for s, cells in wanted.items():
                if len(cells) > _FEW_CELLS:
                    self.build(s)
                else:
                    for c in cells:
                        self.successor(s, c)
            nxt = self.table[states, classes]
        return nxt

    def step(self, s: int, byte: int) -> int:
        c = self.class_list[byte]
        nxt = self.rows[s][c]
        return self.successor(s, c) if nxt == UNBUILT else nxt

    def byte_row(self, s: int) -> np.ndarray:
        """The successor of `s` on each of the 256 bytes, as a numpy row."""
        self.build(s)
        return self.table[s][self.class_of]

    def walk(self, s: int, data: bytes) -> int:
        """The state after `data` from state `s` (DEAD if it leaves the grammar). A run of
        bytes along a literal is read at once, without numbering the states inside it."""
        if self.links[s] is not None:
            # Walks from inside a literal are remembered: they number no state to find again.
            found = self._jumps.get((s, data))
            if found is None:
                found = self._jumps[(s, data)] = self._walk(s, data)
            return found
        return self._walk(s, data)

    def _walk(self, s: int, data: bytes) -> int:
        cl = self.class_list
        rows = self.rows
        links = self.links
        link_bytes = self.link_bytes
        edges = self.nfa.byte_edges
        i = 0
        n = len(data)
        while i < n:
            link = links[s]
            if link is not None:
                q, stack = link
                j = i
                while j < n and link_bytes[q] == data[j]:
                    q = edges[q][0][2]
                    j += 1
                if j == i:
                    return DEAD
                s = self.state_at(q, stack)
                i = j
            else:
                c = cl[data[i]]
                nxt = rows[s][c]
                s = self.successor(s, c) if nxt == UNBUILT else nxt
                i += 1
            if s < 0:
                return DEAD
        return s

    def byte_spans(self, s: int) -> list[tuple[int, int]]:
        """The bytes some configuration of state `s` has an edge on, as sorted, disjoint
        half-open ranges (a successor may still be dead, where the depth bound cuts a call)."""
        found = self._spans.get(s)
        if found is None:
            bounds = self.class_bounds
            found = []
            for lo, hi in sorted({(lo, hi) for q, _ in self.configs[s] for lo, hi, _t in self.class_edges(q)}):
                b0, b1 = bounds[lo], bounds[hi]
                if found and b0 <= found[-1][1]:
                    found[-1] = (found[-1][0], max(found[-1][1], b1))
                else:
                    found.append((b0, b1))
            self._spans[s] = found
        return found

    def literal_run(self, q: int) -> tuple[bytes, int, int]:
        """The literal that link NFA state `q` lies in: its bytes, the offset of `q`'s byte
        among them, and the NFA state after the last (found once per literal, from the first
        of its links asked for)."""
        found = self._runs.get(q)
        if found is None:
            edges = self.nfa.byte_edges
            link_bytes = self.link_bytes
            data = bytearray()
            links = []
            p = q
            while (b := link_bytes[p]) >= 0:
                data.append(b)
                links.append(p)
                p = edges[p][0][2]
            text = bytes(data)
            for offset, link in enumerate(links):
                self._runs[link] = (text, offset, p)
            found = self._runs[q]
        return found

    def state_at(self, q: int, stack: Stack) -> int:
        """The state of the closure of one configuration (numbered on first reach)."""
        key = (q, stack)
        nxt = self._single_moves.get(key)
        if nxt is None:
            # A link's closure is itself: one byte edge and nothing else.
            closed = (frozenset((key,)), False) if self.link_bytes[q] >= 0 else self._closure([key])
            nxt = self._single_moves[key] = self._intern(closed)
        return nxt

    def forced_byte(self, s: int) -> int:
        """The one byte that can follow in state `s`, or -1 (several can, none can, or the
        document may also end here)."""
        found = self._forced.get(s)
        if found is None:
            found = -1
            link = self.links[s]
            if link is not None and self.link_bytes[self.nfa.byte_edges[link[0]][0][2]] >= 0:
                # Inside a literal, with more of it to come: that byte, its state not numbered.
                found = self.link_bytes[link[0]]
            elif not self.accepting[s]:
                found = self._one_byte(s)
            self._forced[s] = found
        return found

    def _one_byte(self, s: int) -> int:
        """The byte of the one single-byte class every edge of state `s` reads, else -1
        (looked at until a second class shows up: string states have dozens of edges)."""
        only = None
        for q, _ in self.configs[s]:
            for lo, hi, _t in self.class_edges(q):
                if only is None:
                    only = (lo, hi)
                elif only[0] != lo or only[1] != hi:
                    return -1
        if only is None or only[1] - only[0] != 1:
            return -1
        byte = self.single_byte[only[0]]
        return byte if byte >= 0 and self.step(s, byte) >= 0 else -1

    def can_extend(self, s: int) -> bool:
        return any(t >= 0 for t in self.build(s))

    def stuck_at_depth_limit(self, s: int, limit: int = 10_000) -> bool:
        """Whether `s`, at the stack-depth bound, can neither finish nor return below it.

        The bound cuts off calls, so a state there may only lead to dead ends; one that can
        pop back to a frame under the bound, or accept, is not stuck (searched within `limit`
        states). Calls to shared rules go past the bound, so returning from one of them
        to a frame still at the bound is no way out.
        """
        if self.depths[s] < MAX_STACK_DEPTH:
            return False
        seen = {s}
        todo = [s]
        while todo and len(seen) < limit:
            u = todo.pop()
            if self.accepting[u] or self.depths[u] < MAX_STACK_DEPTH:
                return False
            for v in set(self.build(u)):
                if v >= 0 and v not in seen:
                    seen.add(v)
                    todo.append(v)
        return not todo

    def describe(self, s: int) -> str:
        """A short, human-readable account of where state `s` stands in the grammar."""
        if s < 0:
            return "dead state"
        nfa = self.nfa
        expects = sorted({(lo, hi) for q, _ in self.configs[s] for lo, hi, _t in nfa.byte_edges[q]})
        shown = ", ".join(_byte_range(lo, hi) for lo, hi in expects[:8])
        more = ", ..." if len(expects) > 8 else ""
        depth = max((stack_depth(st) for _, st in self.configs[s]), default=0)
        return f"state {s} (depth {depth}, expects bytes {shown}{more}; complete={self.accepting[s]})"


def _rebased(stack: Stack, bottom: dict[Stack, Stack], base: int) -> Stack:
    """`stack` with its frames at depth `base` and below replaced as `bottom` maps them (the
    frames found on the way are added to it)."""
    moved = bottom.get(stack)
    if moved is None:
        moved = bottom[stack] = (stack[0], _rebased(stack[1], bottom, base), stack[2] - base)
    return moved


def _byte_range(lo: int, hi: int) -> str:
    def one(b: int) -> str:
        return repr(chr(b)) if 32 <= b < 127 else f"0x{b:02x}"

    return one(lo) if lo == hi else f"{one(lo)}-{one(hi)}"


def stack_depth(stack: Stack) -> int:
    """How many return states `stack` holds."""
    return stack[2] if stack else 0

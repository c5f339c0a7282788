"""The grammar IR as one Thompson-style NFA over bytes, with call edges where a rule recurses,
is shared, or is the item of a long counted repeat (one call per count)."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from .._ir.analysis import nullable, nullable_rules
from .._errors import CompileError, LimitError
from .._ir import Alt, Chars, Counted, Lit, Node, Ref, Repeat, Rules, Seq, liveness
from .._ir.marks import is_key_text
from .._ir.nodes import height
from .graph import _recursive_rules, _shared_rules, check_left_recursion
from .utf8 import Utf8Shape, utf8_shape

MAX_NFA_STATES = 400_000
_SIZE_CHECK = 20_000  # NFA states after which a lower bound on the total is worked out once
_SPELLED_REPEAT = 4_096  # states past which a counted repeat calls its item instead of copying it
_SPELLED_COPIES = 64  # ... or copies past which it does (the counts far from its bounds share masks)
# ... or, for an item that reads one character (a small finite language, as a string's character
# is), copies past which it does: each count's mask then comes from one profile of the tokens
# (see `_masks`), not a walk of the vocabulary per count.
_CHARACTER_COPIES = 8
_CHARACTER_NODES = 64  # nodes past which an item is not taken for one character
# Node levels that rules inlined within one another may nest to in all, past which the next
# rule is called instead: emitting and sizing a fragment recurse per level, and a chain of rules
# each used once (the rest of an object of hundreds of optional members, each "rest" holding the
# next; a long string automaton's states) nests as deep as it is long. Calling a rule that does
# not recurse keeps the language.
_INLINE_DEPTH = 160


class _NFA:
    """Thompson-style NFA over bytes with call edges for recursive rules."""

    def __init__(self, rules: Rules, graph: dict[str, list[str]]):
        self.rules = rules
        # Each state's edges are tuples, extended as they are added: tuples of numbers drop out
        # of the cycle collector's view, where hundreds of lists per grammar would stay in it.
        self.byte_edges: list[tuple[tuple[int, int, int], ...]] = []
        # The states with byte edges, in the order they got their first: a `Counted` language
        # makes tens of thousands of states that only call, so scans for byte edges go here.
        self.readers: list[int] = []
        self.eps: list[tuple[int, ...]] = []
        # (callee start state, return state); a negative return state -d is the state d after
        # the caller (a `Counted` language's counts far from its bound share their rows so).
        self.calls: list[tuple[tuple[int, int], ...]] = []
        self.rule_end: list[bool] = []
        self.recursive = _recursive_rules(graph)
        check_left_recursion(rules, graph, self.recursive)
        self.shared = _shared_rules(rules, graph, self.recursive)
        self.starts: dict[str, int] = {}
        self.pending: list[tuple[Node, int, tuple[str, ...]]] = []  # (rule or body, its start, inlining)
        self.bodies: dict[Node, int] = {}  # items of long counted repeats, emitted once and called
        self.counted_bodies: dict[Counted, int] = {}  # `Counted` languages, likewise
        # Return state of a call of a body -> (repeat, copies made on return, min, max): what
        # lets states that differ only in counts far from both bounds share a mask.
        self.counted: dict[int, tuple[int, int, int, int | None]] = {}
        # The same for the return states of a `Counted` language's counts, a layer (one count's
        # states, numbered in a run) at a time: (its first state, its states' sites, count, the
        # steady counts' first and last); see `count_at`.
        self.count_layers: list[tuple[int, tuple[int, ...], int, int, int]] = []
        self._layer_starts: list[int] = []
        # Each bounded `Counted` language's states, a layer at a time (see `CountedBlock`).
        self.counted_blocks: list[CountedBlock] = []
        # Repeat number -> (its body's start, the state its copies end in): where a count's
        # state goes on once the repeat is done (see `CompiledGrammar._counted_mask`).
        self.count_sites: dict[int, tuple[int, int]] = {}
        self._sites = 0
        self._nullable: set[str] | None = None
        self._depths: dict[str, int] = {}  # see `_depth_of`
        self._heights: dict[int, int] = {}  # ... and the nodes it measured, by identity
        self._measured: set[int] = set()
        # The return state of a frame whose caller is unknown: a state seen only from inside a
        # rule (see `Automaton.frame_split`) pops to it where the rule ends.
        self.exit = self.new()
        self.root_start = self.new()
        # The states of each key text's rule (see `marks.key_text`), emitted with no call inside.
        self._key_text_spans: list[tuple[int, int]] = []
        try:
            self.root_end = self._emit(rules.rules[rules.root], self.root_start, (rules.root,))
            while self.pending:
                node, start, inlining = self.pending.pop()
                first = len(self.eps)
                self.rule_end[self._emit(node, start, inlining)] = True
                if self.starts.get(inlining[-1]) == start:  # a rule's body (not a repeat's item)
                    self._note_key_text(inlining[-1], first)
        except RecursionError:  # a single rule nested deeper than Python's stack goes
            raise LimitError("grammar nests too deeply to build its automaton", keyword="depth") from None
        # A shared rule or a repeated body does not recurse, so its calls nest no deeper than
        # the rules do: they go past the stack-depth bound, which would otherwise change the
        # language.
        self.shared_starts = {self.starts[name] for name in self.shared if name in self.starts}
        self.shared_starts.update(self.bodies.values())
        self.shared_starts.update(self.counted_bodies.values())
        # The byte each state reads where it is a *link* of a literal (one single-byte edge,
        # nothing else: a configuration there has one successor, a configuration again), else -1.
        self.link_bytes = [-1] * len(self.eps)
        for q in self.readers:
            edges = self.byte_edges[q]
            if len(edges) == 1 and edges[0][0] == edges[0][1] and not self.eps[q] and not self.calls[q] \
                    and not self.rule_end[q]:
                self.link_bytes[q] = edges[0][0]
        self.link_bytes[self.root_end] = -1
        self.key_text = bytearray(len(self.eps))  # 1 for the states of a key text's rule
        for first, end in self._key_text_spans:
            self.key_text[first:end] = b"\x01" * (end - first)

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
        elif kind is Counted:  # its entry and end, at least
            n = 2
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
        self._read(s, (data[0], data[0], first))
        self.byte_edges += [((b, b, first + i),) for i, b in enumerate(data[1:], 1)]
        self.readers += range(first, first + n - 1)
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
        return self._called_body(node.item, inlining)

    def _count_site(self, node: Repeat) -> int | None:
        """A number for this repeat, where each copy reads at least a byte (so a token can
        complete no more copies than it has bytes; see `counted`), else None."""
        if self._nullable is None:
            self._nullable = nullable_rules(self.rules.rules)
        if nullable(node.item, self._nullable):
            return None
        return self._new_site()

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
        if isinstance(node, Counted):
            # Thousands of states: emitted once and called wherever it is used (the same URL
            # argument of many tools, each compiled apart, is one language).
            start = self.counted_bodies.get(node)
            if start is None:
                start = self.counted_bodies[node] = self.new()
                self.rule_end[self._emit_counted(node, start, inlining)] = True
            ret = self.new()
            self.calls[s] += ((start, ret),)
            return ret
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
            first = len(self.eps)
            end = self._emit(self.rules.rules[node.name], s, inlining + (node.name,))
            self._note_key_text(node.name, first)
            return end
        raise TypeError(f"not a grammar node: {node!r}")

    def _emit_counted(self, node: Counted, s: int, inlining: tuple[str, ...]) -> int:
        """A state per (automaton state, count) that is reached and can still end, made a count
        at a time, each move a call of its character emitted once (or, where counts no longer
        matter, a byte edge for a one-byte character); a count's return states note
        it as a repeat's do (`counted`, a site per automaton state) where the counts keep the
        same live states (`Liveness.steady`): far from the bound they share masks. With no
        upper bound, the count stops at `min`, whose states loop among themselves."""
        live = liveness(node)
        # Without an upper bound the states loop among themselves and count nothing: a move
        # whose character is one ASCII byte is a byte edge there, not a call (a closure through
        # a call and its return costs a search, and a span of a text reads thousands of them).
        # The same few pieces recur in every row: each is looked at once, by identity (a node's
        # hash walks its fields).
        direct_of: dict[int, tuple[tuple[int, int], ...] | None] = {}
        body_of: dict[int, int] = {}
        for piece in {id(piece): piece for row in node.moves for piece, _ in row}.values():
            ranges = direct_of[id(piece)] = _ascii_ranges(piece) if node.max is None else None
            # (The counts below `min` call every character: their bodies are made where any are.)
            body_of[id(piece)] = -1 if ranges is not None and not node.min else self._called_body(piece, inlining)
        direct = [[direct_of[id(piece)] for piece, _ in row] for row in node.moves]
        bodies = [[(body_of[id(piece)], t) for piece, t in row] for row in node.moves]
        steady = live.steady
        sites = [self._new_site() for _ in node.moves] if steady is not None else None
        end = self.new()
        layer: tuple[int, ...] = (0,)  # the automaton states reached at count k, in order
        first = self.new()
        self.eps[s] += (first,)
        k = 0
        shape: tuple | None = None  # (layer, live states ahead) `rows` were made for
        block = CountedBlock(first, end, [], []) if node.max is not None else None
        if block is not None:
            self.counted_blocks.append(block)
        ending: tuple = ((), 0, 0, [])  # (layer, exits, ends, the layer's epsilon edges) last made
        while True:
            exits = live.exits(k)
            ends = 0  # the places in the layer where the language may end
            if exits:
                if ending[0] is not layer or ending[1] != exits:  # most counts repeat the last
                    ending = (layer, exits, *_ending(layer, exits, end))
                ends = ending[2]
                self.eps[first : first + len(layer)] = ending[3]  # a layer's states are new: no edges yet
            if (node.max is not None and k == node.max) or not layer:
                if block is not None:
                    block.layers.append((first, len(layer), -1, ends))
                return end
            k1 = live.after(k)
            ahead = live.live[k1]
            if k1 == k:  # no upper bound, count `min` reached: the states it goes on to loop
                loop = _closure(_targets(layer, bodies, ahead), bodies, ahead)
                nxt = self._states(len(loop))
                self._loop_moves(first, layer, bodies, direct, loop, nxt)
                self._loop_moves(nxt, loop, bodies, direct, loop, nxt)
                for i, q in enumerate(loop):
                    if exits >> q & 1:
                        self.eps[nxt + i] += (end,)
                return end
            if shape != (layer, ahead):
                shape = (layer, ahead)
                following = _targets(layer, bodies, ahead)
                at = {t: i for i, t in enumerate(following)}
                # Each state's calls, their returns counted from the caller: the next layer
                # starts right after this one, so every layer of this shape shares them.
                size = len(layer)
                relative = [
                    tuple([(b, i - size - at[t]) for b, t in bodies[q] if ahead >> t & 1]) for i, q in enumerate(layer)
                ]
                if block is not None:  # per state, the bodies called and their returns' places
                    block.shapes.append([
                        (tuple([b for b, _ in calls]), tuple([i - size - r for _, r in calls]))
                        for i, calls in enumerate(relative)
                    ])
                if sites is not None:
                    following_sites = tuple(sites[t] for t in following)
            # This count and those after it that repeat it (the same layer, exits and live
            # states ahead: all but the few near either bound, thousands under a URL's 2083),
            # made at once.
            j = k1
            if following == layer:
                while j != node.max and live.after(j) == j + 1 and live.exits(j) == exits and live.live[j + 1] == ahead:
                    j += 1
            first = self._make_layers(block, following_sites if sites is not None else None, steady, relative,
                                      ending[3] if exits else None, ends, first, len(following), k, j - k)
            layer, k = following, j

    def _loop_moves(self, at: int, states: tuple[int, ...], bodies: list[list[tuple[int, int]]],
                    direct: list[list[tuple[tuple[int, int], ...] | None]], into: tuple[int, ...],
                    first: int) -> None:
        """The moves of `states` (made from `at` on) into the states of `into` (made from
        `first` on), where counts no longer matter: a byte edge for a character of one ASCII
        byte, a call of its body for any other."""
        # `into` holds every live state a move of `states` reaches: a target outside it is dead.
        index = {t: first + i for i, t in enumerate(into)}
        for i, q in enumerate(states):
            calls = []
            edges = []
            for (b, t), ranges in zip(bodies[q], direct[q]):
                target = index.get(t)
                if target is not None:
                    if ranges is None:
                        calls.append((b, target))
                    elif len(ranges) == 1:
                        edges.append((ranges[0][0], ranges[0][1], target))
                    else:
                        edges.extend([(lo, hi, target) for lo, hi in ranges])
            self.calls[at + i] = tuple(calls)
            if edges:  # the states are new: no edges yet
                self.readers.append(at + i)
                self.byte_edges[at + i] = tuple(edges)

    def _make_layers(self, block: CountedBlock | None, sites: tuple | None, steady: tuple[int, int] | None,
                     relative: list, eps: list | None, ends: int, first: int, next_size: int, k: int, m: int) -> int:
        """Counts k..k+m-1 of a `Counted` language, where each after the first repeats it: the
        layer of count k stands at `first` (its ending edges made); each layer gets `relative`
        (its calls), each after the first `eps` (its ending edges), and each next count's
        layer its states (`next_size` of them; where m > 1, as many as this one's). Returns
        where count k+m's layer starts."""
        size = len(relative)
        nxt = self._states(next_size + size * (m - 1))
        assert nxt == first + size, "a layer's states must follow the last layer's"
        if eps is not None and m > 1:
            self.eps[first + size : first + size * m] = eps * (m - 1)
        if block is not None:
            shape = len(block.shapes) - 1
            block.layers.extend([(first + i * size, size, shape, ends) for i in range(m)])
        self.calls[first : first + size * m] = relative * m
        if sites is not None:
            for i in range(1, m + 1):
                if steady[0] <= k + i <= steady[1]:
                    self._layer_starts.append(first + i * size)
                    self.count_layers.append((first + i * size, sites, k + i, steady[0], steady[1]))
        return first + size * m

    @property
    def has_counts(self) -> bool:
        return bool(self.counted or self.count_layers)

    def count_at(self, ret: int) -> tuple[int, int, int, int | None] | None:
        """What return state `ret` counts, as `counted` holds it (a repeat's, or a `Counted`
        language's count layer's), or None."""
        found = self.counted.get(ret)
        if found is not None or not self.count_layers:
            return found
        i = bisect_right(self._layer_starts, ret) - 1
        if i < 0:
            return None
        first, sites, k, least, most = self.count_layers[i]
        return (sites[ret - first], k, least, most) if ret - first < len(sites) else None

    def _states(self, n: int) -> int:
        """`n` fresh states at once; returns the first."""
        first = self._room_for(n)
        self.byte_edges += [()] * n
        self.eps += [()] * n
        self.calls += [()] * n
        self.rule_end += [False] * n
        return first

    def _note_key_text(self, name: str, first: int) -> None:
        """Note the states made from `first` on as a key text's, where rule `name` is marked
        one (`marks.key_text`) and they hold no call (a rule called inside would stand a frame
        deeper than the key's others)."""
        if is_key_text(name) and not any(self.calls[first:]):
            self._key_text_spans.append((first, len(self.eps)))

    def _called_body(self, node: Node, inlining: tuple[str, ...]) -> int:
        """The start of `node` emitted once as a body its users call."""
        start = self.bodies.get(node)
        if start is None:
            start = self.bodies[node] = self.new()
            self.pending.append((node, start, inlining))
        return start

    def _new_site(self) -> int:
        self._sites += 1
        return self._sites

    def _depth_of(self, name: str) -> int:
        """How many node levels rule `name`'s body nests (found once per rule)."""
        found = self._depths.get(name)
        if found is None:
            found = 1
            if name in self.rules.rules:  # nodes shared between rules measured once
                found = height(self.rules.rules[name], self._heights, self._measured)
            self._depths[name] = found
        return found

    def _chain_depth(self, inlining: tuple[str, ...]) -> int:
        return sum(self._depth_of(name) for name in inlining)

    def _inlines(self, chain: int, name: str) -> bool:
        """Whether rule `name` (not recursive) is inlined inside rules `chain` levels deep."""
        return chain + self._depth_of(name) <= _INLINE_DEPTH

    def _emit_chars(self, node: Chars, s: int, end: int) -> None:
        self._emit_shape(utf8_shape(node.ranges), s, end, {})

    def _emit_shape(self, shape: Utf8Shape, s: int, end: int, made: dict[int, int]) -> None:
        """States for `shape` (see `utf8_shape`) from `s` to `end`, one per distinct subshape."""
        for (lo, hi), rest in shape:
            if rest is None:
                self._read(s, (lo, hi, end))
                continue
            t = made.get(id(rest))
            if t is None:
                t = made[id(rest)] = self.new()
                self._emit_shape(rest, t, end, made)
            self._read(s, (lo, hi, t))

    def _read(self, s: int, edge: tuple[int, int, int]) -> None:
        """Add byte edge `edge` (first byte, last byte, target) to state `s`."""
        if not self.byte_edges[s]:
            self.readers.append(s)
        self.byte_edges[s] += (edge,)


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
        if seen > _CHARACTER_NODES or kind is Repeat or kind is Ref or kind is Counted:
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


@dataclass(slots=True)
class CountedBlock:
    """Where a bounded `Counted` language's states stand: one layer per count, each a run of
    states from `first`, with the shape of its calls (per state, the bodies it calls and the
    places of their return states in the next layer; -1: the last count, which calls nothing)
    and the places where the language may end (a bit each, an edge to `end`). Analyses that
    would visit every state (the fewest bytes to a rule's end) go a layer at a time, and the
    counts far from the bound, which repeat one shape, once."""

    entry: int
    end: int
    layers: list[tuple[int, int, int, int]]  # (first state, states, shape, ends)
    shapes: list[list[tuple[tuple[int, ...], tuple[int, ...]]]]


def _too_large() -> LimitError:
    return LimitError(f"grammar too large: more than {MAX_NFA_STATES} automaton states", keyword="size")


def _ending(layer: tuple[int, ...], exits: int, end: int) -> tuple[int, list[tuple[int, ...]]]:
    """The places in `layer` of its states in `exits` (a bit each) as bits, and the epsilon
    edges of the layer's states: to `end` at those places."""
    edges = [(end,) if exits >> q & 1 else () for q in layer]
    return sum(1 << i for i, e in enumerate(edges) if e), edges


def _targets(states: tuple[int, ...], bodies: list[list[tuple[int, int]]], live: int) -> tuple[int, ...]:
    """The live states the moves of `states` go to, in order."""
    alive = _members(live)
    return tuple(sorted({t for q in states for _, t in bodies[q] if t in alive}))


def _members(x: int) -> set[int]:
    """The positions of `x`'s set bits (a test of one then costs no shift of a long number)."""
    return {i for i, bit in enumerate(reversed(bin(x)[2:])) if bit == "1"}


def _ascii_ranges(piece: Node) -> tuple[tuple[int, int], ...] | None:
    """The byte ranges of a character that is always one ASCII byte, else None."""
    if type(piece) is Lit and len(piece.text) == 1 and ord(piece.text) < 0x80:
        return ((ord(piece.text), ord(piece.text)),)
    if type(piece) is Chars and piece.ranges and piece.ranges[-1][1] < 0x80:
        return piece.ranges
    return None


def _closure(states: tuple[int, ...], bodies: list[list[tuple[int, int]]], live: int) -> tuple[int, ...]:
    """`states` and the live states their moves reach, again and again, in order."""
    found = set(states)
    todo = list(states)
    alive = _members(live)
    while todo:
        for _, t in bodies[todo.pop()]:
            if t in alive and t not in found:
                found.add(t)
                todo.append(t)
    return tuple(sorted(found))

"""The lazily determinised automaton: sets of (NFA state, return stack) configurations numbered
on first reach, each successor found on first use, one byte class at a time."""

from __future__ import annotations

import numpy as np

from .._errors import LimitError
from .._ir import Rules
from .nfa import _NFA
from .reading import ReadingMixin
from .states import (DEAD, FLAT_TAKE, MAX_CLOSURE, MAX_DFA_STATES, MAX_STACK_DEPTH, UNBUILT, Configs, Stack,
                     configurations, stack_depth)

_MANY_CELLS = 256  # unbuilt cells past which a walk groups them by state with numpy, not in Python
_FEW_CELLS = 4  # successors of one state a vectorised walk computes one by one, not as a row


class Automaton(ReadingMixin):
    """Deterministic byte automaton over sets of (NFA state, return stack) configurations."""

    # Slots: attribute reads are most of the hot paths, and stay fast however many there are.
    __slots__ = (
        "nfa", "class_of", "class_list", "_reps", "_class_edges", "n_classes", "class_bounds", "single_byte",
        "_forced", "_unbuilt", "_overlapping", "configs", "index", "accepting", "depths", "rows", "_whole", "_capacity", "table", "exits", "deep",
        "_exit_config", "_frames", "_moves", "_single_moves", "link_bytes", "links", "_jumps", "_runs",
        "_spans", "_locals", "_tails", "start",
    )

    def __init__(self, rules: Rules):
        graph = rules.graph()
        self.nfa = nfa = _NFA(rules, graph)
        self._classes(nfa)
        self.configs: list[Configs] = []
        self.index: dict[tuple[Configs, bool], int] = {}
        self.accepting: list[bool] = []
        self.depths: list[int] = []  # deepest return stack among a state's configurations
        self.rows: list[list[int]] = []  # successor by byte class, UNBUILT until computed
        self._whole: list[bool] = []  # whether every cell of a state's row is computed
        self._capacity = 64  # rows of `table` and `exits`
        self.table = np.full((self._capacity, self.n_classes), UNBUILT, dtype=np.int16)
        self.exits = np.zeros(self._capacity, dtype=bool)  # states where the frame they were seen from may end
        self.deep = np.zeros(self._capacity, dtype=bool)  # `depths` at the bound, for whole arrays of states
        self._exit_config = (nfa.exit, ())
        self._frames: dict[int, tuple[int, tuple[Stack, ...], int, int] | None] = {}
        self._moves: dict[Configs, int] = {}
        self._single_moves: dict[tuple[int, Stack], int] = {}
        self.link_bytes = nfa.link_bytes
        self.links: list[tuple[int, Stack] | None] = []  # a state's one configuration, where at a link
        self._jumps: dict[tuple[int, bytes], int] = {}  # (link state, bytes) -> where `walk` leads
        self._runs: dict[int, tuple[bytes, int, int]] = {}  # see `literal_run`
        self._spans: dict[int, tuple[tuple[int, int], ...]] = {}  # see `byte_spans`
        self._locals: dict[int, tuple[tuple[int, ...], bool, tuple[int, ...]]] = {}
        self._tails: dict[int, bool] = {}  # see `is_tail_return`
        self.start = self._intern(self._closure([(nfa.root_start, ())]))

    def _classes(self, nfa: _NFA) -> None:
        """Partition 0..255 into classes the NFA never tells apart."""
        los = {lo for q in nfa.readers for lo, _, _ in nfa.byte_edges[q]}
        his = {hi for q in nfa.readers for _, hi, _ in nfa.byte_edges[q]}
        bounds = sorted(los.union([hi + 1 for hi in his], (0, 256)))
        self.class_of = np.repeat(np.arange(len(bounds) - 1, dtype=np.int32), np.diff(bounds))
        self.class_list = self.class_of.tolist()
        self._reps: dict[tuple[int, int], list[int]] = {}
        # Each NFA state's byte edges as (first class, end class, target) intervals, made on
        # first use (see `class_edges`): most states sit inside literals, which a walk crosses
        # by their bytes alone.
        self._class_edges: list[tuple[tuple[int, int, int], ...] | None] = [None] * len(nfa.byte_edges)
        self._overlapping: set[int] = set()  # NFA states some of whose edges read a byte alike
        self.n_classes = len(bounds) - 1
        self._unbuilt = [UNBUILT] * self.n_classes  # the row of a state none of whose successors is known
        self.class_bounds = bounds  # class c holds the bytes class_bounds[c] .. class_bounds[c + 1] - 1
        # The byte of each class that holds exactly one, else -1: a state whose one live class
        # is such a class forces that byte.
        self.single_byte = [lo if hi - lo == 1 else -1 for lo, hi in zip(bounds, bounds[1:])]
        self._forced: dict[int, int] = {}

    def class_edges(self, q: int) -> tuple[tuple[int, int, int], ...]:
        """NFA state `q`'s byte edges as (first class, end class, target) intervals (a tuple
        of numbers, out of the cycle collector's view)."""
        found = self._class_edges[q]
        if found is None:
            cl = self.class_list
            found = self._class_edges[q] = tuple([(cl[lo], cl[hi] + 1, t) for lo, hi, t in self.nfa.byte_edges[q]])
            if len(found) > 1 and not _ascending(found):
                spans = sorted(found)
                if any(b[0] < a[1] for a, b in zip(spans, spans[1:])):
                    # Edges from different fragments that read some byte alike: a loop's body
                    # and what follows the loop (`a* ab`), branches of an alternation.
                    self._overlapping.add(q)
        return found

    def _overlaps(self, configs: Configs) -> bool:
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
            found = self._locals[q] = (tuple(sorted(states)), nfa.root_end in seen, tuple(specials))
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

    def _closure(self, seeds: list[tuple[int, Stack]]) -> tuple[Configs, bool]:
        if len(seeds) == 1:
            q, stack = seeds[0]
            states, ends_root, specials = self._local_closure(q)
            if not specials:  # the common case, and every case without calls: no search
                return tuple([(u, stack) for u in states]), ends_root and not stack  # (sorted)
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
                        if ret < 0:
                            ret = u - ret  # counted from the caller (see `_NFA.calls`)
                        if stack and self.is_tail_return(ret):
                            todo.append((callee, stack))  # returns where the caller would
                        elif depth < MAX_STACK_DEPTH or callee in nfa.shared_starts:
                            todo.append((callee, (ret, stack, depth + 1)))
                if nfa.rule_end[u] and stack:
                    todo.append((stack[0], stack[1]))
        return configurations(kernel), accept

    def _intern(self, closed: tuple[Configs, bool]) -> int:
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
        if not self.nfa.recursive:
            self.depths.append(0)
        elif len(kernel) == 1:  # most states: one configuration
            stack = kernel[0][1]
            self.depths.append(stack[2] if stack else 0)
        else:
            self.depths.append(max([st[2] for _, st in kernel if st], default=0))
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
            self.deep = np.concatenate([self.deep, np.zeros(rows - self.deep.size, dtype=bool)])
        self.deep[sid] = self.depths[sid] >= MAX_STACK_DEPTH
        if self._exit_config in kernel:
            self.exits[sid] = True
        link = None
        if len(kernel) == 1:
            (link,) = kernel
            if self.link_bytes[link[0]] < 0:
                link = None
        self.links.append(link)
        return sid

    def frame_split(self, s: int) -> tuple[int, tuple[Stack, ...], int, int] | None:
        """State `s` split at the innermost call frame its deepest configurations share:
        `(local, frames, outside, depth)`, or None where there is no such frame.

        `local` holds the configurations inside that frame, with the frame replaced by one
        that returns to the exit state and their stack depths counted from the frame's
        `depth`, so it behaves as they do until the frame ends (while the depth bound is not
        reached) and is the same state wherever the rule is called from: the tokens that stay
        inside are found once for all of them. `frames` holds that frame's stack (the state it
        returns to, above its caller's stack), and `outside` the state of the other
        configurations (-1 if none), such as those that follow an integer that may end here,
        or close the array a value may start.

        Where no frame holds every deepest configuration (the same string rule called from
        each branch of an anyOf, each branch its own frame), `frames` holds every frame whose
        configurations read alike inside it (one `local` for all), so the tokens that stay
        inside are found once and only the tokens that cross the rule's end are walked per
        frame; the configurations of the other frames go `outside`.
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
                found = self._split_at(configs, frame, high)
            else:
                found = self._split_alike(configs)
        self._frames[s] = found
        return found

    def _split_at(self, configs: Configs, frame: Stack, high: int) -> tuple[int, tuple[Stack, ...], int, int]:
        """`frame_split` at one frame that holds the deepest configurations."""
        base = frame[2]
        exit_frame = (self.nfa.exit, (), 0)
        if base == high:
            # The frame is the innermost: no configuration lies deeper inside it.
            kept = [cfg for cfg in configs if cfg[1] == frame]
            inside = configurations([(q, exit_frame) for q, _ in kept])
        else:
            bottom: dict[Stack, Stack] = {frame: exit_frame}

            def within(stack: Stack) -> bool:
                if not stack or stack[2] < base:
                    return False
                while stack[2] > base:
                    stack = stack[1]
                return stack == frame

            kept = [(q, stack) for q, stack in configs if within(stack)]
            inside = configurations([(q, _rebased(stack, bottom, base)) for q, stack in kept])
        taken = set(kept)
        outside = tuple([cfg for cfg in configs if cfg not in taken])
        return (self._intern((inside, False)), (frame,), self._intern((outside, False)) if outside else DEAD, base)

    def _split_alike(self, configs: Configs) -> tuple[int, tuple[Stack, ...], int, int] | None:
        """`frame_split` over several frames: the configurations grouped by the frame they
        stand in, the largest set of frames whose groups read alike inside kept together."""
        groups: dict[Stack, list[int]] = {}
        count_at = self.nfa.count_at
        for q, stack in configs:
            # Not a count's frames: a count's masks come by room (see `_masks.counted`), and
            # a walk inside one frame of it costs more than one of the whole state.
            if stack and count_at(stack[0]) is None:
                groups.setdefault(stack, []).append(q)
        if not groups:
            return None
        by_inside: dict[frozenset, list[Stack]] = {}
        for frame, qs in groups.items():
            by_inside.setdefault(frozenset(qs), []).append(frame)
        qs, frames = max(by_inside.items(), key=lambda item: (len(item[1]), -min(item[0])))
        if len(frames) < 2:
            return None
        exit_frame = (self.nfa.exit, (), 0)
        chosen = set(frames)
        outside = tuple([cfg for cfg in configs if cfg[1] not in chosen])
        local = self._intern((configurations([(q, exit_frame) for q in qs]), False))
        frames.sort(key=lambda frame: (frame[0], frame[2]))
        return (local, tuple(frames), self._intern((outside, False)) if outside else DEAD,
                max(frame[2] for frame in frames))

    def call_starts(self, callee: int) -> tuple[int, ...] | None:
        """The NFA states with byte edges a call of `callee` starts in, or None where its start
        calls further or ends at once (then its closure depends on more than the frame)."""
        states, ends_root, specials = self._local_closure(callee)
        return None if specials or ends_root else states

    def inside_frame(self, states: tuple[int, ...]) -> int:
        """The state of NFA states `states` seen inside a call frame whoever made it, numbered
        as `frame_split` numbers its `local` states."""
        exit_frame = (self.nfa.exit, (), 0)
        return self._intern((configurations([(q, exit_frame) for q in states]), False))

    def _successor(self, moved: list[tuple[int, Stack]]) -> int:
        key = configurations(moved)
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
        if states.size < FLAT_TAKE:
            keys = None
            nxt = self.table[states, classes]
        else:
            # One flat take (see FLAT_TAKE). Keys in int32: states times classes stay below
            # 2**31, where a 16-bit table's would not.
            keys = states.astype(np.int32) * self.n_classes
            keys += classes
            nxt = self.table.reshape(-1).take(keys)
        unbuilt = nxt == UNBUILT
        n_unbuilt = np.count_nonzero(unbuilt)
        if n_unbuilt:
            wanted: dict[int, list[int]] = {}
            width = self.n_classes
            cell_keys = states[unbuilt].astype(np.int64) * width + classes[unbuilt]
            if n_unbuilt < _MANY_CELLS:
                # A set, not np.unique: the cells to build are few, and np.unique's fixed cost
                # is most of a walk's time.
                for key in sorted(set(cell_keys.tolist())):
                    s, c = divmod(key, width)
                    wanted.setdefault(s, []).append(c)
            else:  # a new grammar's first walks: thousands of cells, hundreds of states
                cell_keys = np.unique(cell_keys)
                at, first, count = np.unique(cell_keys // width, return_index=True, return_counts=True)
                cells_of = (cell_keys % width).tolist()
                for s, i, n in zip(at.tolist(), first.tolist(), count.tolist()):
                    wanted[s] = cells_of[i:i + n]
            for s, cells in wanted.items():
                if len(cells) > _FEW_CELLS:
                    self.build(s)
                else:
                    for c in cells:
                        self.successor(s, c)
            # The table may have grown meanwhile.
            nxt = self.table[states, classes] if keys is None else self.table.reshape(-1).take(keys)
        return nxt


def _ascending(edges: tuple[tuple[int, int, int], ...]) -> bool:
    """Whether each edge starts where the one before it ends, or later (as a class's edges
    are made: then none overlap)."""
    end = 0
    for lo, hi, _ in edges:
        if lo < end:
            return False
        end = hi
    return True


def _rebased(stack: Stack, bottom: dict[Stack, Stack], base: int) -> Stack:
    """`stack` with its frames at depth `base` and below replaced as `bottom` maps them (the
    frames found on the way are added to it)."""
    moved = bottom.get(stack)
    if moved is None:
        moved = bottom[stack] = (stack[0], _rebased(stack[1], bottom, base), stack[2] - base)
    return moved

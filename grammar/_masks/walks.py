"""Token walks: which tokens a state allows and where each leads, found by walking the sorted
vocabulary through the byte automaton (a search over shared prefixes, a vectorised walk, a
handful stepped in Python, a forced literal's spellings, long tokens run by run), with the loop
checks that let a loop class answer most tokens unwalked and the states a depth bound dooms."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from .._automaton.states import DEAD, FLAT_TAKE, MAX_STACK_DEPTH, UNBUILT
from .._tokens.tables import MATRIX_WIDTH, LoopClass, ascii_bitset
from .common import (_BYTES, _ENTRY_STEPS, _FEW, _FEW_WALKS, _LOOP_BYTES, _NO_WORDS, _WIDE_BYTES,
                     _WIDE_RUN, _distinct)

_UTF8_SHAPES = (
    ((0xC2, 0xDF), (0x80, 0xBF)),
    ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
    ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
    ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
    ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)),
)
_UTF8_LEADS = slice(0xC2, 0xF5)  # the bytes a whole multi-byte character starts with


@dataclass(slots=True)
class _Track:
    """What a walk from a frame-relative state notes on the way (see `_walk`)."""

    # The states the tokens went through, kept only where stack depths vary (with recursion).
    passed: list[np.ndarray] | None
    exits: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # (positions, offsets)


@dataclass(slots=True)
class _LoopWalk:
    """Where each token its loop class does not keep ends, walked from a loop state (DEAD
    where it dies), with what the walk noted: the tokens that reach a frame's end with bytes
    to go, and (with recursion) every state passed, all tokens together (so a reader's reach
    may be more than its own tokens', which only ever sends a state to a full walk)."""

    end_of: np.ndarray
    exits: list[tuple[np.ndarray, np.ndarray]]
    passed: np.ndarray | None

    def read(self, positions: np.ndarray, track: _Track | None) -> tuple[np.ndarray, np.ndarray]:
        """The walk of the tokens at `positions` (sorted), as `_walk` gives it, noted on `track`."""
        ends = self.end_of[positions]
        alive = ends >= 0
        if track is not None:
            if self.exits:
                picked = np.zeros(len(self.end_of), dtype=bool)
                picked[positions] = True
                for crossing, offsets in self.exits:
                    mine = picked[crossing]
                    if mine.any():
                        track.exits.append((crossing[mine], offsets[mine]))
            if track.passed is not None and self.passed is not None:
                track.passed.append(self.passed)
        return positions[alive], ends[alive]

    @property
    def nbytes(self) -> int:
        return int(self.end_of.nbytes + sum(c.nbytes + o.nbytes for c, o in self.exits)
                   + (self.passed.nbytes if self.passed is not None else 0))


class WalksMixin:
    """The token walks (a part of `CompiledGrammar`)."""

    def _walk_from(self, state: int, track: _Track | None = None
                   ) -> tuple[LoopClass | None, np.ndarray, np.ndarray, np.ndarray]:
        """Walk every token that may be allowed in `state`: returns its loop class (None unless
        most tokens loop on it), the sorted-order positions of the walked tokens that survive
        and the state each ends in, and the ids of the long tokens still to walk."""
        t = self.tables
        spans = self.automaton.byte_spans(state)
        if sum(b1 - b0 for b0, b1 in spans) < _LOOP_BYTES:
            # Too few next bytes for a loop class: no need to number every successor.
            positions, ends = self._prefix_walk(state, track)
            return None, *self._without_doomed(positions, ends), t.long_starting_in(spans)
        row_np = self.automaton.byte_row(state)
        loop = self._loop_class(state, row_np)
        first = row_np >= 0
        if loop is None:
            entered = self._entry_walk(state, row_np, track)
            positions, ends = entered if entered is not None else self._prefix_walk(state, track)
            long_ids = t.long_ids[first[t.long_first]]
        else:
            # Tokens made only of looping bytes stay here; walk just the others, each from its
            # first byte that may not loop.
            positions, ends = self._walk(state, loop.other_positions, start=loop.other_skip, track=track)
            long_ids = loop.other_long_ids[first[loop.other_long_first]]
        return loop, *self._without_doomed(positions, ends), long_ids

    def _entry_walk(self, state: int, row_np: np.ndarray, track: _Track | None
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        """`_prefix_walk` of a state whose first characters mostly lead along a short chain of
        states into a loop (a string's first character, or the first few of a pattern with a
        minimum length, before its inside). A token whose first bytes lead along the chain to
        the loop state and also loop there reads from `state` exactly as from the loop state,
        so the loop state's class answers most tokens without a walk: its looping tokens stay
        there, and only its other tokens are walked, from their first byte that may not loop.
        Tokens that end along the chain end where they stop; just the rest are walked from
        `state`. None where `state` enters no loop so (then every token is walked)."""
        a = self.automaton
        t = self.tables
        chain = [state]
        rows = [row_np]
        while True:
            targets, counts = np.unique(rows[-1][rows[-1] >= 0], return_counts=True)
            if not counts.size or counts.max() < _LOOP_BYTES or len(chain) > _ENTRY_STEPS:
                return None
            nxt = int(targets[counts.argmax()])
            if nxt in chain:
                return None
            chain.append(nxt)
            rows.append(a.byte_row(nxt))
            loop = self._loop_class(nxt, rows[-1])
            if loop is not None:
                break
            if a.exits[nxt]:
                return None  # a token could cross the end of a frame along the way: walk them
        loop_state, steps = chain[-1], len(chain) - 1
        if steps > t.matrix.shape[0] or (a.exits[loop_state] and track is None):
            return None
        loops_utf8 = self._loops_on_utf8(loop_state)
        utf8_through = steps == 1 and self._utf8_through(state, loop_state, rows[-1], loops_utf8)
        plan = t.entry_plan([rows[j] == chain[j + 1] for j in range(steps)], loop, rows[-1][:128] == loop_state,
                            loops_utf8, utf8_through, row_np >= 0)
        walked, walked_ends = self._from_loop(loop_state, loop, plan.go_on, track)
        if a.exits[loop_state]:
            self._note_crossings_in_loop(loop, plan.go_on, steps, track)
        rest, rest_ends = self._walk(state, plan.rest, track=track)
        if track is not None and track.passed is not None:
            track.passed.append(np.array(chain[1:], np.int32))
        # Sorted positions, as a walk over the sorted tokens gives them.
        end_of = np.full(len(t.sorted_bytes), DEAD, np.int32)
        end_of[plan.short] = np.array(chain, np.int32)[plan.short_step]
        end_of[plan.stay] = loop_state
        end_of[walked] = walked_ends
        end_of[rest] = rest_ends
        positions = np.flatnonzero(end_of >= 0)
        return positions, end_of[positions]

    def _note_crossings_in_loop(self, loop: LoopClass, go_on: np.ndarray, steps: int, track: _Track) -> None:
        """Note on `track` the tokens walked on from a loop state where the frame may end: each
        stands there with bytes to go from the chain's end (`steps`) up to its first byte that
        may not loop, where the walk from the loop state picks it up (and notes the rest)."""
        positions = loop.other_positions[go_on]
        skips = loop.other_skip[go_on].astype(np.int64)
        for offset in range(max(steps, 1), int(skips.max(initial=0)) + 1):
            at = skips >= offset
            if at.any():
                track.exits.append((positions[at], np.full(np.count_nonzero(at), offset, np.int64)))

    def _from_loop(self, loop_state: int, loop: LoopClass, go_on: np.ndarray, track: _Track | None
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Walk from `loop_state` the tokens of its class's others picked by `go_on`, each from
        its first byte that may not loop. Such a walk depends on the loop state alone, and many
        states enter the same one (each prefix of a key beside the declared names enters the
        string's inside), so from the second entry on every such token is walked once and
        kept, and each entry reads its own out of that."""
        positions = loop.other_positions[go_on]
        kept = self._loop_walks.get(loop_state)
        if kept is None:
            if loop_state not in self._entered:
                self._entered.add(loop_state)
                return self._walk(loop_state, positions, start=loop.other_skip[go_on].astype(np.int64), track=track)
            kept = self._loop_walks[loop_state] = self._walk_all_from(loop_state, loop)
        return kept.read(positions, track)

    def _walk_all_from(self, loop_state: int, loop: LoopClass) -> _LoopWalk:
        """Every token of the class's others walked from `loop_state` once, for `_from_loop`."""
        everything = _Track([] if self.automaton.nfa.recursive else None)
        walked, ends = self._walk(loop_state, loop.other_positions, start=loop.other_skip.astype(np.int64),
                                  track=everything)
        end_of = np.full(len(self.tables.sorted_bytes), DEAD, np.int32)
        end_of[walked] = ends
        passed = None
        if everything.passed is not None:
            passed = _distinct(np.concatenate(everything.passed)) if everything.passed else np.zeros(0, np.int32)
        return _LoopWalk(end_of, everything.exits, passed)

    def _forced_tokens(self, state: int, number_ends: bool = False) -> tuple[list[int], list[int] | None]:
        """Tokens allowed in a state that forces its next bytes: those that spell a prefix of
        the forced run (found by bisection in the sorted tokens) and those that spell all of it
        and go on (a contiguous range of the sorted tokens, walked from the run's end).

        The run is followed only as far as some token still spells it, and along a literal
        without numbering the states inside it unless `number_ends`. Returns the token ids
        and the state each leads to, or None for the states where some token ends inside a
        literal.
        """
        a = self.automaton
        t = self.tables
        sorted_bytes = t.sorted_bytes
        order = t.order
        ids: list[int] = []
        ends: list[int | None] = []
        run = b""
        s = state  # the state after `run`
        first = a.forced_byte(state)
        # The tokens that start with the run's first byte, in sorted order.
        lo, end = t.first_start[first], t.first_start[first + 1]
        spelled = True  # whether some token spells all of `run`
        while len(run) < MATRIX_WIDTH:
            link = None if number_ends or a.depths[s] >= MAX_STACK_DEPTH else a.links[s]
            if link is not None:
                # Along a literal (not doomed below the depth bound, so states can wait): the
                # tokens that end inside it lead to states left unnumbered.
                text, offset, after = a.literal_run(link[0])
                for k in range(offset + 1, len(text)):
                    lo, hi = _spelling(sorted_bytes, run + text[offset:k], lo, end)
                    if lo < 0:
                        spelled = False
                        break
                    if hi > lo:
                        ids.extend(order[lo:hi].tolist())
                        ends.extend([None] * (hi - lo))
                if not spelled:
                    break
                piece = text[offset:]
            else:
                b = a.forced_byte(s)
                if b < 0:
                    break
                piece = _BYTES[b]
            run += piece
            lo, hi = _spelling(sorted_bytes, run, lo, end)
            if lo < 0:
                spelled = False  # no token spells this much of the run, so none spells more
                break
            s = a.state_at(after, link[1]) if link is not None else a.step(s, b)  # (numbered only now)
            if s < 0:
                spelled = False
                break
            if hi > lo:
                ids.extend(order[lo:hi].tolist())
                ends.extend([s] * (hi - lo))
        if spelled:  # the run ended: the tokens that spell all of it and go on
            lo = bisect.bisect_right(sorted_bytes, run, lo, end)
            hi = bisect.bisect_right(sorted_bytes, run + b"\xff" * MATRIX_WIDTH, lo, end)
            if hi > lo and a.configs[s]:  # (a state with no configurations only ends the document)
                more, more_ends = self._walk(s, np.arange(lo, hi, dtype=np.int64), start=len(run))
                if more.size:
                    ids.extend(order[more].tolist())
                    ends.extend(more_ends.tolist())
        if a.nfa.recursive:
            doomed = self._doomed_ends(ends)
            if doomed:
                kept = [(i, v) for i, v in zip(ids, ends) if v not in doomed]
                ids, ends = [i for i, _ in kept], [v for _, v in kept]
        long = t.long_starting(first)
        if long.size:
            long_ids, long_ends = self._walk_long(state, long)
            ids.extend(long_ids.tolist())
            ends.extend(long_ends.tolist())
        return ids, (None if None in ends else ends)

    def _walk_long(self, state: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tokens among `ids` (longer than the token matrix) allowed in `state`, and where
        each leads."""
        if not ids.size:
            return _NO_WORDS, _NO_WORDS
        kept, ends = [], []
        for tid in ids.tolist():
            nxt = self._walk_looping(state, self.tables.token_bytes[tid])
            if nxt >= 0 and not self._doomed(nxt):
                kept.append(tid)
                ends.append(nxt)
        return np.asarray(kept, np.int32), np.asarray(ends, np.int32)

    def _walk_looping(self, state: int, data: bytes) -> int:
        """`Automaton.walk` of a long token (a run of spaces or dashes, most of them), each run
        of bytes that loop on the state it meets read at once."""
        a = self.automaton
        s, q = state, 0
        while q < len(data):
            if a.links[s] is not None:  # inside a literal: the automaton reads it at once
                return a.walk(s, data[q:])
            nxt = a.step(s, data[q])
            if nxt < 0:
                return DEAD
            if nxt == s:
                q = len(data) - len(data[q:].lstrip(self._looping_bytes(s)))
            else:
                q += 1
            s = nxt
        return s

    def _looping_bytes(self, state: int) -> bytes:
        """The bytes that lead `state` back to itself, for `bytes.lstrip`."""
        found = self._loops.get(state)
        if found is None:
            found = self._loops[state] = np.flatnonzero(self.automaton.byte_row(state) == state).astype(np.uint8).tobytes()
        return found

    def _doomed(self, state: int) -> bool:
        """Whether no document can be completed from `state` (only where the stack-depth bound
        cut calls off: the IR has no unproductive rules)."""
        if self.automaton.depths[state] < MAX_STACK_DEPTH or self.automaton.exits[state]:
            return False  # a state where the frame it was seen from may end can return
        found = self._doom.get(state)
        if found is None:
            found = self._doom[state] = self.automaton.stuck_at_depth_limit(state)
        return found

    def _doomed_ends(self, ends) -> set[int]:
        """The doomed states among `ends` (None, a state not numbered, is never one: it lies
        below the depth bound). Only recursion can doom a state; callers ask only then."""
        depths = self.automaton.depths
        return {v for v in set(ends) if v is not None and depths[v] >= MAX_STACK_DEPTH and self._doomed(v)}

    def _without_doomed(self, positions: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.automaton.nfa.recursive:  # nothing is doomed: spare the list
            return positions, ends
        deep = ends[self.automaton.deep[ends]] if ends.size else ends
        doomed = self._doomed_ends(_distinct(deep).tolist()) if deep.size else set()
        if not doomed:
            return positions, ends
        keep = ~np.isin(ends, list(doomed))
        return positions[keep], ends[keep]

    def _loop_class(self, state: int, row_np: np.ndarray):
        loop_bytes = np.flatnonzero(row_np == state)
        if loop_bytes.size < _LOOP_BYTES:
            return None
        ascii_loop = ascii_bitset(loop_bytes[loop_bytes < 128])
        if self._loops_on_utf8(state):
            return self.tables.loop_class(ascii_loop, True)
        looping = self._looping_characters(state, row_np)
        return self.tables.loop_class(ascii_loop, looping if looping is not None else False)

    def _looping_characters(self, state: int, row_np: np.ndarray) -> np.ndarray | None:
        """Which of the vocabulary's non-ASCII characters (`TokenTables.characters`) lead
        from `state` (its byte row `row_np`) back to it, where some do and others do not
        (`\\w`, `\\S`): the tokens made of those that do loop there too. None where none
        does, found without the characters where the state reads no byte one begins with."""
        if not (row_np[_UTF8_LEADS] >= 0).any():
            return None
        looping = self._characters_leading(state, state)
        return looping if looping.any() else None

    def _characters_leading(self, state: int, target: int) -> np.ndarray:
        """Which of the vocabulary's non-ASCII characters lead from `state` to `target`,
        through states where no frame may end (so a token reading one crosses no frame's end)."""
        key = (state, target)
        found = self._char_leads.get(key)
        if found is None:
            a = self.automaton
            chars = self.tables.characters()
            at = np.full(chars.sizes.size, state, np.int32)
            alive = np.ones(chars.sizes.size, dtype=bool)
            for k in range(4):
                going = np.flatnonzero(alive & (chars.sizes > k))
                if not going.size:
                    break
                nxt = a.gather(at[going], a.class_of.take(chars.encoded[going, k]))
                at[going] = nxt
                inside = chars.sizes[going] > k + 1  # a character's middle: no frame may end there
                alive[going] = (nxt >= 0) & ~(inside & a.exits[np.maximum(nxt, 0)])
            found = self._char_leads[key] = alive & (at == target)
        return found

    def _utf8_through(self, state: int, loop_state: int, loop_row: np.ndarray, loops_utf8: bool) -> bool:
        """Whether every non-ASCII character that loops on `loop_state` (its byte row
        `loop_row`) leads there from `state` (and one does), so a token whose first character
        is such a one goes from `state` through into the loop."""
        if loops_utf8:
            return self._utf8_leads_to(state, loop_state)
        looping = self._looping_characters(loop_state, loop_row)
        return looping is not None and bool(self._characters_leading(state, loop_state)[looping].all())

    def _prefix_walk(self, state: int, track: _Track | None = None) -> tuple[np.ndarray, np.ndarray]:
        """`_walk` of every short token from `state`, as a search over the sorted tokens'
        prefixes: a state that allows few bytes is left only by the tokens that spell one of
        them next, a contiguous run of the sorted tokens found by bisection, so a small
        language costs in proportion to the prefixes it shares with the vocabulary. A state
        that allows many bytes hands its run of tokens to the vectorised walk."""
        a = self.automaton
        sorted_bytes = self.tables.sorted_bytes
        first_start = self.tables.first_start
        positions: list[int] = []
        ends: list[int] = []
        passed: list[int] = []
        out_pos: list[np.ndarray] = []
        out_end: list[np.ndarray] = []
        wide: list[tuple[int, int, int, int]] = []  # (run start, run end, state, bytes read)
        todo = [(state, b"", 0, len(sorted_bytes))]
        while todo:
            s, prefix, lo, hi = todo.pop()
            k = len(prefix)
            if k:
                first = lo
                while lo < hi and len(sorted_bytes[lo]) == k:  # the tokens that end here
                    lo += 1
                if lo > first:
                    positions.extend(range(first, lo))
                    ends.extend([s] * (lo - first))
                if track is not None:
                    passed.append(s)
                    if lo < hi and a.exits[s]:  # read afresh: numbering states regrows it
                        track.exits.append((np.arange(lo, hi, dtype=np.int64), np.full(hi - lo, k, np.int64)))
                if lo == hi or k == MATRIX_WIDTH:
                    continue
            spans = a.byte_spans(s)
            runs = []  # per span of next bytes, the run of tokens that spell one of them next
            for b0, b1 in spans:
                if k:
                    r = bisect.bisect_left(sorted_bytes, prefix + _BYTES[b0], lo, hi)
                    stop = hi if b1 == 256 else bisect.bisect_left(sorted_bytes, prefix + _BYTES[b1], r, hi)
                else:  # the first byte: its runs are in the token tables
                    r, stop = first_start[b0], first_start[b1]
                if r < stop:
                    runs.append((r, stop))
            if hi - lo > _WIDE_RUN and sum(b1 - b0 for b0, b1 in spans) >= _WIDE_BYTES:
                # Walked together with every other wide run, after the search.
                wide.extend((r, stop, s, k) for r, stop in runs)
                continue
            for r, stop in runs:
                while r < stop:  # one run of tokens per next byte they spell
                    b = sorted_bytes[r][k]
                    if not k:
                        run_end = first_start[b + 1]
                    else:
                        run_end = stop if b == 255 else bisect.bisect_left(sorted_bytes, prefix + _BYTES[b + 1], r, stop)
                    nxt = a.step(s, b)
                    if nxt >= 0:
                        if len(sorted_bytes[run_end - 1]) == k + 1:
                            # Every token of the run ends with this byte (the last is the longest).
                            positions.extend(range(r, run_end))
                            ends.extend([nxt] * (run_end - r))
                            if track is not None:
                                passed.append(nxt)
                        else:
                            todo.append((nxt, prefix + _BYTES[b], r, run_end))
                    r = run_end
        if wide:
            idx = np.concatenate([np.arange(r, stop, dtype=np.int64) for r, stop, _, _ in wide])
            sizes = [stop - r for r, stop, _, _ in wide]
            more, more_ends = self._walk(np.repeat(np.array([w[2] for w in wide], np.int32), sizes), idx,
                                         start=np.repeat(np.array([w[3] for w in wide], np.int64), sizes),
                                         track=track)
            out_pos.append(more)
            out_end.append(more_ends)
        if track is not None and track.passed is not None and passed:
            track.passed.append(np.array(passed, np.int32))
        out_pos.append(np.array(positions, np.int64))
        out_end.append(np.array(ends, np.int32))
        return np.concatenate(out_pos), np.concatenate(out_end).astype(np.int32)

    def _walk(self, state: int | np.ndarray, idx: np.ndarray, start: int | np.ndarray = 0,
              track: _Track | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Walk the tokens at sorted positions `idx` from `state`, all at once, byte by byte,
        from their byte `start` on (all are longer than `start`; an array gives each token its
        own start, its bytes before it leaving `state` where it was; an array of states gives
        each token its own state to start from).

        Returns the positions of the tokens that survive and the state each ends in. With
        `track`, also notes the tokens that reach a state where the frame `state` was seen
        from may end with bytes still to read, and every state the tokens pass through.
        """
        ragged = isinstance(start, np.ndarray)
        states = isinstance(state, np.ndarray)
        if idx.size <= _FEW_WALKS:
            starts = start.tolist() if ragged else [start] * idx.size
            return self._walk_few(idx.tolist(), state.tolist() if states else [state] * idx.size, starts, track)
        a = self.automaton
        t = self.tables
        out_pos: list[np.ndarray] = []
        out_end: list[np.ndarray] = []
        lens = t.lens
        matrix = t.matrix
        class_of = a.class_of
        cls = class_of.take(_column(matrix, start, idx))
        cur = a.gather(state if states else np.broadcast_to(np.int32(state), cls.shape), cls)
        ok = cur >= 0
        idx, cur = idx[ok], cur[ok]
        p = start[ok] + 1 if ragged else start + 1
        while idx.size:
            if track is not None and track.passed is not None:
                track.passed.append(cur)
            if idx.size <= _FEW:
                # A few long tokens left: stepping them in Python beats a round of array calls
                # per byte.
                starts = p.tolist() if ragged else [p] * idx.size
                few_pos, few_end = self._walk_few(idx.tolist(), cur.tolist(), starts, track)
                out_pos.append(few_pos)
                out_end.append(few_end)
                break
            done = lens[idx] == p
            if np.count_nonzero(done):
                out_pos.append(idx[done])
                out_end.append(cur[done])
                keep = ~done
                idx = idx[keep]
                cur = cur[keep]
                if ragged:
                    p = p[keep]
                if not idx.size:
                    break
            if track is not None:
                at = a.exits[cur]
                if np.count_nonzero(at):
                    track.exits.append((idx[at], p[at] if ragged else np.full(np.count_nonzero(at), p)))
            nxt = a.gather(cur, class_of.take(_column(matrix, p, idx)))
            ok = nxt >= 0
            idx = idx[ok]
            cur = nxt[ok]
            p = p[ok] + 1 if ragged else p + 1
        if not out_pos:
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        return np.concatenate(out_pos), np.concatenate(out_end).astype(np.int32)

    def _walk_few(self, idx: list[int], states: list[int], starts: list[int],
                  track: _Track | None) -> tuple[np.ndarray, np.ndarray]:
        """`_walk` in plain Python, for a handful of tokens: each from its own state and byte
        offset (the state it is in, having read the bytes before the offset)."""
        a = self.automaton
        rows = a.rows
        cl = a.class_list
        sorted_bytes = self.tables.sorted_bytes
        kept: list[int] = []
        ends: list[int] = []
        passed: list[int] = []
        crossing: list[int] = []
        offsets: list[int] = []
        for i, s, q in zip(idx, states, starts):
            data = sorted_bytes[i]
            n = len(data)
            while q < n:
                # Where the frame may end with bytes to go (read afresh: numbering states
                # regrows it), from the state handed over too.
                if track is not None and q and a.exits[s]:
                    crossing.append(i)
                    offsets.append(q)
                c = cl[data[q]]
                nxt = rows[s][c]
                s = a.successor(s, c) if nxt == UNBUILT else nxt
                if s < 0:
                    break
                q += 1
                if track is not None:
                    passed.append(s)
            else:
                kept.append(i)
                ends.append(s)
        if track is not None:
            if track.passed is not None:
                track.passed.append(np.array(passed, np.int32))
            if crossing:
                track.exits.append((np.array(crossing, np.int64), np.array(offsets, np.int64)))
        return np.array(kept, np.int64), np.array(ends, np.int32)

    def _loops_on_utf8(self, state: int) -> bool:
        """Whether every whole non-ASCII character read from `state` leads back to it."""
        return self._utf8_leads_to(state, state)

    def _utf8_leads_to(self, state: int, target: int) -> bool:
        """Whether every whole non-ASCII character read from `state` leads to `target`, through
        states where no frame may end (so a token reading one crosses no frame's end)."""
        key = (state, target)
        hit = self._utf8_leads.get(key)
        if hit is not None:
            return hit
        a = self.automaton
        # Depth first over (state, shape, bytes read), each class of each byte once per state;
        # iterative, as a recursive closure would hold the automaton in a reference cycle.
        hit = True
        for shape in _UTF8_SHAPES:
            todo = [(state, 0)]
            seen = set()
            while hit and todo:
                s, i = todo.pop()
                lo, hi = shape[i]
                for b in a.representatives(lo, hi):
                    nxt = a.step(s, b)
                    last = i + 1 == len(shape)
                    if nxt < 0 or (last and nxt != target) or (not last and a.exits[nxt]):
                        hit = False
                        break
                    if not last and (nxt, i + 1) not in seen:
                        seen.add((nxt, i + 1))
                        todo.append((nxt, i + 1))
            if not hit:
                break
        self._utf8_leads[key] = hit
        return hit

    # -- tokens and where they lead ------------------------------------------------------

    def token_ends(self, state: int) -> tuple[np.ndarray, np.ndarray]:
        """Every token allowed in `state` (EOS excluded) and the state each leads to."""
        ids, ends, looping = self._walked_ends(state)
        if not looping.size:
            return ids, ends
        return np.concatenate([ids, looping]), np.concatenate([ends, np.full(looping.size, state, np.int32)])

    def _walked_ends(self, state: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`token_ends` of the tokens walked from `state`, and the ids of those that certainly
        lead back to it (made only of its looping bytes, so not walked)."""
        t = self.tables
        with self._lock:
            loop, positions, ends, long_ids = self._walk_from(state)
            long_ids, long_ends = self._walk_long(state, long_ids)
        ids = np.concatenate([t.order[positions], long_ids]).astype(np.int32)
        return ids, np.concatenate([ends, long_ends]), _NO_WORDS if loop is None else loop.looping_ids


def _column(matrix: np.ndarray, p: int | np.ndarray, idx: np.ndarray) -> np.ndarray:
    """`matrix[p, idx]`, the byte at offset `p` (one for all, or one each) of the tokens at
    sorted positions `idx`, as a flat take where there are many (see FLAT_TAKE)."""
    if not isinstance(p, np.ndarray):
        return matrix[p].take(idx)
    if idx.size < FLAT_TAKE:
        return matrix[p, idx]
    return matrix.reshape(-1).take(p.astype(np.int64) * matrix.shape[1] + idx)


def _spelling(sorted_bytes: tuple[bytes, ...], prefix: bytes, lo: int, end: int) -> tuple[int, int]:
    """The sorted position (in lo..end, which holds every token that starts with `prefix`)
    of the first token that starts with `prefix`, and the end of the tokens that are exactly
    `prefix`; (-1, -1) where no token starts with it."""
    if lo < end and sorted_bytes[lo] < prefix:
        lo = bisect.bisect_left(sorted_bytes, prefix, lo, end)
    if lo == end or not sorted_bytes[lo].startswith(prefix):
        return -1, -1
    hi = lo
    while hi < end and sorted_bytes[hi] == prefix:
        hi += 1
    return lo, hi

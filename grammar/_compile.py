"""A grammar compiled against a vocabulary: the automaton plus per-state token sets.

The token set a state allows depends only on the state, so it is computed once, on first
visit, with numpy over the vocabulary at once, and kept. A decode step is then a lookup.
"""

from __future__ import annotations

import bisect
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from ._analysis import productive_rules, pruned
from ._automaton import DEAD, MAX_STACK_DEPTH, UNBUILT, Automaton, Stack
from ._errors import CompileError
from ._grammar import Grammar
from ._ir import Rules
from ._timing import CompileProfile, log_compile
from ._tokens import MATRIX_WIDTH, CharacterProfile, LoopClass, TokenTables, token_tables
from ._vocab import Vocabulary

_NO_WORDS = np.zeros(0, np.int32)
_NO_IDS = np.zeros(0, np.int64)
_NO_BYTES = np.zeros(0, np.uint8)
_FIRST = np.ones(1, dtype=bool)
_FEW_WORDS = 8  # bitmask words a mask writes one by one rather than by fancy indexing
_SMALL = 64  # allowed ids up to which a mask is assembled without numpy
_FEW_WALKS = 48  # tokens up to which stepping each in Python beats a vectorised walk
_FEW = 8  # tokens still walking below which `_walk` finishes them one by one
_WIDE_RUN = 64  # tokens sharing a prefix past which a search over prefixes hands them to `_walk` ...
_WIDE_BYTES = 32  # ... if the state after the prefix allows at least this many next bytes
_LOOP_BYTES = 16  # bytes that must lead a state back to itself for it to have a loop class
_ENTRY_STEPS = 16  # states a walk follows into a loop before it walks every token instead
_CHARACTER_STATES = 64  # byte-automaton states past which a repeated item is not profiled

_BYTES = [bytes((b,)) for b in range(256)]

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


@dataclass(slots=True)
class StateMask:
    """The tokens one grammar state allows, kept in whichever form is smaller.

    The packed bitmask row is not stored: only the words that differ from all-clear (or, for an
    inverted set, from all-set), so a row costs memory in proportion to the shorter id list.
    States that allow the same tokens share one (a mask never changes once made).
    """

    count: int  # number of allowed ids, EOS included
    ids: np.ndarray  # sorted int32: the allowed ids if `inverted` is False, else the disallowed
    inverted: bool
    words: np.ndarray  # int32 indices of the bitmask words that differ from the background
    values: np.ndarray  # int32 contents of those words
    pairs: tuple[tuple[int, int], ...] | None = None  # (word, value) when few: set one by one
    row: np.ndarray | None = None  # the whole packed row, kept instead when it is the smaller

    @property
    def nbytes(self) -> int:
        held = self.ids.nbytes + self.words.nbytes + self.values.nbytes + _size_of(self.pairs)
        return held + (0 if self.row is None else self.row.nbytes)

    def allowed_ids(self, size: int) -> np.ndarray:
        if not self.inverted:
            return self.ids
        keep = np.ones(size, dtype=bool)
        keep[self.ids] = False
        return np.flatnonzero(keep).astype(np.int32)

    def write(self, row: np.ndarray) -> None:
        """Write this set into one packed int32 bitmask row."""
        if self.row is not None:
            row[:] = self.row
            return
        row.fill(-1 if self.inverted else 0)
        if self.pairs is not None:  # item by item beats fancy indexing for a handful
            for word, value in self.pairs:
                row[word] = value
        else:
            row[self.words] = self.values


def word_pairs(words: np.ndarray, values: np.ndarray) -> tuple[tuple[int, int], ...] | None:
    """The (word, value) pairs of a row that touches few words, else None."""
    if words.size > _FEW_WORDS:
        return None
    return tuple(zip(words.tolist(), values.tolist()))


def packed_words(ids: np.ndarray, inverted: bool) -> tuple[np.ndarray, np.ndarray]:
    """The bitmask words a sorted id list touches, and their contents."""
    if ids.size == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int32)
    ids64 = ids.astype(np.int64)
    word = ids64 >> 5
    bits = np.left_shift(np.int64(1), ids64 & 31)
    starts = np.flatnonzero(np.concatenate((_FIRST, word[1:] != word[:-1])))
    merged = np.bitwise_or.reduceat(bits, starts)
    if inverted:
        merged = ~merged
    return word[starts].astype(np.int32), merged.astype(np.uint32).view(np.int32)


class CompiledGrammar:
    """A `Grammar` compiled for one vocabulary. Share it between matchers (it is thread-safe)."""

    def __init__(self, grammar: Grammar, vocab: Vocabulary) -> None:
        self.grammar = grammar
        self.vocab = vocab
        self.profile = profile = CompileProfile()
        started = time.perf_counter()
        self.tables: TokenTables = token_tables(vocab)
        analysed = time.perf_counter()
        profile.tables = analysed - started
        rules = grammar.rule_set()
        # A recursion that never bottoms out (an array that must hold an array like itself)
        # has no finite text, though its automaton has a way out of every state: the root
        # then matches nothing, and elsewhere the matcher must not be led into one.
        reachable = grammar.rules
        productive = productive_rules(reachable)
        if rules.root not in productive:
            raise _nothing_to_decode()
        if len(productive) < len(reachable):
            rules = Rules(pruned(reachable, productive), rules.root)
        built = time.perf_counter()
        profile.analysis = built - analysed
        self.automaton = Automaton(rules)
        profile.automaton = time.perf_counter() - built
        if self.automaton.start == DEAD:
            raise _nothing_to_decode()
        self.vocab_size = self.tables.size
        self._masks: dict[int, StateMask] = {}
        # (inverted, ids) -> the mask: states with the same token set share one (masks do not
        # change once made)
        self._pool: dict[tuple[bool, bytes], StateMask] = {}
        self._small_pool: dict[tuple[int, ...], StateMask] = {}  # the same, keyed by a few allowed ids
        self._utf8_leads: dict[tuple[int, int], bool] = {}  # see `_utf8_leads_to`
        self._loops: dict[int, bytes] = {}  # see `_looping_bytes`
        self._doom: dict[int, bool] = {}
        self._inside: dict[int, _Inside] = {}
        self._by_far_counts: dict[tuple, StateMask] = {}  # see `_far_counts_key`
        self._unions: dict[tuple[int, bytes], StateMask] = {}  # see `_framed_mask`
        self._successors: dict[int, np.ndarray] = {}  # see `successors`
        self._characters: dict[int, CharacterProfile | None] = {}  # see `_character_profile`
        self._leavers: dict[tuple[int, int], _Leavers | None] = {}  # see `_leavers_to`
        self._by_room: dict[tuple, StateMask] = {}  # see `_counted_mask`
        nfa = self.automaton.nfa
        self._framed = bool(nfa.recursive or nfa.shared_starts)
        self._lock = threading.RLock()
        self._timing_mask = False  # a mask found inside another's is timed as part of it
        self._eos_only: StateMask | None = None

    @property
    def start(self) -> int:
        return self.automaton.start

    @property
    def nbytes(self) -> int:
        """Memory held by this compiled grammar's arrays (the shared vocabulary excluded)."""
        rows = sum(m.nbytes for m in [*self._pool.values(), *self._small_pool.values()])
        successors = sum(s.nbytes for s in self._successors.values())
        inside = sum(i.nbytes for i in self._inside.values())
        leavers = sum(v.nbytes for v in self._leavers.values() if v is not None)
        table = self.automaton.table[: len(self.automaton.configs)].nbytes
        return int(rows + successors + inside + leavers + table)

    # -- per-state token sets -------------------------------------------------------------

    def eos_only_mask(self) -> StateMask:
        """The mask that allows only the end of sequence (a finished document's next token)."""
        if self._eos_only is None:
            eos = self.tables.eos_ids
            words, values = packed_words(eos, False)
            self._eos_only = StateMask(int(eos.size), eos, False, words, values, word_pairs(words, values))
        return self._eos_only

    def mask(self, state: int) -> StateMask:
        found = self._masks.get(state)
        if found is not None:
            return found
        with self._lock:
            found = self._masks.get(state)
            if found is None:
                key = self._far_counts_key(state) if self.automaton.nfa.counted else None
                shared = self._by_far_counts.get(key) if key is not None else None
                if shared is not None:
                    found = shared
                else:
                    found = self._timed_mask(state)
                    if key is not None:
                        self._by_far_counts[key] = found
                self._masks[state] = found
            return found

    def _far_counts_key(self, state: int) -> tuple | None:
        """`state` with every count of a called repeat that no token can bring to a bound (at
        least as many copies left as a token has bytes, and the minimum met or beyond reach)
        put as one mark, or None where it has none: states with the same key allow the same
        tokens, so a long bounded string finds its mask once, not at every character."""
        a = self.automaton
        counted = a.nfa.counted
        reach = self.tables.longest
        memo: dict[Stack, Stack] = {}
        far = False
        configs = []
        for q, stack in a.configs[state]:
            frames = []
            while stack and stack not in memo:
                frames.append(stack)
                stack = stack[1]
            marked = memo[stack] if stack else ()
            for frame in reversed(frames):
                ret, _, depth = frame
                count = counted.get(ret)
                if count is not None:
                    site, done, least, most = count
                    if (most is None or most - done >= reach) and (least <= done or least - done > reach):
                        ret = ("far", site)
                        far = True
                marked = memo[frame] = (ret, marked, depth)
            configs.append((q, marked))
        return (frozenset(configs), a.accepting[state]) if far else None

    def successors(self, state: int) -> np.ndarray:
        """The distinct states the tokens allowed in `state` lead to (EOS excluded): what
        completion bounds search, found without the state's mask, which decoding needs and
        a search does not."""
        found = self._successors.get(state)
        if found is None:
            with self._lock:
                if self.automaton.forced_byte(state) >= 0:
                    ends = np.asarray(self._forced_tokens(state, number_ends=True)[1], np.int32)
                else:
                    _, ends, looping = self._walked_ends(state)
                    if looping.size:
                        ends = np.append(ends, np.int32(state))
                found = self._successors[state] = _distinct(ends)
        return found

    def walk_token(self, state: int, token_id: int) -> int:
        data = self.tables.token_bytes[token_id] if 0 <= token_id < self.vocab_size else None
        if data is None:
            return DEAD
        with self._lock:
            return self.automaton.walk(state, data)

    def _timed_mask(self, state: int) -> StateMask:
        """`_compute_mask`, its time and way noted in `profile`."""
        if self._timing_mask:
            return self._compute_mask(state)[1]
        self._timing_mask = True
        started = time.perf_counter()
        try:
            path, found = self._compute_mask(state)
        finally:
            self._timing_mask = False
        seconds = time.perf_counter() - started
        profile = self.profile
        profile.masks += seconds
        profile.paths[path] += 1
        profile.path_seconds[path] += seconds
        return found

    def _compute_mask(self, state: int) -> tuple[str, StateMask]:
        """The mask of a state met for the first time, and which way it was found."""
        t = self.tables
        a = self.automaton
        accepting = a.accepting[state] and t.eos_ids.size > 0
        if a.forced_byte(state) >= 0:
            # Most states of a schema sit inside a literal (a key, punctuation): only the tokens
            # that spell part of it, or all of it and more, can follow.
            ids = self._forced_tokens(state)[0]
            if accepting:
                ids.extend(t.eos_ids.tolist())
            if len(ids) <= _SMALL:
                return "forced", self._small_mask(ids)
            return "forced", self._state_mask([np.array(ids, np.int32)], False)
        if a.nfa.count_sites:
            counted = self._counted_mask(state, accepting)
            if counted is not None:
                return "counted", counted
        if not a.nfa.recursive and sum(b1 - b0 for b0, b1 in a.byte_spans(state)) >= _LOOP_BYTES:
            chained = self._chain_mask(state, accepting)
            if chained is not None:
                return "chained", chained
        framed = a.frame_split(state) if self._framed else None
        if framed is not None:
            local, frame, outside, depth = framed
            # Where the frame returns to. Only the depth bound can leave it dead or doomed;
            # without recursion it is found when a token crosses the rule's end.
            resume = a.state_at(frame[0], frame[1]) if a.nfa.recursive else None
            if resume is None or (resume >= 0 and not self._doomed(resume)):
                inside = self._inside.get(local)
                if inside is None:
                    inside = self._inside[local] = self._inside_of(local)
                # Relative depths stand for real ones only while real ones stay under the bound.
                if depth + inside.reach < MAX_STACK_DEPTH:
                    return "framed", self._framed_mask(state, local, inside, frame, resume, outside, accepting)
        loop, positions, _, long_ids = self._walk_from(state)
        long_ids = self._walk_long(state, long_ids)[0]
        if loop is not None:
            return "walked", self._loop_mask(loop, [t.order[positions], long_ids], accepting)
        return "walked", self._state_mask([t.order[positions], long_ids], accepting)

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
            if nxt in chain or a.exits[nxt]:
                return None  # a token could cross the end of a frame along the way: walk them
            chain.append(nxt)
            rows.append(a.byte_row(nxt))
            loop = self._loop_class(nxt, rows[-1])
            if loop is not None:
                break
        loop_state, steps = chain[-1], len(chain) - 1
        if steps > t.matrix.shape[0]:
            return None
        loops_ascii = rows[-1][:128] == loop_state
        n = len(t.sorted_bytes)
        lens = t.lens[:n]
        # Along the chain: tokens whose every byte is a link end where they stop (`short_end`);
        # those longer than the chain whose first `steps` bytes are links that also loop in the
        # loop state go `through` it.
        spelled = np.ones(n, dtype=bool)
        through = np.ones(n, dtype=bool)
        short_end = np.full(n, DEAD, np.int32)
        for j in range(steps):
            col = t.matrix[j, :n]
            live = lens > j
            link = rows[j] == chain[j + 1]
            spelled &= ~live | link[col]
            short_end[spelled & (lens == j + 1)] = chain[j + 1]
            via = np.zeros(256, dtype=bool)
            via[:128] = link[:128] & loops_ascii
            through &= live & via[col]
        through &= lens > steps
        other = np.zeros(n, dtype=bool)
        other[loop.other_positions] = True
        if steps == 1 and self._utf8_leads_to(state, loop_state) and self._loops_on_utf8(loop_state):
            # A token with a non-ASCII first byte goes through if its first character is whole
            # and loops (a looping token, or one whose looping prefix holds that character).
            skip_ok = np.zeros(n, dtype=bool)
            skip_ok[loop.other_positions] = loop.other_skip > 0
            through |= (t.matrix[0, :n] >= 128) & (~other | skip_ok)
        stay = np.flatnonzero(through & ~other)
        go_on = through[loop.other_positions]
        walked, walked_ends = self._walk(loop_state, loop.other_positions[go_on],
                                         start=loop.other_skip[go_on].astype(np.int64), track=track)
        short = short_end >= 0
        first_ok = (row_np >= 0)[t.matrix[0, :n]]
        rest, rest_ends = self._walk(state, np.flatnonzero(first_ok & ~through & ~short), track=track)
        if track is not None and track.passed is not None:
            track.passed.append(np.array(chain[1:], np.int32))
        # Sorted positions, as a walk over the sorted tokens gives them.
        end_of = short_end
        end_of[stay] = loop_state
        end_of[walked] = walked_ends
        end_of[rest] = rest_ends
        positions = np.flatnonzero(end_of >= 0)
        return positions, end_of[positions]

    def _framed_mask(self, state: int, local: int, inside: _Inside, frame: tuple, resume: int | None,
                     outside: int, accepting: bool) -> StateMask:
        """The mask of a state with configurations inside a call `frame`: the tokens the
        frame's rule allows from there whatever called it (`inside`, found once per
        frame-relative state `local`), those that go on past the rule's end and are allowed
        where it returns to (`resume`, found here if None), the long tokens that may, what the
        configurations `outside` every call allow, and EOS where `accepting` (the
        configurations that finished the document have left every frame)."""
        t = self.tables
        base = inside.base
        if base is None:
            parts = [t.order[inside.positions], inside.long_kept]
            if inside.loop is not None:
                base = inside.base = self._loop_mask(inside.loop, parts, False)
            else:
                base = inside.base = self._state_mask(parts, False)
        extra = []
        if inside.cross.size:
            if resume is None:
                resume = self.automaton.state_at(frame[0], frame[1])
            # Only the crossing tokens whose next byte `resume` has an edge on can go on there.
            go_on = _byte_set(self.automaton.byte_spans(resume))[inside.cross_byte]
            if go_on.any():
                crossing, ends = self._walk(resume, inside.cross[go_on], start=inside.cross_from[go_on])
                extra.append(t.order[self._without_doomed(crossing, ends)[0]])
        if inside.long_cross.size:
            extra.append(self._walk_long(state, inside.long_cross)[0])
        if outside >= 0:
            extra.append(self.mask(outside).allowed_ids(t.size))
        if accepting:
            extra.append(t.eos_ids)
        extra = [e for e in extra if e.size]
        if not extra:
            return base
        # The same rule called from places that are followed alike (every string property
        # followed by `,"`) adds the same few tokens to it: the union is made once.
        added = np.sort(np.concatenate(extra))
        key = (local, added.tobytes())
        found = self._unions.get(key)
        if found is None:
            if not base.inverted:
                found = self._state_mask([base.ids, added], False)
            else:
                found = self._all_but(base.ids, added)
            self._unions[key] = found
        return found

    # -- counted repeats of characters ----------------------------------------------------

    def _counted_mask(self, state: int, accepting: bool) -> StateMask | None:
        """The mask of a state at a character boundary of a counted repeat of characters (a
        bounded string after some of its characters), from the vocabulary's profile of that
        character language: the tokens that stay inside and fit the room left, a prefix of the
        profile's tokens by characters, and those that leave the repeat after a count within
        its bounds and are allowed where it goes on. None where `state` is not such a state
        (mid-character, say) or the repeat is not one of characters."""
        place = self._counted_place(state)
        if place is None:
            return None
        local, follow, done, least, most = place
        profile = self._character_profile(local)
        if profile is None:
            return None
        leavers = self._leavers_to(local, profile, follow)
        if leavers is None:
            return None
        # Rooms past every token's characters, and needs met by none, allow alike.
        widest = max(profile.widest, leavers.most)
        room = widest if most is None else min(most - done, widest)
        need = min(max(least - done, 0), leavers.most + 1)
        key = (local, follow, room, need, accepting)
        found = self._by_room.get(key)
        if found is None:
            found = self._by_room[key] = self._room_mask(profile, leavers, room, need, accepting)
        return found

    def _room_mask(self, profile: CharacterProfile, leavers: _Leavers, room: int, need: int,
                   accepting: bool) -> StateMask:
        """The tokens that begin at most `room` characters and stay inside, and the leavers
        that close after `need` to `room` of them (and EOS where `accepting`): a pass over
        the profile's needs, which yields the ids sorted."""
        lo = int(np.searchsorted(leavers.counts, need, side="left"))
        hi = int(np.searchsorted(leavers.counts, room, side="right"))
        allowed = profile.needs <= room
        allowed[leavers.ids[lo:hi]] = True
        return self._vector_mask(allowed, accepting)

    def _vector_mask(self, allowed: np.ndarray, accepting: bool) -> StateMask:
        """The mask of the ids `allowed` (a bool per id) holds, and EOS where `accepting`."""
        t = self.tables
        if accepting:
            allowed[t.eos_ids] = True
        count = int(np.count_nonzero(allowed))
        if count <= _SMALL:
            return self._small_mask(np.flatnonzero(allowed).tolist())
        if count * 2 <= t.size:
            return self._pooled(np.flatnonzero(allowed).astype(np.int32), False, count)
        return self._pooled(np.flatnonzero(~allowed).astype(np.int32), True, count)

    def _chain_mask(self, state: int, accepting: bool) -> StateMask | None:
        """The mask of a state that starts a chain of states each led to the next by one class
        of bytes (a pattern intersected with a length is lowered so: a state per character
        read): the tokens made only of that class that fit the chain's length, from the
        vocabulary's profile of the class, and the walk of the others that may be allowed.
        None where `state` starts no such chain (or it loops: loop classes answer those)."""
        a = self.automaton
        t = self.tables
        widest = max(a.byte_spans(state), key=lambda span: span[1] - span[0])
        if a.step(state, widest[0]) == state:
            return None  # a loop (a string's inside), found without building the whole row
        row = a.byte_row(state)
        targets, counts = np.unique(row[row >= 0], return_counts=True)
        if not counts.size or counts.max() < _LOOP_BYTES or targets[counts.argmax()] == state:
            return None
        links = row == targets[counts.argmax()]
        chain = self._chain_length(state, links)
        if chain is None:
            return None
        steps, reads = chain
        table = np.full((1, 256), -1, dtype=np.int32)
        table[0, links] = -2  # each byte of the class is one step along the chain
        profile = t.character_profile(table)
        # The others go on only if their first byte that leaves the class is read somewhere
        # along the chain (and, the first, here).
        offsets = profile.leave_offsets
        first_ok = np.where(offsets == 0, (row >= 0)[profile.leave_bytes], offsets <= steps)
        walked = profile.leave_positions[first_ok & reads[profile.leave_bytes]]
        kept = self._walk(state, walked)[0]
        long_ids = np.array([tid for tid, offset, _ in profile.long_leavers if offset <= steps], np.int32)
        long_kept = self._walk_long(state, long_ids)[0]
        allowed = profile.needs <= steps
        allowed[t.order[kept]] = True
        allowed[long_kept] = True
        return self._vector_mask(allowed, accepting)

    def _chain_length(self, state: int, links: np.ndarray) -> tuple[int, np.ndarray] | None:
        """How many bytes of the class `links` can be read from `state` on, each of the class
        leading to one state, with the bytes any state along the way reads; None where the
        class's bytes part ways or lead round in a loop (or the chain outruns every token)."""
        a = self.automaton
        reads = np.zeros(256, dtype=bool)
        seen = {state}
        s = state
        for steps in range(self.tables.longest + 1):
            row = a.byte_row(s)
            reads |= row >= 0
            on = row[links]
            if on.max() < 0:
                return steps, reads
            s = int(on[0])
            if s < 0 or (on != s).any() or s in seen:
                return None
            seen.add(s)
        return None

    def _counted_place(self, state: int) -> tuple[int, int, int, int, int | None] | None:
        """Where `state` stands in a counted repeat: `(local, follow, done, least, most)` when
        its configurations are exactly the start of the next copy of the item (on the frame
        of its call) and, once the minimum is met, what follows the repeat (`follow`, a state)
        — `local` is the item's start as seen inside its frame, `done` the copies made, the
        repeat's bounds `least` and `most` — else None."""
        a = self.automaton
        nfa = a.nfa
        configs = a.configs[state]
        frame = None
        for _, stack in configs:
            if stack and stack[0] in nfa.counted:
                if frame is not None and stack != frame:
                    return None
                frame = stack
        if frame is None:
            return None
        site, upto, least, most = nfa.counted[frame[0]]
        body, end = nfa.count_sites[site]
        starts = a.call_starts(body)
        if starts is None:
            return None
        inner = frozenset([(q, frame) for q in starts])
        if not inner <= configs:
            return None
        done = upto - 1
        follow = a.state_at(end, frame[1])
        rest = configs - inner
        if rest != (a.configs[follow] if done >= least and follow >= 0 else frozenset()):
            return None
        return a.inside_frame(starts), follow, done, least, most

    def _character_profile(self, local: int) -> CharacterProfile | None:
        """The vocabulary's profile (see `TokenTables.character_profile`) of the item whose
        start inside its frame is `local`, or None where it has none (see `_character_table`)."""
        if local not in self._characters:
            table = self._character_table(local)
            self._characters[local] = None if table is None else self.tables.character_profile(table)
        return self._characters[local]

    def _character_table(self, local: int) -> np.ndarray | None:
        """The byte automaton of the item whose start inside its frame is `local`, as
        `TokenTables.character_profile` takes it; None where the item is not a prefix code of
        few states (a copy could end and go on, so counts would not follow from the bytes)."""
        a = self.automaton
        done_configs = frozenset([(a.nfa.exit, ())])
        number = {local: 0}
        states = [local]
        rows: list[np.ndarray] = []
        while len(rows) < len(states):
            if len(states) > _CHARACTER_STATES:
                return None
            succ = a.byte_row(states[len(rows)])
            row = np.full(256, -1, dtype=np.int32)
            targets, first_byte = np.unique(succ, return_index=True)
            # Numbered by the first byte that reaches them: the same language gives the same
            # table in every grammar, and so one cached profile.
            for v in targets[np.argsort(first_byte)].tolist():
                if v < 0:
                    continue
                if a.exits[v]:
                    if a.configs[v] != done_configs:
                        return None  # a copy may end here and also go on
                    row[succ == v] = -2
                    continue
                if v not in number:
                    number[v] = len(states)
                    states.append(v)
                row[succ == v] = number[v]
            rows.append(row)
        return np.stack(rows)

    def _leavers_to(self, local: int, profile: CharacterProfile, follow: int) -> _Leavers | None:
        """The profile's leavers allowed from `follow`, where a repeat of the item at `local`
        goes on once done; None where `follow` may read a byte a character begins with (then
        a boundary could go either way)."""
        key = (local, follow)
        if key in self._leavers:
            return self._leavers[key]
        found = None
        if follow < 0 or not _byte_set(self.automaton.byte_spans(follow))[profile.first].any():
            t = self.tables
            if follow < 0:
                ids, counts = _NO_WORDS, _NO_WORDS
            else:
                # Only the leavers whose next byte `follow` reads can go on there.
                goes_on = _byte_set(self.automaton.byte_spans(follow))[profile.leave_bytes]
                positions, offsets = profile.leave_positions[goes_on], profile.leave_offsets[goes_on]
                kept, ends = self._walk(follow, positions, start=offsets)
                kept = self._without_doomed(kept, ends)[0]
                counts = [profile.leave_counts[goes_on][np.searchsorted(positions, kept)]]
                ids = [t.order[kept]]
                long_ids, long_counts = [], []
                for tid, offset, count in profile.long_leavers:
                    nxt = self.automaton.walk(follow, t.token_bytes[tid][offset:])
                    if nxt >= 0 and not self._doomed(nxt):
                        long_ids.append(tid)
                        long_counts.append(count)
                ids = np.concatenate([*ids, np.array(long_ids, np.int32)]).astype(np.int32)
                counts = np.concatenate([*counts, np.array(long_counts, np.int32)]).astype(np.int32)
            by_count = np.argsort(counts, kind="stable")
            found = _Leavers(ids[by_count], counts[by_count], int(counts.max()) if counts.size else 0)
        self._leavers[key] = found
        return found

    def _inside_of(self, local: int) -> _Inside:
        """Walk the tokens from a state seen inside its frame (see `Automaton.frame_split`),
        noting each token that reaches the frame's end with bytes still to go."""
        track = _Track([] if self.automaton.nfa.recursive else None)
        loop, positions, _, long_ids = self._walk_from(local, track)
        long_kept, long_cross = self._split_long(local, long_ids, track)
        depths = self.automaton.depths
        passed = np.concatenate(track.passed).tolist() if track.passed else []
        reach = max([depths[s] for s in set(passed)], default=0)
        if track.exits:
            cross = np.concatenate([e[0] for e in track.exits])
            cross_from = np.concatenate([e[1] for e in track.exits]).astype(np.int64)
            cross_byte = self.tables.matrix[cross_from, cross]
        else:
            cross = cross_from = _NO_IDS
            cross_byte = _NO_BYTES
        if positions.size > 1 and not (positions[1:] >= positions[:-1]).all():
            positions = np.sort(positions)
        return _Inside(loop, positions, cross, cross_from, cross_byte, long_kept, long_cross,
                       max(reach, depths[local]))

    def _split_long(self, local: int, ids: np.ndarray, track: _Track) -> tuple[np.ndarray, np.ndarray]:
        """The long tokens among `ids` that end inside the frame of `local` (allowed wherever
        it was called from), and those that reach its end with bytes to go (walked from each
        calling state)."""
        if not ids.size:
            return _NO_WORDS, _NO_WORDS
        a = self.automaton
        kept: list[int] = []
        crossing: list[int] = []
        passed: list[int] = []
        for tid in ids.tolist():
            data = self.tables.token_bytes[tid]
            s, q = local, 0
            while q < len(data):
                if q and a.exits[s]:
                    crossing.append(tid)
                    break
                nxt = a.step(s, data[q])
                if nxt < 0:
                    break
                passed.append(nxt)
                if nxt == s and not a.exits[s]:  # a run of bytes that loop here is read at once
                    q = len(data) - len(data[q:].lstrip(self._looping_bytes(s)))
                else:
                    q += 1
                s = nxt
            else:
                if not self._doomed(s):
                    kept.append(tid)
        if track.passed is not None:
            track.passed.append(np.array(passed, np.int32))
        return np.array(kept, np.int32), np.array(crossing, np.int32)

    def _loop_mask(self, loop: LoopClass, parts: list[np.ndarray], accepting: bool) -> StateMask:
        """The mask of a state most tokens loop on: the loop class's complement less the ids
        in `parts` (which may overlap; and EOS where `accepting`), without a pass over the
        vocabulary."""
        if accepting:
            parts = [*parts, self.tables.eos_ids]
        # Every id outside the loop class, sorted, is disallowed unless `parts` allow it.
        return self._all_but(loop.other_ids, np.concatenate(parts))

    def _all_but(self, disallowed: np.ndarray, allowed: np.ndarray) -> StateMask:
        """The mask of every id but those of the sorted `disallowed` that are not in `allowed`,
        in its smaller form."""
        t = self.tables
        if disallowed.size and allowed.size:
            # Sorted needles: numpy's bisection then walks `disallowed` in order (3x faster).
            allowed = np.sort(allowed)
            at = np.minimum(np.searchsorted(disallowed, allowed), disallowed.size - 1)
            keep = np.ones(disallowed.size, dtype=bool)
            keep[at[disallowed[at] == allowed]] = False
            disallowed = disallowed[keep]
        count = t.size - int(disallowed.size)
        if count * 2 <= t.size:  # few allowed after all: keep those instead
            kept = np.ones(t.size, dtype=bool)
            kept[disallowed] = False
            return self._pooled(np.flatnonzero(kept).astype(np.int32), False, count)
        return self._pooled(disallowed, True, count)

    def _state_mask(self, parts: list[np.ndarray], accepting: bool) -> StateMask:
        """The mask of the ids in `parts` (which may overlap; plus EOS where `accepting`), in
        its smaller form."""
        t = self.tables
        if accepting:
            parts = [*parts, t.eos_ids]
        total = sum(p.size for p in parts)
        if total <= _SMALL:
            return self._small_mask([i for p in parts for i in p.tolist()])
        if total * 2 <= t.size:
            ids = np.unique(np.concatenate(parts)).astype(np.int32)
            return self._pooled(ids, False, int(ids.size))
        allowed = np.zeros(t.size, dtype=bool)
        for part in parts:
            allowed[part] = True
        return self._vector_mask(allowed, False)  # EOS, where accepting, is among the parts

    def _pooled(self, ids: np.ndarray, inverted: bool, count: int) -> StateMask:
        """A state's mask over the pooled copy of its id set (made on first use)."""
        t = self.tables
        # States with the same token set (every plain string state, say) share one copy.
        key = (inverted, ids.tobytes())
        shared = self._pool.get(key)
        if shared is None:
            # Bits past the vocabulary in the last word stay clear, whatever the background.
            padding = np.arange(t.size, -(-t.size // 32) * 32, dtype=np.int32)
            cleared = np.concatenate([ids, padding]) if inverted else ids
            shared = self._pool[key] = self._share(count, ids, *packed_words(cleared, inverted), inverted)
        return shared

    def _share(self, count: int, ids: np.ndarray, words: np.ndarray, values: np.ndarray,
               inverted: bool = False) -> StateMask:
        """One token set's mask, as words and values or, where that is larger, the row."""
        width = -(-self.tables.size // 32)
        if words.size * 2 > width:
            # Words and values for over half the row take more room than the row itself.
            full = np.full(width, -1 if inverted else 0, dtype=np.int32)
            full[words] = values
            return StateMask(count, ids, inverted, _NO_WORDS, _NO_WORDS, None, full)
        return StateMask(count, ids, inverted, words, values, word_pairs(words, values))

    def _small_mask(self, ids: list[int]) -> StateMask:
        """A mask of a handful of allowed `ids` (EOS included), in plain Python: at this size
        numpy's fixed cost per call is what a mask would spend its time on."""
        allowed = sorted(set(ids))
        key = tuple(allowed)
        shared = self._small_pool.get(key)
        if shared is None:
            packed: dict[int, int] = {}
            for i in allowed:
                packed[i >> 5] = packed.get(i >> 5, 0) | (1 << (i & 31))
            ids_np = np.array(allowed, dtype=np.int32)
            if len(packed) <= _FEW_WORDS:
                # Words as signed int32 values, as the row holds them.
                pairs = tuple((w, v - (1 << 32) if v >> 31 else v) for w, v in packed.items())
                shared = StateMask(len(allowed), ids_np, False, _NO_WORDS, _NO_WORDS, pairs)
            else:
                words = np.array(list(packed), dtype=np.int32)
                values = np.array(list(packed.values()), dtype=np.uint32).view(np.int32)
                shared = self._share(len(allowed), ids_np, words, values)
            self._small_pool[key] = shared
        return shared

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
        deep = ends[np.asarray(self.automaton.depths, np.int32)[ends] >= MAX_STACK_DEPTH] if ends.size else ends
        doomed = self._doomed_ends(np.unique(deep).tolist()) if deep.size else set()
        if not doomed:
            return positions, ends
        keep = ~np.isin(ends, list(doomed))
        return positions[keep], ends[keep]

    def _loop_class(self, state: int, row_np: np.ndarray):
        loop_bytes = np.flatnonzero(row_np == state)
        if loop_bytes.size < _LOOP_BYTES:
            return None
        bits = 0
        for b in loop_bytes[loop_bytes < 128].tolist():
            bits |= 1 << b
        ascii_loop = np.array([bits & (2**64 - 1), bits >> 64], dtype=np.uint64)
        return self.tables.loop_class(ascii_loop, self._loops_on_utf8(state))

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
        cls = class_of[matrix[start, idx]]
        cur = a.gather(state.astype(np.int32) if states else np.broadcast_to(np.int32(state), cls.shape), cls)
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
            nxt = a.gather(cur, class_of[matrix[p, idx]])
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



@dataclass(slots=True)
class _Inside:
    """What the tokens do from one state seen inside a call frame, whoever made the call."""

    loop: LoopClass | None  # the state's loop class, where most tokens loop on it
    positions: np.ndarray  # sorted-order positions of the tokens allowed without leaving the frame
    cross: np.ndarray  # positions of the tokens that reach the frame's end with bytes to go ...
    cross_from: np.ndarray  # ... and the offset of the byte each goes on with
    cross_byte: np.ndarray  # ... and that byte
    long_kept: np.ndarray  # tokens longer than the matrix that end inside the frame
    long_cross: np.ndarray  # ... and those that may leave it, walked from each calling state
    reach: int  # the deepest stack, relative to the frame, of any state the walk went through
    base: StateMask | None = None  # the mask of `positions` and `long_kept` (with the loop class)

    @property
    def nbytes(self) -> int:
        return int(self.positions.nbytes + self.cross.nbytes + self.cross_from.nbytes + self.cross_byte.nbytes
                   + self.long_kept.nbytes + self.long_cross.nbytes)


@dataclass(slots=True)
class _Leavers:
    """The tokens that leave a counted repeat of characters and are allowed where it goes on,
    by the whole characters they read before (see `CompiledGrammar._leavers_to`)."""

    ids: np.ndarray  # int32, by `counts` ascending
    counts: np.ndarray  # int32, ascending
    most: int  # the largest count (0 if none)

    @property
    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.counts.nbytes)


@dataclass(slots=True)
class _Track:
    """What a walk from a frame-relative state notes on the way (see `_walk`)."""

    # The states the tokens went through, kept only where stack depths vary (with recursion).
    passed: list[np.ndarray] | None
    exits: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # (positions, offsets)


def _size_of(pairs: tuple[tuple[int, int], ...] | None) -> int:
    """Bytes the Python objects of `pairs` take (counting every int, shared or not)."""
    if pairs is None:
        return 0
    return sys.getsizeof(pairs) + sum(sys.getsizeof(p) + sys.getsizeof(p[0]) + sys.getsizeof(p[1]) for p in pairs)


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


def _byte_set(spans: list[tuple[int, int]]) -> np.ndarray:
    """The 256 bytes as booleans, True in the half-open ranges `spans`."""
    found = np.zeros(256, dtype=bool)
    for b0, b1 in spans:
        found[b0:b1] = True
    return found


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct int32 values; a set beats np.unique's fixed cost on the usual few."""
    if values.size > 1024:
        return np.unique(values).astype(np.int32)
    return np.array(sorted(set(values.tolist())), dtype=np.int32)


_COMPILED: "weakref.WeakKeyDictionary[Grammar, dict]" = weakref.WeakKeyDictionary()
_COMPILE_LOCK = threading.Lock()


def _nothing_to_decode() -> CompileError:
    return CompileError(
        "the grammar matches no text at all (a schema such as false, an empty enum, or one that "
        "requires a value to contain itself), so there is nothing to decode",
        keyword="empty",
    )


def compile(grammar: Grammar, vocab: Vocabulary) -> CompiledGrammar:  # noqa: A001 - the natural name
    """Compile `grammar` for `vocab` (cached: the same pair gives the same object)."""
    with _COMPILE_LOCK:
        per_vocab = _COMPILED.get(grammar)
        if per_vocab is None:
            per_vocab = {}
            _COMPILED[grammar] = per_vocab
        found = per_vocab.get(vocab)
        if found is None:
            started = time.perf_counter()
            found = CompiledGrammar(grammar, vocab)
            per_vocab[vocab] = found
            log_compile("grammar", started,
                        lambda: f"{grammar!r} for a {found.vocab_size}-id vocabulary ({found.profile.summary()})")
        return found

"""Masks of states inside a call frame: what the frame's rule allows from there, whoever called
it, found once per frame-relative state (`_Inside`) and joined with what the tokens that cross the
rule's end allow where it returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._tokens.tables import LoopClass
from .common import _LOOP_BYTES, _NO_BYTES, _NO_IDS, _NO_WORDS, _byte_set
from .pool import StateMask
from .walks import _Track

_QUOTE_BIT = np.uint64(1 << ord('"'))  # the quote's bit in a token's ASCII byte set (first word)


class FramedMixin:
    """The masks of states inside call frames (a part of `CompiledGrammar`)."""

    def _framed_mask(self, state: int, local: int, inside: _Inside, frames: tuple, resumes: list[int | None],
                     outside: int, accepting: bool) -> StateMask:
        """The mask of a state with configurations inside call `frames` (that read alike
        inside): the tokens the frame's rule allows from there whatever called it (`inside`,
        found once per frame-relative state `local`), those that go on past the rule's end and
        are allowed where each frame returns to (its `resumes`, found here where None), the
        long tokens that may, what the configurations `outside` every such call allow, and EOS
        where `accepting` (the configurations that finished the document have left every
        frame)."""
        t = self.tables
        base = inside.base
        if base is None:
            parts = [t.order[inside.positions], inside.long_kept]
            if inside.loop is not None:
                base = inside.base = self._loop_mask(inside.loop, parts, False)
            else:
                base = inside.base = self._state_mask(parts, False)
        extra = []
        for frame, resume in zip(frames, resumes) if inside.cross.size else ():
            if resume is None:
                resume = self.automaton.state_at(frame[0], frame[1])
            # Only the crossing tokens whose next byte `resume` has an edge on can go on there.
            go_on = _byte_set(self.automaton.byte_spans(resume))[inside.cross_byte]
            if go_on.any():
                crossing, ends = self._walk(resume, inside.cross[go_on], start=inside.cross_from[go_on])
                extra.append(t.order[self._without_doomed(crossing, ends)[0]])
        if inside.long_cross.size:
            extra.append(self._walk_long(state, inside.long_cross)[0])
        # What the configurations outside allow, kept apart where both sides allow most tokens
        # (a string beside another frame's string): the union is then taken over the few ids
        # each side disallows.
        most = None
        if outside >= 0:
            most = self.mask(outside)
            if not (most.inverted and base.inverted):
                extra.append(most.allowed_ids(t.size))
                most = None
        if accepting:
            extra.append(t.eos_ids)
        extra = [e for e in extra if e.size]
        if not extra and most is None:
            return base
        # The same rule called from places that are followed alike (every string property
        # followed by `,"`) adds the same few tokens to it: the union is made once.
        added = np.sort(np.concatenate(extra)) if extra else _NO_WORDS
        key = (local, -1 if most is None else outside, added.tobytes())
        found = self._unions.get(key)
        if found is None:
            if most is not None:  # disallowed: what neither side allows, less the added tokens
                found = self._all_but(np.intersect1d(base.ids, most.ids, assume_unique=True), added)
            elif not base.inverted:
                found = self._state_mask([base.ids, added], False)
            else:
                found = self._all_but(base.ids, added)
            self._unions[key] = found
        return found

    def _inside_of(self, local: int) -> _Inside:
        """Walk the tokens from a state seen inside its frame (see `Automaton.frame_split`),
        noting each token that reaches the frame's end with bytes still to go."""
        track = _Track([] if self.automaton.nfa.recursive else None)
        in_key = self._key_text_walk(local, track)
        if in_key is not None:
            loop, positions, long_ids = in_key
        else:
            loop, positions, _, long_ids = self._walk_from(local, track)
        long_kept, long_cross = self._split_long(local, long_ids, track)
        depths = self.automaton.depths
        reach = 0
        if track.passed:
            # Each state once (a walk passes the same few states hundreds of thousands of times).
            seen = np.zeros(len(depths), dtype=bool)
            for states in track.passed:
                seen[states] = True
            reach = max([depths[s] for s in np.flatnonzero(seen).tolist()], default=0)
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

    def _key_text_walk(self, local: int, track: _Track) -> tuple[LoopClass, np.ndarray, np.ndarray] | None:
        """`_walk_from` of a state at a character boundary inside a key text (see
        `marks.key_text`: a key's prefix, where the declared names branch): a token without a
        quote byte goes on from there exactly as from the string's inside, the loop state most
        of its bytes lead to, so the inside's class and its kept walk answer those, and only the
        tokens with a quote are walked from the state itself (their verdict depends on whether
        the key may end there). Walking every token that starts with a name's letter through
        the names' trie would build a row for each prefix they spell. Returns the loop class,
        the positions of the other short tokens allowed, and the long tokens still to walk;
        None for any other state."""
        a = self.automaton
        marked = a.nfa.key_text
        configs = a.configs[local]
        if not configs or not all(marked[q] for q, _ in configs):
            return None
        row = a.byte_row(local)
        alive = row[row >= 0]
        if alive.size < _LOOP_BYTES:
            return None
        targets, counts = np.unique(alive, return_counts=True)
        inside = int(targets[counts.argmax()])
        if inside == local or a.exits[inside] or not all(marked[q] for q, _ in a.configs[inside]):
            return None
        inside_row = a.byte_row(inside)
        loop = self._loop_class(inside, inside_row)
        # A byte the inside loops on that is dead here: inside an escape or a character.
        if loop is None or (row[:128][inside_row[:128] == inside] < 0).any():
            return None
        others = loop.other_positions
        quoted = (self.tables.ascii_bits[others, 0] & _QUOTE_BIT) != 0
        plain, plain_ends = self._from_loop(inside, loop, ~quoted, track)
        walked, walked_ends = self._walk(local, others[quoted], track=track)
        positions = np.concatenate([plain, walked])
        return loop, self._without_doomed(positions, np.concatenate([plain_ends, walked_ends]))[0], loop.other_long_ids

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

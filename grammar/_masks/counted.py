"""Counted repeats of characters (a bounded string after some of its characters): their masks
from the vocabulary's character profiles, by the room left, rather than from a walk of every
token."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._tokens.tables import CharacterProfile
from .common import _CHARACTER_STATES, _NO_WORDS, _byte_set
from .pool import StateMask


class CountedMixin:
    """The masks of counted repeats (a part of `CompiledGrammar`)."""

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
            if stack and nfa.count_at(stack[0]) is not None:
                if frame is not None and stack != frame:
                    return None
                frame = stack
        if frame is None:
            return None
        site, upto, least, most = nfa.count_at(frame[0])
        if site not in nfa.count_sites:
            return None  # a count of a `Counted` language: its moves call many bodies
        body, end = nfa.count_sites[site]
        starts = a.call_starts(body)
        if starts is None:
            return None
        inner = {(q, frame) for q in starts}
        held = set(configs)
        if not inner <= held:
            return None
        done = upto - 1
        follow = a.state_at(end, frame[1])
        rest = held - inner
        if rest != set(a.configs[follow] if done >= least and follow >= 0 else ()):
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
        done_configs = ((a.nfa.exit, ()),)
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
            found = self._walked_leavers(follow, profile)
        self._leavers[key] = found
        return found

    def _walked_leavers(self, state: int, profile: CharacterProfile) -> _Leavers:
        """The profile's leavers allowed from `state` (DEAD: none), which reads the byte each
        goes on with after its characters: where a repeat goes on once done, or any state of a
        chain whose states all read the bytes outside the class alike."""
        t = self.tables
        if state < 0:
            ids, counts = _NO_WORDS, _NO_WORDS
        else:
            # Only the leavers whose next byte `state` reads can go on there.
            goes_on = _byte_set(self.automaton.byte_spans(state))[profile.leave_bytes]
            positions, offsets = profile.leave_positions[goes_on], profile.leave_offsets[goes_on]
            kept, ends = self._walk(state, positions, start=offsets)
            kept = self._without_doomed(kept, ends)[0]
            counts = [profile.leave_counts[goes_on][np.searchsorted(positions, kept)]]
            ids = [t.order[kept]]
            long_ids, long_counts = [], []
            for tid, offset, count in profile.long_leavers:
                nxt = self.automaton.walk(state, t.token_bytes[tid][offset:])
                if nxt >= 0 and not self._doomed(nxt):
                    long_ids.append(tid)
                    long_counts.append(count)
            ids = np.concatenate([*ids, np.array(long_ids, np.int32)]).astype(np.int32)
            counts = np.concatenate([*counts, np.array(long_counts, np.int32)]).astype(np.int32)
        by_count = np.argsort(counts, kind="stable")
        return _Leavers(ids[by_count], counts[by_count], int(counts.max()) if counts.size else 0)


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

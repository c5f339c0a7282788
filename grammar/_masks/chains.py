"""Chains of states led one to the next by one class of bytes (a pattern intersected with a
length is lowered so: a state per character read): their masks from the vocabulary's profile of
the class, by the room the chain leaves, rather than from a walk of every token.

A chain is followed once, state by state, and remembered: the masks of its states read their
room and the bytes read along it from the one record. Where every state within a token's reach
leaves the class alike (the same successors on the same other bytes: a pattern's count far from
its minimum), a state's mask depends only on its room, and the tokens that leave the class are
walked once for the whole chain."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._tokens.tables import CharacterProfile
from .common import _LOOP_BYTES
from .counted import _Leavers
from .pool import StateMask
from .walks import _UTF8_LEADS

_GOES_ON, _ENDS, _LOOPS, _BREAKS = range(4)  # how far a chain is known (see `_Chain.stop`)


def _with_utf8(links: np.ndarray) -> np.ndarray:
    """The byte automaton (as `TokenTables.character_profile` takes it) of one character of
    the single-byte class `links` or one whole non-ASCII character, of the shapes UTF-8
    allows (`walks._UTF8_SHAPES`): state 0 a character's start; 1, 2, 3 one, two, three
    continuation bytes to go; 4 to 7 the second bytes E0, ED, F0 and F4 narrow."""
    table = np.full((8, 256), -1, dtype=np.int32)
    table[0, links] = -2
    table[0, 0xC2:0xE0] = 1
    table[0, 0xE0] = 4
    table[0, 0xE1:0xED] = 2
    table[0, 0xED] = 5
    table[0, 0xEE:0xF0] = 2
    table[0, 0xF0] = 6
    table[0, 0xF1:0xF4] = 3
    table[0, 0xF4] = 7
    table[1, 0x80:0xC0] = -2
    table[2, 0x80:0xC0] = 1
    table[3, 0x80:0xC0] = 2
    table[4, 0xA0:0xC0] = 1
    table[5, 0x80:0xA0] = 1
    table[6, 0x90:0xC0] = 2
    table[7, 0x80:0x90] = 2
    return table


@dataclass(slots=True)
class _Chain:
    """The states along a chain, as far as followed, with what each reads."""

    states: list[int]
    index: dict[int, int] = field(default_factory=dict)  # state -> its place in `states`
    reads: list[np.ndarray] = field(default_factory=list)  # per state: the bytes it reads
    # per state: its successors on the bytes outside the class, numbered (equal rows, equal ids)
    residues: list[int] = field(default_factory=list)
    # _GOES_ON: not followed past the last state yet; _ENDS: the last reads no byte of the
    # class; _LOOPS: the class leads the last back to itself; _BREAKS: the class's bytes part
    # ways there, or lead to a state met before (a longer loop)
    stop: int = _GOES_ON

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self.reads)


class ChainsMixin:
    """The masks of chains (a part of `CompiledGrammar`)."""

    def _chain_mask(self, state: int, accepting: bool, into_loops: bool = True) -> StateMask | None:
        """The mask of a state that starts a chain: the tokens made only of the class that fit
        the chain's length, from the vocabulary's profile of the class, and the others that
        may be allowed (walked, or, where the chain leaves the class alike within their reach,
        taken from the chain's leavers by room). None where `state` starts no such chain (or
        it loops: loop classes answer those), or, without `into_loops`, where the chain ends
        in a loop (a string's first characters inside a call, whose frame's walk serves every
        caller)."""
        a = self.automaton
        t = self.tables
        widest = max(a.byte_spans(state), key=lambda span: span[1] - span[0])
        first = a.step(state, widest[0])
        if first == state:
            return None  # a loop (a string's inside), found without building the whole row
        if first >= 0 and a.step(first, widest[0]) == first:
            # A string's first character, one step before its loop: no chain (see
            # `_chain_along`), found without building either row.
            return None
        row = a.byte_row(state)
        targets, counts = np.unique(row[row >= 0], return_counts=True)
        if not counts.size or counts.max() < _LOOP_BYTES or targets[counts.argmax()] == state:
            return None
        links = row == targets[counts.argmax()]
        table = np.full((1, 256), -1, dtype=np.int32)
        table[0, links] = -2  # each byte of the class is one step along the chain
        profile = t.character_profile(table)
        along = self._chain_along(state, links, profile.reach, into_loops)
        if along is None:
            return None
        if along[1] is None and (row[_UTF8_LEADS] >= 0).any():
            profile, along = self._with_characters(state, links, into_loops) or (profile, along)
        steps, residue, reads = along
        if residue is not None:
            leavers = self._chain_leavers(state, links, residue, profile)
            room = min(steps, max(profile.widest, leavers.most))
            key = (links.tobytes(), residue, room, accepting)
            found = self._by_room.get(key)
            if found is None:
                found = self._by_room[key] = self._room_mask(profile, leavers, room, 0, accepting)
            return found
        # The others go on only if their first byte that leaves the class is read somewhere
        # along the chain (and, the first, here).
        counts = profile.leave_counts
        first_ok = np.where(counts == 0, (row >= 0)[profile.leave_bytes], counts <= steps)
        walked = profile.leave_positions[first_ok & reads[profile.leave_bytes]]
        kept = self._without_doomed(*self._walk(state, walked))[0]
        long_ids = np.array([tid for tid, _, count in profile.long_leavers if count <= steps], np.int32)
        long_kept = self._walk_long(state, long_ids)[0]
        allowed = profile.needs <= steps
        allowed[t.order[kept]] = True
        allowed[long_kept] = True
        return self._vector_mask(allowed, accepting)

    def _with_characters(self, state: int, links: np.ndarray, into_loops: bool
                         ) -> tuple[CharacterProfile, tuple[int, None, np.ndarray]] | None:
        """The profile and `_chain_along` of a chain whose states differ along it, its class
        joined by every whole non-ASCII character, where each leads from every state within a
        token's reach to the next as the class does (a string under a length with an
        unanchored pattern once it has matched: each character one count). A token of such
        characters then reads along the chain as one of the class does, answered by the
        profile, where it would be walked byte by byte (at `o45481`'s second character on
        Qwen2.5, 57,080 of the 58,746 tokens walked); only those with a quote, an escape or a
        broken character are walked. None where some character leads elsewhere (before the
        pattern has matched; an ASCII pattern's chain, whose first state reads none)."""
        if links[0x80:].any():
            return None
        chain = self._chain_at.get((links.tobytes(), state))
        if chain is None:
            # A count's periodic chain (see `_count_periodic`), followed no further than its
            # first state: the states within a token's reach differ from it only in the count,
            # so what one character does from the first, it does from each.
            nxt = int(self.automaton.byte_row(state)[links][0])
        else:
            i = chain.index[state]
            if i + 1 >= len(chain.states):
                return None
            nxt = chain.states[i + 1]
        if not self._utf8_leads_to(state, nxt):
            return None
        profile = self.tables.character_profile(_with_utf8(links))
        along = self._chain_along(state, links, profile.reach, into_loops)
        if along is None or along[1] is not None:
            return None
        if chain is not None:
            last = len(chain.states) - 1
            for k in range(i + 1, i + along[0]):  # each state a token of `steps` characters reads one in
                if k + 1 <= last:
                    src, dst = chain.states[k], chain.states[k + 1]
                elif chain.stop == _LOOPS:
                    src = dst = chain.states[last]
                else:
                    return None
                if not self._utf8_leads_to(src, dst):
                    return None
        return profile, along

    def _chain_along(self, state: int, links: np.ndarray, reach: int, into_loops: bool
                     ) -> tuple[int, int | None, np.ndarray | None] | None:
        """How many bytes of the class `links` can be read from `state` on, each of the class
        leading to one state; the residue all those states share, or None where they differ;
        and, only where they differ, the bytes any state along the way reads. None where the class's bytes part ways or
        lead round in a longer loop within a token's reach (`reach`: the most bytes of the
        class a token reads, each byte a character of the class's profile), or the state is
        a string's first character (one state before the loop: the entry walk's). A chain
        longer than every token (a long pattern's count, far from its bound), or ending in a
        state the class loops on (a minimum length without a maximum; only `into_loops`),
        reads `reach`."""
        periodic = self._count_periodic(state, links)
        if periodic is not None:
            return reach, None, periodic
        key = (links.tobytes(), state)
        chain = self._chain_at.get(key)
        if chain is None:
            chain = self._chain_at[key] = _Chain([state], {state: 0})
        i = chain.index[state]
        self._follow_chain(chain, key[0], links, i + reach + 2)
        last = len(chain.states) - 1
        if last > i + reach:  # longer than any token, within a token's reach
            last = i + reach
            steps = reach
        elif chain.stop == _ENDS:
            steps = last - i
        elif chain.stop == _LOOPS and last - i >= 2 and into_loops:
            steps = reach
        else:
            return None
        residues = chain.residues[i:last + 1]
        if residues.count(residues[0]) == len(residues):
            return steps, residues[0], None
        return steps, None, np.logical_or.reduce(chain.reads[i:last + 1])

    def _count_periodic(self, state: int, links: np.ndarray) -> np.ndarray | None:
        """The bytes `state` reads, where it stands far from the bounds of a count (a
        `Counted` language's, or a repeat's) and the class `links` leads it to a state that
        differs from it only in that count: every state along its chain within a token's
        reach is then the same but for the count, which no token brings to a bound (see
        `_far_counts_key`), so each reads the same bytes and the chain is longer than any
        token, found without following it. Else None."""
        if not self.automaton.nfa.has_counts:
            return None
        key = self._far_counts_key(state)
        if key is None:
            return None
        row = self.automaton.byte_row(state)
        on = row[links]
        nxt = int(on[0])
        if nxt < 0 or nxt == state or (on != nxt).any() or self._far_counts_key(nxt) != key:
            return None
        return row >= 0

    def _follow_chain(self, chain: _Chain, links_key: bytes, links: np.ndarray, length: int) -> None:
        """Follow `chain` until it holds `length` states or stops, noting each state's reads
        and residue."""
        a = self.automaton
        while chain.stop == _GOES_ON and len(chain.states) < length:
            s = chain.states[-1]
            row = a.byte_row(s)
            if len(chain.reads) < len(chain.states):
                self._note_chain_state(chain, row, links)
            on = row[links]
            nxt = int(on[0])
            if on.max() < 0:
                chain.stop = _ENDS
            elif nxt < 0 or (on != nxt).any():
                chain.stop = _BREAKS
            elif nxt == s:
                chain.stop = _LOOPS
            elif nxt in chain.index:
                chain.stop = _BREAKS
            else:
                # (a state on two chains keeps the first: both read the same from it on)
                self._chain_at.setdefault((links_key, nxt), chain)
                chain.index[nxt] = len(chain.states)
                chain.states.append(nxt)
        if len(chain.reads) < len(chain.states):
            self._note_chain_state(chain, a.byte_row(chain.states[-1]), links)

    def _note_chain_state(self, chain: _Chain, row: np.ndarray, links: np.ndarray) -> None:
        """Note the bytes the last state of `chain` reads (its byte row `row`) and its residue."""
        chain.reads.append(row >= 0)
        outside = row.copy()
        outside[links] = -1
        chain.residues.append(self._residues.setdefault(outside.tobytes(), len(self._residues)))

    def _chain_leavers(self, state: int, links: np.ndarray, residue: int,
                       profile: CharacterProfile) -> _Leavers:
        """The tokens that leave the class `links` from a state of residue `residue` (`state`,
        after any count of the class's bytes) and are allowed where they go, by the bytes of
        the class they read first: walked once for every state of that residue, as each reads
        a byte outside the class alike."""
        key = (links.tobytes(), residue)
        found = self._chain_leavers_by.get(key)
        if found is None:
            found = self._chain_leavers_by[key] = self._walked_leavers(state, profile)
        return found

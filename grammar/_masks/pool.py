"""A state's token set as a `StateMask`, and the pool that lets states with the same set share one:
masks are made here, in whichever form is smaller, and never change once made."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from .._tokens.tables import LoopClass
from .common import _FEW_WORDS, _FIRST, _NO_WORDS, _SMALL, _distinct


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


class PoolMixin:
    """Masks made and pooled (a part of `CompiledGrammar`)."""

    def eos_only_mask(self) -> StateMask:
        """The mask that allows only the end of sequence (a finished document's next token)."""
        if self._eos_only is None:
            eos = self.tables.eos_ids
            words, values = packed_words(eos, False)
            self._eos_only = StateMask(int(eos.size), eos, False, words, values, word_pairs(words, values))
        return self._eos_only

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
            ids = _distinct(np.concatenate(parts)).astype(np.int32)
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


def _size_of(pairs: tuple[tuple[int, int], ...] | None) -> int:
    """Bytes the Python objects of `pairs` take (counting every int, shared or not)."""
    if pairs is None:
        return 0
    return sys.getsizeof(pairs) + sum(sys.getsizeof(p) + sys.getsizeof(p[0]) + sys.getsizeof(p[1]) for p in pairs)

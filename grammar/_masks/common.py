"""What the rooms of `_masks` share: empty arrays, single bytes, and the thresholds that choose
between a mask's ways of being found (each tuned on the benchmarks' vocabularies)."""

from __future__ import annotations

import numpy as np

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


def _distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array: a sort and a comparison of neighbours
    (numpy 2.3+'s `np.unique` hashes first and sorts after, up to 17x slower on token ids)."""
    if values.size < 2:
        return values.copy()
    ordered = np.sort(values)
    keep = np.empty(ordered.size, dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _byte_set(spans: list[tuple[int, int]]) -> np.ndarray:
    """The 256 bytes as booleans, True in the half-open ranges `spans`."""
    found = np.zeros(256, dtype=bool)
    for b0, b1 in spans:
        found[b0:b1] = True
    return found

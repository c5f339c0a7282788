"""Sets of code points as inclusive ranges: the one algebra the IR, the front ends and the
recognizer share.

A normal set is a tuple of sorted, disjoint, non-adjacent `(lo, hi)` ranges; every operation
here takes normal sets (or, for `normal` and `encodable`, any ranges) and returns one.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)

Ranges = tuple[tuple[int, int], ...]


def normal(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Any ranges (any order, overlapping or adjacent, empty ones dropped) as a normal set."""
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            continue
        if merged and lo <= merged[-1][1] + 1:
            if hi > merged[-1][1]:
                merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return tuple(merged)


def encodable(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """The code points of `ranges` that UTF-8 can encode: within 0..U+10FFFF, surrogates out."""
    clipped: list[tuple[int, int]] = []
    for lo, hi in ranges:
        lo, hi = max(lo, 0), min(hi, MAX_CODE_POINT)
        if lo <= SURROGATES[1] and hi >= SURROGATES[0]:
            if lo < SURROGATES[0]:
                clipped.append((lo, SURROGATES[0] - 1))
            if hi > SURROGATES[1]:
                clipped.append((SURROGATES[1] + 1, hi))
        elif lo <= hi:
            clipped.append((lo, hi))
    return normal(clipped)


def union(a: Ranges, b: Ranges) -> Ranges:
    if not a or a == b:
        return b
    if not b:
        return a
    return normal(a + b)


def intersection(a: Ranges, b: Ranges) -> Ranges:
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return tuple(out)


def intersects(a: Ranges, b: Ranges) -> bool:
    i = k = 0
    while i < len(a) and k < len(b):
        if a[i][1] < b[k][0]:
            i += 1
        elif b[k][1] < a[i][0]:
            k += 1
        else:
            return True
    return False


def complement(ranges: Ranges) -> Ranges:
    """Every code point 0..U+10FFFF not in `ranges` (surrogates included: see `encodable`)."""
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return tuple(out)

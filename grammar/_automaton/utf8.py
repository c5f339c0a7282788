"""Code points lowered to UTF-8: the byte-range sequences that encode a range of them, and a
class's encoding as a DAG of byte ranges (the states an automaton reads it with)."""

from __future__ import annotations

from functools import lru_cache

_UTF8_BOUNDS = ((0, 0x7F), (0x80, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF))


@lru_cache(maxsize=4096)
def utf8_ranges(lo: int, hi: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Byte-range sequences whose union encodes exactly the code points lo..hi."""
    out: list[list[tuple[int, int]]] = []
    for blo, bhi in _UTF8_BOUNDS:
        a, b = max(lo, blo), min(hi, bhi)
        if a <= b:
            _split(a, b, out)
    return tuple(tuple(seq) for seq in out)


def _split(lo: int, hi: int, out: list[list[tuple[int, int]]]) -> None:
    # Split until the range is "rectangular": every continuation byte spans its full range.
    n = len(chr(lo).encode("utf-8", "surrogatepass"))
    for i in range(1, n):
        m = (1 << (6 * i)) - 1
        if lo & ~m != hi & ~m:
            if lo & m != 0:
                _split(lo, lo | m, out)
                _split((lo | m) + 1, hi, out)
                return
            if hi & m != m:
                _split(lo, (hi & ~m) - 1, out)
                _split(hi & ~m, hi, out)
                return
    a = chr(lo).encode("utf-8", "surrogatepass")
    b = chr(hi).encode("utf-8", "surrogatepass")
    out.append([(x, y) for x, y in zip(a, b)])


# A class's UTF-8 encoding as a DAG: the byte ranges a state reads, each with what follows it
# (None: the character is whole).
Utf8Shape = tuple[tuple[tuple[int, int], "Utf8Shape | None"], ...]


@lru_cache(maxsize=1024)
def utf8_shape(ranges: tuple[tuple[int, int], ...]) -> Utf8Shape:
    """The byte-range sequences of a class of code points, their common prefixes shared (a
    trie) and their common suffixes too (equal subtrees are one object): a class of all of
    Unicode is 7 states rather than 17, in every string of a schema."""
    trie: dict = {}
    for lo, hi in ranges:
        for seq_ in utf8_ranges(lo, hi):
            level = trie
            for r in seq_:
                level = level.setdefault(r, {})
    interned: dict[Utf8Shape, Utf8Shape] = {}

    def shape(level: dict) -> Utf8Shape:
        made = tuple((r, shape(sub) if sub else None) for r, sub in level.items())
        return interned.setdefault(made, made)

    return shape(trie)

"""Code points lowered to UTF-8: the byte-range sequences that encode a range of them."""

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

"""JSON number texts whose values lie in a range, as digit automata in the IR.

The validator compares numbers as Python does: an integer text parses to an exact `int`, any
text with a fraction or an exponent to a rounded `float`, and `int`/`float` comparisons are
exact. So integer texts are bounded exactly, and fractional texts are bounded by the nearest
doubles inside the range (rounding is monotone, so a decimal at or past a double bound rounds to
a float at or past it). Exponent forms are only produced where no bound can be crossed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from os.path import commonprefix
from typing import Callable

from .._errors import CompileError, LimitError
from .._ir import EMPTY, NOTHING, Node, alt, chars, lit, opt, plus, ref, repeat, seq, star
from . import lang

DIGIT = chars([(0x30, 0x39)])
NONZERO = chars([(0x31, 0x39)])
MAX_MODULUS = 10_000
MAX_DIGITS = 400

# Texts of every JSON number, as json.loads reads them.
UNSIGNED_INT = alt(lit("0"), seq(NONZERO, star(DIGIT)))
FRACTION = seq(lit("."), plus(DIGIT))
EXPONENT = seq(chars([(0x45, 0x45), (0x65, 0x65)]), opt(chars([(0x2B, 0x2B), (0x2D, 0x2D)])), plus(DIGIT))
UNSIGNED_NUMBER = seq(UNSIGNED_INT, opt(FRACTION), opt(EXPONENT))
ANY_INTEGER = seq(opt(lit("-")), UNSIGNED_INT)
ANY_NUMBER = seq(opt(lit("-")), UNSIGNED_NUMBER)

# Texts whose value is not an integer: under 1e7 in magnitude with a fraction of at most 8
# digits, one of them nonzero. At most 15 significant digits round-trip through a double, so
# the float the validator reads is no integer either (more digits may round to one:
# 1.99999999999999990 is 2.0).
NONINTEGRAL_MAGNITUDE = 10**7
_FRACTION_SCALE = 10**8
_NONZERO_DIGITS = lang.intersect(lang.from_node(seq(star(DIGIT), NONZERO, star(DIGIT))), lang.lengths(1, 8))


@dataclass(frozen=True)
class Bound:
    """One numeric bound from a schema: its exact value and whether it excludes itself."""

    value: Fraction
    exclusive: bool
    raw: int | float

    @staticmethod
    def of(raw: int | float, exclusive: bool, pointer: str, keyword: str) -> "Bound":
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise CompileError(f"{keyword} must be a number, not {raw!r}", keyword=keyword, pointer=pointer)
        if isinstance(raw, float) and not math.isfinite(raw):
            raise CompileError(f"{keyword} is not finite", keyword=keyword, pointer=pointer)
        return Bound(Fraction(raw), exclusive, raw)


def tighter_lower(a: Bound | None, b: Bound | None) -> Bound | None:
    if a is None or b is None:
        return a or b
    if a.value != b.value:
        return a if a.value > b.value else b
    return a if a.exclusive else b


def tighter_upper(a: Bound | None, b: Bound | None) -> Bound | None:
    if a is None or b is None:
        return a or b
    if a.value != b.value:
        return a if a.value < b.value else b
    return a if a.exclusive else b


def integer_range(lo: Bound | None, hi: Bound | None) -> tuple[int | None, int | None]:
    """The inclusive integer bounds equivalent to `lo`/`hi` (None: unbounded)."""
    ilo = ihi = None
    if lo is not None:
        ilo = math.floor(lo.value) + 1 if lo.exclusive else math.ceil(lo.value)
    if hi is not None:
        ihi = math.ceil(hi.value) - 1 if hi.exclusive else math.floor(hi.value)
    return ilo, ihi


def contains_number(value: int | float, lo: Bound | None, hi: Bound | None) -> bool:
    """Whether the validator finds `value` within the bounds (Python's exact comparison)."""
    if lo is not None and (value <= lo.raw if lo.exclusive else value < lo.raw):
        return False
    if hi is not None and (value >= hi.raw if hi.exclusive else value > hi.raw):
        return False
    return True


# --- integers --------------------------------------------------------------------------------


class _Digits:
    """Canonical decimal texts (no leading zeros) of naturals in a range, divisible by `k`.

    Built as a left-to-right automaton whose state is (digits left, tight on the low bound,
    tight on the high bound, remainder mod k). States free of both bounds are shared as named
    rules when k > 1, so a modulus costs O(digits * k) rules, not a tree per path.
    """

    def __init__(self, k: int, rule: Callable[[str, Node], Node], tag: str):
        self.k = k
        self.rule = rule
        self.tag = tag
        self.free: dict[tuple[int, int], Node] = {}

    def free_suffix(self, n: int, need: int) -> Node:
        """All n-digit strings s (leading zeros allowed) with int(s) % k == need."""
        if self.k == 1:
            return repeat(DIGIT, n, n)
        if n == 0:
            return EMPTY if need == 0 else NOTHING
        if (n, need) in self.free:
            return self.free[(n, need)]
        # The (digits, remainder) pairs below it, found top down; then each rule built after the
        # ones it refers to, in a loop (a bound may have hundreds of digits).
        wanted = [(n, need)]
        seen = {(n, need)}
        for m, r in wanted:
            if m > 1:
                for rest in self._rests(m, r):
                    if (m - 1, rest) not in seen and (m - 1, rest) not in self.free:
                        seen.add((m - 1, rest))
                        wanted.append((m - 1, rest))
        for m, r in reversed(wanted):
            parts = []
            for rest, ds in sorted(self._rests(m, r).items()):
                tail = self.free[(m - 1, rest)] if m > 1 else EMPTY if rest == 0 else NOTHING
                parts.append(seq(_digit_class(ds), tail))
            body = alt(*parts)
            self.free[(m, r)] = self.rule(f"{self.tag}-{m}-{r}", body)
        return self.free[(n, need)]

    def _rests(self, n: int, need: int) -> dict[int, list[int]]:
        """The digits an n-digit string with remainder `need` may begin with, by the remainder
        its other n - 1 digits must have."""
        p = pow(10, n - 1, self.k)
        groups: dict[int, list[int]] = {}
        for d in range(10):
            groups.setdefault((need - d * p) % self.k, []).append(d)
        return groups

    def between(self, lo: str, hi: str, need: int) -> Node:
        """Strings s of len(lo) == len(hi) digits with lo <= s <= hi and int(s) % k == need.

        A flat alternation of parts (a fixed prefix, one digit from a class, free digits), not
        one nested level per digit: a bound of hundreds of digits (1e308) must not build a node
        hundreds of levels deep, which every walk over the grammar would then have to descend.
        """
        n = len(lo)
        if lo > hi:
            return NOTHING
        c = len(commonprefix([lo, hi]))
        if c == n:
            return lit(lo) if int(lo) % self.k == need else NOTHING
        a, b = int(lo[c]), int(hi[c])
        return alt(
            *self._at_least(lo[: c + 1], lo[c + 1 :], need),
            *self._free_after(lo[:c], range(a + 1, b), need, n - c - 1),
            *self._at_most(hi[: c + 1], hi[c + 1 :], need),
        )

    def _at_least(self, prefix: str, low: str, need: int) -> list[Node]:
        """Parts of the texts `prefix` + S, len(S) == len(low), S >= low, whole % k == need."""
        kept = low.rstrip("0")  # S >= kept + "00..." is kept, then any digits
        parts = [seq(lit(prefix + kept), self._free(prefix + kept, len(low) - len(kept), need))]
        for j, d in enumerate(kept):
            parts.extend(self._free_after(prefix + kept[:j], range(int(d) + 1, 10), need, len(low) - j - 1))
        return parts

    def _at_most(self, prefix: str, high: str, need: int) -> list[Node]:
        """Parts of the texts `prefix` + S, len(S) == len(high), S <= high, whole % k == need."""
        kept = high.rstrip("9")  # S <= kept + "99..." is kept, then any digits
        parts = [seq(lit(prefix + kept), self._free(prefix + kept, len(high) - len(kept), need))]
        for j, d in enumerate(kept):
            parts.extend(self._free_after(prefix + kept[:j], range(0, int(d)), need, len(high) - j - 1))
        return parts

    def _free(self, prefix: str, rest: int, need: int) -> Node:
        """`rest` free digits after `prefix`, the whole having remainder `need`."""
        done = int(prefix or "0") * pow(10, rest, self.k) % self.k
        return self.free_suffix(rest, (need - done) % self.k)

    def _free_after(self, prefix: str, ds: range, need: int, rest: int) -> list[Node]:
        """Parts of the texts `prefix`, a digit from `ds`, `rest` free digits, whole % k == need."""
        groups: dict[int, list[int]] = {}
        base = int(prefix or "0") * pow(10, rest + 1, self.k)
        p = pow(10, rest, self.k)
        for d in ds:
            groups.setdefault((need - base - d * p) % self.k, []).append(d)
        return [
            seq(lit(prefix), _digit_class(group), self.free_suffix(rest, remainder))
            for remainder, group in sorted(groups.items())
        ]

    def naturals(self, lo: int, hi: int | None) -> Node:
        """Canonical texts of naturals lo <= n <= hi (hi None: unbounded) with n % k == 0."""
        if hi is not None and hi < lo:
            return NOTHING
        parts: list[Node] = []
        if lo == 0:
            parts.append(lit("0"))
            lo = 1
        if hi is not None and hi < lo:
            return alt(*parts)
        la = len(str(lo))
        lb = len(str(hi)) if hi is not None else la
        if max(la, lb) > MAX_DIGITS:
            raise LimitError(f"numeric bound has more than {MAX_DIGITS} digits")
        if hi is None and self.k == 1 and lo == 10 ** (la - 1):
            # Every natural of `la` digits or more (minimum 1, say): one shape, not the ones of
            # `la` digits and the longer ones apart, which would begin alike.
            return alt(*parts, seq(NONZERO, repeat(DIGIT, la - 1, None)))
        lengths = range(la, lb + 1)
        if self.k == 1 and lb - la > 2:
            # The lengths strictly between are free: one shape, not one per length (a bound of
            # 309 digits would spell 309 of them out, ~48,000 automaton states).
            parts.append(seq(NONZERO, repeat(DIGIT, la, lb - 2)))
            lengths = (la, lb)
        for length in lengths:
            a = max(lo, 10 ** (length - 1))
            b = 10**length - 1 if hi is None else min(hi, 10**length - 1)
            if a <= b:
                parts.append(self.between(str(a), str(b), 0))
        if hi is None:
            parts.append(self.unbounded_longer(la))
        return alt(*parts)

    def unbounded_longer(self, shortest: int) -> Node:
        """Canonical texts with more than `shortest` digits, divisible by k."""
        if self.k == 1:
            return seq(NONZERO, repeat(DIGIT, shortest, None))
        # Remainder automaton, left to right: R_r reads the rest of a number whose prefix is r.
        names = {r: f"{self.tag}-mod-{r}" for r in range(self.k)}
        for r in range(self.k):
            groups: dict[int, list[int]] = {}
            for d in range(10):
                groups.setdefault((r * 10 + d) % self.k, []).append(d)
            body = alt(
                EMPTY if r == 0 else NOTHING,
                *(seq(_digit_class(ds), ref(names[t])) for t, ds in sorted(groups.items())),
            )
            self.rule(names[r], body)
        # First `shortest + 1` digits fixed in count, then the remainder automaton.
        starts: list[Node] = []
        for first in range(1, 10):
            for r in range(self.k):
                prefix = self._prefix_with_remainder(first, shortest, r)
                if prefix != NOTHING:
                    starts.append(seq(prefix, ref(names[r])))
        return alt(*starts)

    def _prefix_with_remainder(self, first: int, tail: int, r: int) -> Node:
        """`first` then `tail` free digits, the whole having remainder r mod k."""
        p = pow(10, tail, self.k)
        need = (r - first * p) % self.k
        return seq(lit(str(first)), self.free_suffix(tail, need))


def _digit_class(ds: list[int]) -> Node:
    return chars((0x30 + d, 0x30 + d) for d in ds)


def integer_texts(
    lo: int | None, hi: int | None, modulus: int = 1, *, rule: Callable[[str, Node], Node], tag: str
) -> Node:
    """JSON texts of the integers n with lo <= n <= hi and n % modulus == 0: canonical, plus
    "-0" where 0 is in range (JSON allows it, and it is 0)."""
    if modulus < 1:
        raise CompileError("multipleOf must be positive", keyword="multipleOf")
    if modulus > MAX_MODULUS:
        raise LimitError(f"multipleOf {modulus} is above the supported {MAX_MODULUS}", keyword="multipleOf")
    if lo is None and hi is None and modulus == 1:
        return ANY_INTEGER
    digits = _Digits(modulus, rule, tag)
    parts: list[Node] = []
    if hi is None or hi >= 0:
        parts.append(digits.naturals(max(lo, 0) if lo is not None else 0, hi))
    if lo is None or lo < 0:
        top = -1 if hi is None else min(hi, -1)
        parts.append(seq(lit("-"), digits.naturals(-top, None if lo is None else -lo)))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        parts.append(lit("-0"))
    return alt(*parts)


# --- fractional texts ------------------------------------------------------------------------


def _decimal_digits(x: Fraction) -> tuple[int, str]:
    """Integer part and exact fractional digits (no trailing zeros) of a dyadic x >= 0."""
    whole = math.floor(x)
    frac = x - whole
    digits = []
    while frac:
        frac *= 10
        d = math.floor(frac)
        digits.append(str(d))
        frac -= d
        if len(digits) > 1100:
            raise LimitError("numeric bound has too many fractional digits")
    return whole, "".join(digits)


def _fraction_at_least(f: str) -> Node:
    """Non-empty fraction digit strings F with 0.F >= 0.f."""
    if not f:
        return plus(DIGIT)
    parts = [seq(lit(f), star(DIGIT))]
    for j, c in enumerate(f):
        if c != "9":
            parts.append(seq(lit(f[:j]), chars([(ord(c) + 1, 0x39)]), star(DIGIT)))
    return alt(*parts)


def _fraction_at_most(f: str) -> Node:
    """Non-empty fraction digit strings F with 0.F <= 0.f."""
    if not f:
        return plus(lit("0"))
    parts = []
    for j, c in enumerate(f):
        if c != "0":
            parts.append(seq(lit(f[:j]), chars([(0x30, ord(c) - 1)]), star(DIGIT)))
        prefix = f[: j + 1]
        parts.append(seq(lit(prefix), star(lit("0"))))
    return alt(*parts)


def _fraction_between(f: str, g: str) -> Node:
    """Non-empty F with 0.f <= 0.F <= 0.g (f <= g as decimals)."""
    if not f:
        return _fraction_at_most(g)
    if not g:
        return NOTHING
    # Split on the first digit.
    a, b = int(f[0]), int(g[0])
    parts: list[Node] = []
    if a == b:
        rest_f, rest_g = f[1:], g[1:]
        if not rest_g:
            # 0.F <= 0.d exactly: F = d 0*
            return seq(lit(f[0]), star(lit("0"))) if not rest_f else NOTHING
        tail = _fraction_between(rest_f, rest_g)
        head = [seq(lit(f[0]), tail)]
        if not rest_f:
            head.append(lit(f[0]))
        return alt(*head)
    # First digit a: 0.F >= 0.f within a's block.
    rest_f = f[1:]
    parts.append(seq(lit(f[0]), _fraction_at_least(rest_f)) if rest_f else seq(lit(f[0]), star(DIGIT)))
    if b - a > 1:
        parts.append(seq(chars([(0x30 + a + 1, 0x30 + b - 1)]), star(DIGIT)))
    rest_g = g[1:]
    parts.append(seq(lit(g[0]), opt(_fraction_at_most(rest_g))) if rest_g else seq(lit(g[0]), star(lit("0"))))
    return alt(*parts)


def _fractional_magnitudes(lo: Fraction, hi: Fraction | None, rule, tag: str, nonintegral: bool = False) -> Node:
    """Texts I.F (I canonical, F non-empty) with lo <= I.F <= hi, exact decimal comparison;
    with `nonintegral`, only those whose F has a nonzero digit."""
    if hi is not None and hi < lo:
        return NOTHING

    def digits(f: Node, part: str) -> Node:  # fraction digits F; `part` names its rules apart
        if not nonintegral:
            return f
        return lang.to_node(lang.intersect(lang.from_node(f), _NONZERO_DIGITS), rule, f"{tag}f{part}")

    lo_int, lo_frac = _decimal_digits(lo)
    if hi is not None:
        hi_int, hi_frac = _decimal_digits(hi)
        if lo_int == hi_int:
            return seq(lit(str(lo_int)), lit("."), digits(_fraction_between(lo_frac, hi_frac), "b"))
    parts = [seq(lit(str(lo_int)), lit("."), digits(_fraction_at_least(lo_frac), "l"))]
    if hi is None:
        parts.append(seq(integer_texts(lo_int + 1, None, rule=rule, tag=tag), lit("."), digits(plus(DIGIT), "a")))
        return alt(*parts)
    if hi_int - lo_int > 1:
        parts.append(seq(integer_texts(lo_int + 1, hi_int - 1, rule=rule, tag=tag), lit("."), digits(plus(DIGIT), "a")))
    parts.append(seq(lit(str(hi_int)), lit("."), digits(_fraction_at_most(hi_frac), "h")))
    return alt(*parts)


TINY = Fraction(1, 10**20)


def _decimal_inside(b: Bound, *, lower: bool) -> Fraction | None:
    """A short decimal D inside bound `b` such that every decimal at or past D rounds, as a
    double, to a float the validator finds inside `b` (None: no double is inside).

    The nearest double inside the bound is found first; D is then rounded inwards to 17
    significant digits (and kept away from zero by at least 1e-20, where underflow lurks).
    """
    step = math.inf if lower else -math.inf
    try:
        f = float(b.raw)
    except OverflowError:
        f = step if (b.value > 0) == lower else -step
    if math.isinf(f):
        if (f > 0) == lower:
            return None
        f = math.nextafter(f, step)
    while (Fraction(f) < b.value if lower else Fraction(f) > b.value) or (b.exclusive and Fraction(f) == b.value):
        f = math.nextafter(f, step)
        if math.isinf(f):
            return None
    # Decimals past the midpoint between f and the double just outside round to f or beyond.
    outside = math.nextafter(f, -step)
    exact = Fraction(f)
    edge = exact if math.isinf(outside) else (exact + Fraction(outside)) / 2
    with localcontext() as ctx:
        ctx.prec = 17
        ctx.rounding = ROUND_CEILING if lower else ROUND_FLOOR
        d = Decimal(edge.numerator) / Decimal(edge.denominator)
        if edge != exact and Fraction(d) == edge:
            d = ctx.next_plus(d) if lower else ctx.next_minus(d)
        short = Fraction(d)
    if lower and 0 < short < TINY:
        short = TINY
    if not lower and -TINY < short < 0:
        short = -TINY
    # A bound of zero itself: the decimals between it and the midpoint past it ("-0.000…247",
    # 324 zeros, which the validator reads as -0.0) are left out; spelled, they are a rule of
    # some 60,000 characters for a plain `minimum: 0`, and no writer means them.
    if (short < 0 <= b.value) if lower else (short > 0 >= b.value):
        short = Fraction(0)
    return short


def number_texts(
    lo: Bound | None,
    hi: Bound | None,
    *,
    integers: bool = True,
    fractions: bool = True,
    nonintegral: bool = False,
    modulus: int = 1,
    rule: Callable[[str, Node], Node],
    tag: str,
) -> Node:
    """JSON texts of numbers the validator finds within `lo`..`hi` (and multiples of `modulus`).

    `integers`: integer texts (exact `int`s), multiples of `modulus`. `fractions`: texts with a
    fraction or exponent (`float`s; never with a modulus), exponent forms only on a side of zero
    no bound limits. `nonintegral`: of those, only texts whose value is not an integer, the ones
    without an exponent whose fraction has a nonzero digit (a subset: `25e-1` is left out).
    """
    ilo, ihi = integer_range(lo, hi)
    ints = integer_texts(ilo, ihi, modulus, rule=rule, tag=tag) if integers else NOTHING
    if not fractions or modulus != 1:
        return ints
    if nonintegral:
        near = Fraction(NONINTEGRAL_MAGNITUDE)
        lo = tighter_lower(lo, Bound(-near, True, -NONINTEGRAL_MAGNITUDE))
        hi = tighter_upper(hi, Bound(near, True, NONINTEGRAL_MAGNITUDE))
    if lo is None and hi is None:
        if integers:  # JSON's own number grammar: one integer part, not one per alternative
            return ANY_NUMBER
        return seq(opt(lit("-")), UNSIGNED_INT, alt(seq(FRACTION, opt(EXPONENT)), EXPONENT))
    dlo = _decimal_inside(lo, lower=True) if lo is not None else None
    dhi = _decimal_inside(hi, lower=False) if hi is not None else None
    if (lo is not None and dlo is None) or (hi is not None and dhi is None):
        return ints
    if nonintegral and dlo is not None and dhi is not None:  # both bounds are set here
        # Its texts have at most 8 fraction digits: the bounds rounded inwards to 8 keep them all.
        dlo = Fraction(math.ceil(dlo * _FRACTION_SCALE), _FRACTION_SCALE)
        dhi = Fraction(math.floor(dhi * _FRACTION_SCALE), _FRACTION_SCALE)
    parts = [ints]
    zero = Fraction(0)
    unsigned_fractional = seq(UNSIGNED_INT, alt(seq(FRACTION, opt(EXPONENT)), EXPONENT))
    # Non-negative texts: magnitudes in [max(dlo, 0), dhi].
    if dhi is None or dhi >= zero:
        if dhi is None and (dlo is None or dlo <= zero):
            parts.append(unsigned_fractional)
        else:
            low = max(dlo, zero) if dlo is not None else zero
            parts.append(_fractional_magnitudes(low, dhi, rule, tag + "p", nonintegral))
    # Negative texts "-m": values -m in [dlo, dhi], so m in [max(-dhi, 0), -dlo].
    if dlo is None or dlo <= zero:
        if dlo is None and (dhi is None or dhi >= zero):
            parts.append(seq(lit("-"), unsigned_fractional))
        else:
            mlo = max(-dhi, zero) if dhi is not None else zero
            high = -dlo if dlo is not None else None
            parts.append(seq(lit("-"), _fractional_magnitudes(mlo, high, rule, tag + "n", nonintegral)))
    return alt(*parts)

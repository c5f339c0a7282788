"""Lowering a merged record to grammar nodes: the dispatch by kind, excluded arrays and
objects, and numbers.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
import math

from .._errors import LimitError
from .._ir import Node, alt, lit, opt, ref, repeat, seq
from .facets import Facets, _ArrayFacet, _ObjectFacet
from .graph import Shape
from .helpers import _added
from .limits import MAX_ALTERNATIVES, MAX_EXCLUDED_NUMBERS
from .numbers import ANY_NUMBER, Bound, number_texts, tighter_lower, tighter_upper
from .values import _kind_of
from .vocabulary import NOT_VALUES


class LoweringMixin:
    """The compiler's lowering (a part of `_Compiler`)."""

    def any_value(self) -> Node:
        if self._any_value is None:
            ws, comma = self.ws, self.comma
            value = ref("json-value")
            member = seq(self.json_string(), self.colon, value)
            obj = seq(lit("{"), ws, opt(seq(member, repeat(seq(comma, member), 0, None))), ws, lit("}"))
            arr = seq(lit("["), ws, opt(seq(value, repeat(seq(comma, value), 0, None))), ws, lit("]"))
            self.rules["json-object"] = obj
            self.rules["json-array"] = arr
            self.rules["json-value"] = alt(
                ref("json-object"), ref("json-array"), self.json_string(), ANY_NUMBER, lit("true"), lit("false"), lit("null")
            )
            self._any_value = value
        return self._any_value

    def lower(self, shape: Shape) -> Node:
        """One branch of a conjunction, its kinds of value side by side."""
        f = shape.facets
        if f.values is not None:
            return self.lower_values(f)
        parts: list[Node] = []
        if "null" in f.kinds and not any(v is None for v in f.not_values):
            parts.append(lit("null"))
        if "boolean" in f.kinds:
            words = [lit(w) for w, v in (("true", True), ("false", False)) if not any(x is v for x in f.not_values)]
            if words:
                parts.append(self.shared(alt(*words), "bool"))
        if "int" in f.kinds or "frac" in f.kinds:
            parts.append(self.shared(self.lower_number(f), "num"))
        if "string" in f.kinds:
            parts.append(self.lower_string(f))
        if "array" in f.kinds:
            parts.extend(self.lower_array(g) for g in shape.arrays)
        if "object" in f.kinds:
            parts.extend(self.lower_object(g) for g in shape.objects)
        return alt(*parts)

    def excluding_containers(self, f: Facets, kind: str) -> list[Facets]:
        """`f`'s values of `kind` ("array" or "object") less its excluded values of that kind,
        as facets with no such exclusion left: each excluded value splits every piece that may
        hold it into the pieces that differ from it in length, in a key, or at one position."""
        excluded = [v for v in f.not_values if _kind_of(v) == kind]
        pieces = [replace(f, not_values=[v for v in f.not_values if _kind_of(v) != kind])]
        for value in excluded:
            split: list[Facets] = []
            for piece in pieces:
                if self.value_ok(value, piece, 0) is False:
                    split.append(piece)
                elif kind == "array":
                    split.extend(self.arrays_unlike(piece, value))
                else:
                    split.extend(self.objects_unlike(piece, value))
                if len(split) > MAX_ALTERNATIVES:
                    raise LimitError(
                        f"excluding {kind}s splits into more than {MAX_ALTERNATIVES} alternatives",
                        keyword="not", pointer=f.pointer,
                    )
            pieces = split
        return pieces

    def arrays_unlike(self, f: Facets, value: list) -> list[Facets]:
        """The arrays of `f` that differ from `value`: shorter, longer, or of its length with
        some item not equal to its item there."""
        n = len(value)
        anything = self.fabricate_at(f.pointer, {})
        out = [replace(f, min_items=max(f.min_items, n + 1))]
        if n > 0:
            out.append(replace(f, max_items=n - 1 if f.max_items is None else min(f.max_items, n - 1)))
        exact = dict(min_items=max(f.min_items, n), max_items=n if f.max_items is None else min(f.max_items, n))
        for i, item in enumerate(value):
            differs = self.fabricate_at(f.pointer, {NOT_VALUES: [item]})
            out.append(replace(f, arrays=f.arrays + [_ArrayFacet([anything] * i + [differs], None)], **exact))
        return [g for g in out if g.max_items is None or g.min_items <= g.max_items]

    def objects_unlike(self, f: Facets, value: dict) -> list[Facets]:
        """The objects of `f` that differ from `value`: one of its keys missing, all of them and
        one more, or one of its keys with another value."""
        out = [replace(f, required=_added(f.required, value), min_props=max(f.min_props, len(value) + 1))]
        for key, item in value.items():
            if key not in f.required:
                absent = _ObjectFacet({key: self.fabricate_at(f.pointer, False)}, [], None, f.pointer)
                out.append(replace(f, objects=f.objects + [absent]))
            differs = self.fabricate_at(f.pointer, {NOT_VALUES: [item]})
            out.append(replace(f, required=_added(f.required, [key]),
                               objects=f.objects + [_ObjectFacet({key: differs}, [], None, f.pointer)]))
        return [g for g in out if g.max_props is None or g.min_props <= g.max_props]

    def lower_number(self, f: Facets) -> Node:
        modulus = 1
        for m in f.multiples:
            modulus = modulus * m // math.gcd(modulus, m)
        # Excluded values cut the range into pieces with exclusive ends.
        cuts = sorted({Fraction(v) for v in f.not_values if _kind_of(v) in ("int", "frac")})
        if len(cuts) > MAX_EXCLUDED_NUMBERS:  # each piece costs rules and memory of its own
            raise LimitError(f"{len(cuts)} excluded numbers cut the range into more than {MAX_EXCLUDED_NUMBERS + 1} "
                             "pieces", keyword="not", pointer=f.pointer)
        # Every integer property with the same bounds has the same texts: built once.
        key = (repr(f.lo), repr(f.hi), modulus, tuple(cuts), "int" in f.kinds, "frac" in f.kinds and not f.multiples,
               f.nonintegral)
        found = self._numbers.get(key)
        if found is None:
            try:
                found = self._numbers[key] = self._number_pieces(f, modulus, cuts)
            except LimitError as e:  # the number lowering knows no places: name this one
                if e.pointer is not None:
                    raise
                raise LimitError(e.reason, keyword=e.keyword, pointer=f.pointer) from None
        return found

    def _number_pieces(self, f: Facets, modulus: int, cuts: list[Fraction]) -> Node:
        points: list[Bound | None] = [None]
        points += [Bound(c, True, int(c) if c.denominator == 1 else float(c)) for c in cuts]
        points.append(None)
        pieces = [
            (tighter_lower(f.lo, points[i]), tighter_upper(f.hi, points[i + 1])) for i in range(len(points) - 1)
        ]
        return alt(
            *(
                number_texts(
                    lo,
                    hi,
                    integers="int" in f.kinds and not f.nonintegral,
                    fractions="frac" in f.kinds and not f.multiples,
                    nonintegral=f.nonintegral,
                    modulus=modulus,
                    rule=self.rule,
                    tag=self.name("num"),
                )
                for lo, hi in pieces
            )
        )

"""What a merged record says of a given value (yes, no, or unknown), and proofs that two
records share no value (for `oneOf` exclusivity).
"""

from __future__ import annotations

import json
import re

from .._ir import Node, alt, lit, seq
from .facets import Facets
from .formats import format_automaton
from .helpers import _joined
from .numbers import contains_number
from .refs import DRAFT4, Place
from .strings import quoted
from .values import _kind_of, _number_spellings, json_key
from .vocabulary import _Cyclic


def _all(verdicts) -> bool | None:
    """Three-valued and: False if any is False, else None if any is unsure."""
    verdicts = list(verdicts)
    if any(v is False for v in verdicts):
        return False
    return None if any(v is None for v in verdicts) else True


def _any(verdicts) -> bool | None:
    verdicts = list(verdicts)
    if any(v is True for v in verdicts):
        return True
    return None if any(v is None for v in verdicts) else False


_KIND_GROUPS = {
    "null": {"null"},
    "boolean": {"boolean"},
    "number": {"int", "frac"},
    "string": {"string"},
    "array": {"array"},
    "object": {"object"},
}


def _kinds(alternatives: list[Facets]) -> set[str]:
    return set().union(*(f.kinds for f in alternatives)) if alternatives else set()


def _accepts_all(f: Facets, kind: str) -> bool:
    """Whether `f` accepts every value of a kind (so two such oneOf branches clash on all)."""
    if not _KIND_GROUPS[kind] <= f.kinds or f.values is not None:
        return False
    if any(_kind_of(v) in _KIND_GROUPS[kind] or (kind == "number" and _kind_of(v) == "int") for v in f.not_values):
        return False
    if kind == "string":
        return f.min_len == 0 and f.max_len is None and not f.patterns and not f.formats and not f.not_patterns
    if kind == "number":
        return f.lo is None and f.hi is None and not f.multiples and not f.nonintegral
    if kind == "array":
        return (
            f.min_items == 0 and f.max_items is None and f.unique is None
            and all(a.rest is None or a.rest.schema is True and not a.prefix for a in f.arrays)
            and all(not a.prefix for a in f.arrays)
        )
    if kind == "object":
        return (
            not f.objects and not f.required and not f.names and f.min_props == 0 and f.max_props is None
            and not f.other_keys
        )
    return True


def _ranges_disjoint(a: Facets, b: Facets) -> bool:
    for low, high in ((a.lo, b.hi), (b.lo, a.hi)):
        if low is not None and high is not None:
            if low.value > high.value or (low.value == high.value and (low.exclusive or high.exclusive)):
                return True
    return False


class ProofsMixin:
    """The compiler's proofs (a part of `_Compiler`)."""

    def lower_values(self, f: Facets) -> Node:
        texts: list[Node] = []
        for value in f.values:
            for candidate in _number_spellings(value):
                if self.value_ok(candidate, f, 0) is True:
                    texts.append(self.value_text(candidate))
        return alt(*texts)

    def value_text(self, value) -> Node:
        """The JSON text of one value in the grammar's form, object keys in the value's own
        order (one spelling per value keeps the text linear in the value's size; the grammar
        may accept fewer spellings than the validator, never more)."""
        ws = self.ws
        if isinstance(value, dict):
            members = [seq(quoted(k), self.colon, self.value_text(v)) for k, v in value.items()]
            return seq(lit("{"), ws, _joined(members, self.comma), ws, lit("}"))
        if isinstance(value, list):
            items = [self.value_text(v) for v in value]
            return seq(lit("["), ws, _joined(items, self.comma), ws, lit("]"))
        if isinstance(value, str):
            return quoted(value)
        return lit(json.dumps(value))

    def value_ok(self, value, f: Facets, depth: int) -> bool | None:
        """Whether the validator accepts `value` under `f`: True, False, or None where unsure
        (a narrowed `f` may leave out a value the validator accepts)."""
        verdict = self._value_verdict(value, f, depth)
        return None if verdict is False and f.narrowed else verdict

    def _value_verdict(self, value, f: Facets, depth: int) -> bool | None:
        """Whether `f`'s values hold `value`: True, False, or None where unsure."""
        if depth > 20:
            return None
        kind = _kind_of(value)
        if kind == "frac" and value.is_integer() and "int" in f.kinds and f.dialect != DRAFT4:
            kind_ok = True
        else:
            kind_ok = kind in f.kinds
        if not kind_ok:
            return False
        if f.values is not None and not self.among(value, f.values):
            return False
        if f.not_values and self.among(value, f.not_values):
            return False
        if kind == "string":
            if len(value) < f.min_len or (f.max_len is not None and len(value) > f.max_len):
                return False
            if any(not re.search(p, value) for p, _ in f.patterns):
                return False
            if any(re.search(p, value) for p, _ in f.not_patterns):
                return False
            for name, _ in f.formats:
                if not format_automaton(name).matches(value):
                    return None
            return True
        if kind in ("int", "frac"):
            if f.nonintegral and (kind == "int" or value.is_integer()):
                return False
            if not contains_number(value, f.lo, f.hi):
                return False
            return all(value % m == 0 for m in f.multiples)
        verdicts: list[bool | None] = []
        if kind == "array":
            if len(value) < f.min_items or (f.max_items is not None and len(value) > f.max_items):
                return False
            if f.unique is not None and len({json_key(item) for item in value}) < len(value):
                return False
            verdicts = [self.conj_ok(item, self.item_conj(f, i), depth) for i, item in enumerate(value)]
        elif kind == "object":
            if len(value) < f.min_props or (f.max_props is not None and len(value) > f.max_props):
                return False
            if any(name not in value for name in f.required):
                return False
            for names, patterns in f.other_keys:
                if not any(k not in names and not any(re.search(p, k) for p in patterns) for k in value):
                    return False
            for key, item in value.items():
                if f.names:
                    verdicts.append(self.conj_ok(key, f.names, depth))
                verdicts.append(self.conj_ok(item, [p for o in f.objects for p in o.schemas_for(key)], depth))
        return _all(verdicts)

    def among(self, value, values: list) -> bool:
        """Whether `value` equals one of `values` as `enum` compares: a set lookup, the set of
        keys found once per list (and again if the list grew)."""
        entry = self._listed.get(id(values))
        if entry is None or entry[0] is not values or entry[1] != len(values):
            entry = self._listed[id(values)] = (values, len(values), {json_key(v) for v in values})
        return json_key(value) in entry[2]

    def conj_ok(self, value, conj: list[Place], depth: int) -> bool | None:
        if not conj:
            return True  # no constraint: every JSON value
        if any(p.schema is False for p in conj):
            return False
        try:
            return _any(self.value_ok(value, g, depth + 1) for g in self.alternatives(conj))
        except _Cyclic:
            return None

    def disjoint_sets(self, a: list[Facets], b: list[Facets], depth: int = 0) -> bool:
        """Whether no value satisfies both an alternative of `a` and one of `b` (True only if sure)."""
        try:
            return all(self.disjoint(x, y, depth) for x in a for y in b)
        except _Cyclic:
            return False  # the answer depends on itself: not provably disjoint

    def disjoint(self, a: Facets, b: Facets, depth: int) -> bool:
        if depth > 4 or a.narrowed or b.narrowed:
            return False
        if a.values is not None or b.values is not None:
            listed, other = (a, b) if a.values is not None else (b, a)
            return all(
                self.value_ok(v, other, 0) is False or self.value_ok(v, listed, 0) is False
                for value in listed.values
                for v in _number_spellings(value)
            )
        numeric = {"int", "frac"}
        kinds_a = {("number" if k in numeric else k) for k in a.kinds}
        kinds_b = {("number" if k in numeric else k) for k in b.kinds}
        for kind in kinds_a & kinds_b:
            if kind in ("null", "boolean"):
                return False
            if kind == "number" and not _ranges_disjoint(a, b):
                return False
            if kind == "string" and not (
                (a.max_len is not None and a.max_len < b.min_len) or (b.max_len is not None and b.max_len < a.min_len)
            ):
                return False
            if kind == "array" and not self.arrays_disjoint(a, b, depth):
                return False
            if kind == "object" and not self.objects_disjoint(a, b, depth):
                return False
        return True

    def arrays_disjoint(self, a: Facets, b: Facets, depth: int) -> bool:
        if (a.max_items is not None and a.max_items < b.min_items) or (b.max_items is not None and b.max_items < a.min_items):
            return True
        for i in range(min(a.min_items, b.min_items)):
            ca, cb = self.item_conj(a, i), self.item_conj(b, i)
            if ca and cb and self.disjoint_sets(self.alternatives(ca), self.alternatives(cb), depth + 1):
                return True
        return False

    def objects_disjoint(self, a: Facets, b: Facets, depth: int) -> bool:
        if (a.max_props is not None and a.max_props < b.min_props) or (b.max_props is not None and b.max_props < a.min_props):
            return True
        for x, y in ((a, b), (b, a)):
            for name in x.required:
                conj_y = [p for o in y.objects for p in o.schemas_for(name)]
                if any(p.schema is False for p in conj_y):
                    return True
                if y.names and self.conj_ok(name, y.names, 0) is False:
                    return True
        for x, y in ((a, b), (b, a)):
            for name in x.required:
                cx = [p for o in x.objects for p in o.schemas_for(name)]
                cy = [p for o in y.objects for p in o.schemas_for(name)]
                if cx and cy and self.disjoint_sets(self.alternatives(cx), self.alternatives(cy), depth + 1):
                    return True
        return False

"""Negation, keyword by keyword: the values a keyword rejects, as schemas, so `not` is the union
of each keyword's violations; where one can't be built, a `CompileError`.
"""

from __future__ import annotations

from .formats import is_checked
from .limits import MAX_NEGATED_ONE_OF, MAX_NEGATION_DEPTH
from .refs import DRAFT2020, DRAFT4, LEGACY, Place
from .values import _accepts_anything, _is_json_value
from .vocabulary import ALL, HAS_OTHER_KEY, KINDS, NONINTEGRAL, NOT_MAX_PROPERTIES, NOT_PATTERN, NOT_VALUES, ONLY_KINDS, VALIDATORS, _KEYWORD_KINDS


class NegationMixin:
    """The compiler's negation (a part of `_Compiler`)."""

    def negation(self, place: Place, depth: int) -> Place | None:
        """A place whose values are among those `place` rejects: all of them where
        `exact_negation(place)`, else a subset (what unsupported keywords would reject is left
        out). None where nothing useful can be said."""
        if place.key in self._negations:
            return self._negations[place.key]
        self._negations[place.key] = None  # a cycle through negation is unsupported
        result = self._negate(place, depth)
        self._negations[place.key] = result
        if result is not None and (place.key in self._inexact or place.key in self._narrowing):
            self._narrowed.add(id(result.schema))
        return result

    def exact_negation(self, place: Place) -> bool:
        return place.key in self._negations and self._negations[place.key] is not None and place.key not in self._inexact

    def _nested(self, outer: Place, inner: Place, depth: int) -> Place | None:
        """The negation of `inner`, as part of negating `outer` (inexactness carries over)."""
        negated = self.negation(inner, depth + 1)
        if negated is not None and not self.exact_negation(inner):
            self._inexact.add(outer.key)
        return negated

    def _negate(self, place: Place, depth: int) -> Place | None:
        if depth > MAX_NEGATION_DEPTH:
            return None
        schema = place.schema
        if schema is True:
            return self.fabricate(place, {ONLY_KINDS: set()})
        if schema is False:
            return self.fabricate(place, {})
        if not isinstance(schema, dict):
            return None
        if place.dialect in LEGACY and "$ref" in schema:
            target = self.resolve(place)
            return None if target is None else self._nested(place, target, depth)
        parts: list[dict] = []  # the negation is the union of these
        validators = VALIDATORS[place.dialect]
        typed = "type" in schema and "type" not in place.done
        own_kinds = self.kinds_of(schema["type"], place) if typed else set(KINDS)
        supported = 0
        for keyword, value in schema.items():
            if keyword in place.done or keyword not in validators and not (
                place.dialect == DRAFT4 and keyword in ("exclusiveMinimum", "exclusiveMaximum")
            ):
                continue
            if not _KEYWORD_KINDS.get(keyword, own_kinds) & own_kinds:
                # Only values `type` already rejects could violate it: `type`'s part has them.
                supported += 1
                continue
            negated = self._negate_keyword(place, keyword, value, depth)
            if negated is None:
                # Leaving out this keyword's violations keeps the result inside the negation
                # (sound), if smaller.
                self._inexact.add(place.key)
                continue
            supported += 1
            parts.extend(negated)
        if not supported and any(k in validators for k in schema if k not in place.done):
            return None
        if not parts:
            return self.fabricate(place, {ONLY_KINDS: set()})
        if len(parts) == 1:
            return self.fabricate(place, parts[0])
        return self.fabricate(place, {"anyOf": [self.fabricate(place, p) for p in parts]})

    def _negate_keyword(self, place: Place, keyword: str, value, depth: int) -> list[dict] | None:
        """The negation of one keyword, as a union of schemas (None: not supported). A keyword
        of one type constrains only values of that type, so only they can violate it."""
        if keyword == "type":
            kinds = self.kinds_of(value, place)
            out = set(KINDS) - kinds
            if "int" in kinds and "frac" not in kinds and place.dialect != DRAFT4:
                # 1.0 is an integer there: fractional texts only of values that are not, and
                # not all of those (exponent forms are left out).
                self._narrowing.add(place.key)
                return [{ONLY_KINDS: out, NONINTEGRAL: True}]
            return [{ONLY_KINDS: out}]
        if keyword in ("enum", "const"):
            values = [value] if keyword == "const" else value
            if not isinstance(values, list) or not all(_is_json_value(v) for v in values):
                return None
            return [{NOT_VALUES: list(values)}]
        if keyword == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return None
            return [{ONLY_KINDS: {"object"}, "properties": {name: False}} for name in dict.fromkeys(value)]
        if keyword == "pattern":
            if not isinstance(value, str):
                return None
            return [{ONLY_KINDS: {"string"}, NOT_PATTERN: (value, place.pointer)}]
        if keyword in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return None
            kind = {"L": "string", "I": "array", "P": "object"}[keyword[3]]
            word = keyword[3:]
            if keyword == "maxProperties":  # kept apart: a refusal of the count it gives names it
                return [{ONLY_KINDS: {kind}, NOT_MAX_PROPERTIES: (value, place.pointer)}]
            if keyword.startswith("min"):
                if value == 0:
                    return []  # every value satisfies it
                flipped = {ONLY_KINDS: {kind}, "max" + word: value - 1}
            else:
                flipped = {ONLY_KINDS: {kind}, "min" + word: value + 1}
            return [flipped]
        if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if isinstance(value, bool) and place.dialect == DRAFT4:
                return []  # read by minimum/maximum
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            exclusive = keyword.startswith("exclusive")
            if place.dialect == DRAFT4:
                flag = "exclusiveMinimum" if keyword == "minimum" else "exclusiveMaximum"
                exclusive = place.schema.get(flag) is True
            lower = "inimum" in keyword
            if lower:
                flipped = {"maximum": value} if exclusive else {"exclusiveMaximum": value}
            else:
                flipped = {"minimum": value} if exclusive else {"exclusiveMinimum": value}
            return [{ONLY_KINDS: {"int", "frac"}, **flipped}]
        if keyword == "properties":
            if not isinstance(value, dict):
                return None
            out = []
            for name in value:
                negated = self._nested(place, self.child(place, "properties", name), depth)
                if negated is None:
                    return None
                out.append({ONLY_KINDS: {"object"}, "required": [name], "properties": {name: {ALL: [negated]}}})
            return out
        if keyword == "anyOf":
            if not isinstance(value, list):
                return None
            negs = [self._nested(place, self.child(place, "anyOf", i), depth) for i in range(len(value))]
            if any(n is None for n in negs):
                return None
            return [{ALL: negs}]
        if keyword == "allOf":
            if not isinstance(value, list):
                return None
            negs = [self._nested(place, self.child(place, "allOf", i), depth) for i in range(len(value))]
            if any(n is None for n in negs):
                return None
            return [{ALL: [n]} for n in negs]
        if keyword == "$ref":
            target = self.resolve(place)
            negated = None if target is None else self._nested(place, target, depth)
            return None if negated is None else [{ALL: [negated]}]
        if keyword == "not":
            return [{ALL: [self.child(place, "not")]}]
        if keyword == "oneOf":
            if not isinstance(value, list) or not value or len(value) > MAX_NEGATED_ONE_OF:
                return None
            branches = [self.child(place, "oneOf", i) for i in range(len(value))]
            negs = [self._nested(place, b, depth) for b in branches]
            if any(n is None for n in negs):
                return None
            # None of the branches, or two of them.
            pairs = [{ALL: [branches[i], branches[j]]} for i in range(len(value)) for j in range(i + 1, len(value))]
            return [{ALL: negs}, *pairs]
        if keyword == "if":
            return self._negate_conditional(place, depth)
        if keyword in ("dependentRequired", "dependentSchemas", "dependencies"):
            return self._negate_dependencies(place, keyword, value, depth)
        if keyword in ("prefixItems", "items") and isinstance(value, list):
            if keyword == "items" and place.dialect == DRAFT2020:
                return None
            # Some item the array has is rejected by its position's schema.
            out = []
            for i in range(len(value)):
                negated = self._nested(place, self.child(place, keyword, i), depth)
                if negated is None:
                    return None
                out.append({ONLY_KINDS: {"array"}, "minItems": i + 1, "prefixItems": [True] * i + [{ALL: [negated]}]})
            return out
        if _accepts_anything(keyword, value):
            return []
        if keyword in ("items", "additionalItems") and value is False:
            # Any item past the positions a tuple keyword covers is a violation.
            if keyword == "additionalItems":
                positions = place.schema.get("items")
                if not isinstance(positions, list):
                    return []  # the validator ignores it without a tuple of items
            else:
                positions = place.schema.get("prefixItems", []) if place.dialect == DRAFT2020 else []
            if not isinstance(positions, list):
                return None
            return [{ONLY_KINDS: {"array"}, "minItems": len(positions) + 1}]
        if keyword == "additionalProperties" and value is False:
            names = place.schema.get("properties", {})
            patterns = place.schema.get("patternProperties", {})
            if not isinstance(names, dict) or not isinstance(patterns, dict):
                return None
            return [{ONLY_KINDS: {"object"}, HAS_OTHER_KEY: (frozenset(names), tuple(patterns))}]
        if keyword == "format":
            return None if isinstance(value, str) and is_checked(value, self.root_dialect) else []
        if keyword in ("uniqueItems",) and value is False:
            return []
        return None

    def _negate_conditional(self, place: Place, depth: int) -> list[dict] | None:
        """Values `if`/`then`/`else` reject: the condition holds and `then` fails, or it fails
        and `else` fails (a missing branch rejects nothing)."""
        condition = self.child(place, "if")
        out = []
        if "then" in place.schema:
            then_fails = self._nested(place, self.child(place, "then"), depth)
            if then_fails is None:
                return None
            out.append({ALL: [condition, then_fails]})
        if "else" in place.schema:
            condition_fails = self._nested(place, condition, depth)
            else_fails = self._nested(place, self.child(place, "else"), depth)
            if condition_fails is None or else_fails is None:
                return None
            out.append({ALL: [condition_fails, else_fails]})
        return out

    def _negate_dependencies(self, place: Place, keyword: str, value, depth: int) -> list[dict] | None:
        """Objects that have a property and break what depends on it: lack a property it
        requires, or fail its schema."""
        if not isinstance(value, dict):
            return None
        out = []
        for prop, dep in value.items():
            has = {ONLY_KINDS: {"object"}, "required": [prop]}
            if isinstance(dep, list) and keyword != "dependentSchemas":
                if not all(isinstance(d, str) for d in dep):
                    return None
                out.extend({**has, "properties": {d: False}} for d in dict.fromkeys(dep) if d != prop)
            elif isinstance(dep, (dict, bool)) and keyword != "dependentRequired":
                negated = self._nested(place, self.child(place, keyword, prop), depth)
                if negated is None:
                    return None
                out.append({**has, ALL: [negated]})
            else:
                return None
        return out

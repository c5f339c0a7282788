"""Facets: a conjunction's constraints merged into one record per type, and the merging of a
conjunction's keywords into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
import re

from .._errors import CompileError, LimitError
from .formats import is_checked
from .helpers import _bad, _check_regex, _count, _has_inline_flags
from .limits import MAX_REPEAT
from .numbers import Bound, tighter_lower, tighter_upper
from .refs import DRAFT2020, DRAFT4, LEGACY, Place
from .values import _is_json_value, json_key
from .vocabulary import GROUNDED, HAS_OTHER_KEY, NUMBERS, KINDS, NONINTEGRAL, NOT_MAX_PROPERTIES, NOT_PATTERN, NOT_VALUES, ONLY_KINDS, VALIDATORS, _ARRAY_KEYWORDS, _BRANCHING, _Internal, _OBJECT_KEYWORDS, _TYPE_KINDS


@dataclass
class _ObjectFacet:
    """One subschema's object keywords: the schema a key gets is its `properties` entry, else its
    matching `patternProperties`, else `additionalProperties`."""

    props: dict[str, Place]
    patterns: list[tuple[str, Place]]
    additional: Place | None
    pointer: str

    def schemas_for(self, key: str) -> list[Place]:
        declared = [self.props[key]] if key in self.props else []
        matched = [p for pat, p in self.patterns if re.search(pat, key)]
        if declared or matched:
            return declared + matched
        return [self.additional] if self.additional is not None else []


@dataclass
class _ArrayFacet:
    prefix: list[Place]
    rest: Place | None  # None: any item


@dataclass
class Facets:
    """The constraints of a conjunction with no branches left, by JSON type."""

    dialect: str
    kinds: set[str] = field(default_factory=lambda: set(KINDS))
    values: list | None = None
    not_values: list = field(default_factory=list)
    min_len: int = 0
    max_len: int | None = None
    patterns: list[tuple[str, str]] = field(default_factory=list)
    not_patterns: list[tuple[str, str]] = field(default_factory=list)
    formats: list[tuple[str, str]] = field(default_factory=list)
    lo: Bound | None = None
    hi: Bound | None = None
    multiples: list[int] = field(default_factory=list)
    arrays: list[_ArrayFacet] = field(default_factory=list)
    min_items: int = 0
    max_items: int | None = None
    unique: str | None = None
    objects: list[_ObjectFacet] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
    names: list[Place] = field(default_factory=list)
    min_props: int = 0
    min_props_at: tuple[str, str] | None = None  # the keyword and pointer min_props came from
    max_props: int | None = None
    other_keys: list[tuple[frozenset[str], tuple[str, ...]]] = field(default_factory=list)
    # Numbers only of a value that is no integer (`not: {type: integer}` where 1.0 is one).
    nonintegral: bool = False
    pointer: str = ""
    # Holds only some of the conjunction's values (a negation that leaves some out, bounds
    # narrowed to what can be enforced): a proof about all of them, such as that two oneOf
    # branches share none, must not rest on it.
    narrowed: bool = False
    # Strings and numbers held to the compile's source (a place said `"grounded": true`), or
    # strings held to the numbers it writes (`"grounded": "numbers"`: a decimal's string form).
    grounded: bool | str = False


class MergingMixin:
    """The compiler's facets (a part of `_Compiler`)."""

    def kinds_of(self, value, place: Place) -> set[str]:
        names = value if isinstance(value, list) else [value]
        kinds: set[str] = set()
        for name in names:
            if not isinstance(name, str) or name not in _TYPE_KINDS:
                raise CompileError(f"unknown type {name!r}", keyword="type", pointer=place.pointer)
            kinds |= _TYPE_KINDS[name]
        return kinds

    def merge(self, facets: list[Place]) -> Facets:
        out = Facets(dialect=facets[0].dialect if facets else DRAFT2020, pointer=facets[0].pointer if facets else "")
        for place in facets:
            schema = place.schema
            out.narrowed |= id(schema) in self._narrowed
            if place.dialect in LEGACY and "$ref" in schema:
                continue
            validators = VALIDATORS[place.dialect]
            arrays_done = objects_done = False
            for keyword, value in schema.items():
                if keyword in place.done or keyword in _BRANCHING:
                    continue
                if isinstance(keyword, _Internal):
                    self.merge_internal(out, keyword, value)
                elif keyword == GROUNDED and self.grounding is not None:
                    if value is True or value == NUMBERS:
                        out.grounded = out.grounded or value
                elif keyword in _ARRAY_KEYWORDS and keyword in validators:
                    if not arrays_done:
                        self.merge_items(out, place)
                        arrays_done = True
                elif keyword in _OBJECT_KEYWORDS and keyword in validators:
                    if not objects_done:
                        self.merge_object(out, place)
                        objects_done = True
                elif keyword in validators or (
                    place.dialect == DRAFT4 and keyword in ("exclusiveMinimum", "exclusiveMaximum")
                ):
                    self.merge_keyword(out, place, keyword, value)
                elif keyword in ("then", "else") and "if" in schema and "if" in validators:
                    continue
                else:
                    self.ignore(keyword, place.pointer)
        return out

    def merge_internal(self, out: Facets, keyword: _Internal, value) -> None:
        if keyword is ONLY_KINDS:
            out.kinds &= value
        elif keyword is NOT_VALUES:
            out.not_values.extend(value)
        elif keyword is NOT_PATTERN:
            out.not_patterns.append(value)
        elif keyword is HAS_OTHER_KEY:
            out.other_keys.append(value)
        elif keyword is NONINTEGRAL:
            out.nonintegral = True
        elif keyword is NOT_MAX_PROPERTIES:
            n, pointer = value
            self.merge_count(out, "minProperties", n + 1, "maxProperties", pointer)

    def merge_count(self, out: Facets, keyword: str, n: int, source: str, pointer: str) -> None:
        """A length or count bound (`keyword` n), written as `source` at `pointer` (the schema's
        own keyword, or `maxProperties` under a `not` for a minimum): errors name the source."""
        what = keyword if source == keyword else f"not: {{{source}: {n - 1}}}"
        if n > MAX_REPEAT and keyword.startswith("max"):
            # Narrowed to the longest the grammar counts: it accepts fewer values than
            # the schema (none that long will be written), never more.
            n = MAX_REPEAT
            out.narrowed = True
        if n > MAX_REPEAT and keyword == "minProperties":
            # No key set is that large (see `member_list`): left to the validator, lenient.
            self.refuse(f"{what} asks for {n} members, above the {MAX_REPEAT} a grammar counts", source, pointer)
            n = MAX_REPEAT
        if n > MAX_REPEAT:
            raise LimitError(f"{keyword} {n} is above the supported {MAX_REPEAT}", keyword=keyword, pointer=pointer)
        attr = {"minLength": "min_len", "maxLength": "max_len", "minItems": "min_items",
                "maxItems": "max_items", "minProperties": "min_props", "maxProperties": "max_props"}[keyword]
        current = getattr(out, attr)
        if keyword.startswith("min"):
            if n > current:
                setattr(out, attr, n)
                if keyword == "minProperties":
                    out.min_props_at = (source, pointer)
        else:
            setattr(out, attr, n if current is None else min(current, n))

    def merge_keyword(self, out: Facets, place: Place, keyword: str, value) -> None:
        pointer = place.pointer
        schema = place.schema
        if keyword == "type":
            out.kinds &= self.kinds_of(value, place)
        elif keyword in ("enum", "const"):
            values = [value] if keyword == "const" else value
            if not isinstance(values, list) or not all(_is_json_value(v, keyword, pointer) for v in values):
                raise CompileError(f"{keyword} must hold JSON values", keyword=keyword, pointer=pointer)
            if out.values is None:
                out.values = list(values)
            else:
                listed = {json_key(w) for w in values}
                out.values = [v for v in out.values if json_key(v) in listed]
        elif keyword in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            self.merge_count(out, keyword, _count(value, keyword, pointer), keyword, pointer)
        elif keyword == "pattern":
            if not isinstance(value, str):
                raise CompileError("pattern must be a string", keyword=keyword, pointer=pointer)
            _check_regex(value, keyword, pointer)
            out.patterns.append((value, pointer))
        elif keyword == "format":
            if isinstance(value, str) and is_checked(value, self.root_dialect):
                out.formats.append((value, pointer))
            else:
                self.ignore(keyword, pointer)
        elif keyword in ("minimum", "maximum"):
            if place.dialect == DRAFT4:
                flag = schema.get("exclusive" + keyword[0].upper() + keyword[1:], False)
                exclusive = bool(flag) if isinstance(flag, bool) else _bad(f"exclusive{keyword} must be a boolean", keyword, pointer)
            else:
                exclusive = False
            bound = Bound.of(value, exclusive, pointer, keyword)
            if keyword == "minimum":
                out.lo = tighter_lower(out.lo, bound)
            else:
                out.hi = tighter_upper(out.hi, bound)
        elif keyword in ("exclusiveMinimum", "exclusiveMaximum"):
            if place.dialect == DRAFT4:
                if not isinstance(value, bool):
                    raise CompileError(f"{keyword} must be a boolean in draft 4", keyword=keyword, pointer=pointer)
                return  # read with minimum/maximum
            bound = Bound.of(value, True, pointer, keyword)
            if keyword == "exclusiveMinimum":
                out.lo = tighter_lower(out.lo, bound)
            else:
                out.hi = tighter_upper(out.hi, bound)
        elif keyword == "multipleOf":
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                if isinstance(value, float) and value > 0 and value.is_integer() and value < 2**53:
                    value = int(value)
                    # A float divisor divides in floats: keep integers exactly representable.
                    out.narrowed = True
                    out.lo = tighter_lower(out.lo, Bound.of(-(2**53), False, pointer, keyword))
                    out.hi = tighter_upper(out.hi, Bound.of(2**53, False, pointer, keyword))
                else:
                    self.refuse("only positive integer multipleOf can be enforced", keyword, pointer)
                    return
            out.multiples.append(value)
        elif keyword == "uniqueItems":
            if not isinstance(value, bool):
                raise CompileError("uniqueItems must be a boolean", keyword=keyword, pointer=pointer)
            if value:
                out.unique = pointer
        elif keyword == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise CompileError("required must be an array of strings", keyword=keyword, pointer=pointer)
            for name in value:
                if name not in out.required:
                    out.required.append(name)
        elif keyword == "propertyNames":
            out.names.append(self.child(place, "propertyNames"))
        elif keyword in ("unevaluatedProperties", "unevaluatedItems"):
            if value is True or value == {}:
                return
            self.refuse(f"{keyword} is not supported", keyword, pointer)
        elif keyword == "contains":
            self.refuse("contains is not supported", keyword, pointer)
        elif keyword in ("$recursiveRef", "$dynamicRef"):
            self.refuse(f"{keyword} is not supported", keyword, pointer)
        else:
            self.refuse(f"{keyword} is not supported", keyword, pointer)

    def merge_items(self, out: Facets, place: Place) -> None:
        schema = place.schema
        pointer = place.pointer
        dialect = place.dialect
        prefix: list[Place] = []
        rest: Place | None = None
        items = schema.get("items")
        if dialect == DRAFT2020:
            prefix_value = schema.get("prefixItems")
            if prefix_value is not None:
                if not isinstance(prefix_value, list):
                    raise CompileError("prefixItems must be an array", keyword="prefixItems", pointer=pointer)
                prefix = [self.child(place, "prefixItems", i) for i in range(len(prefix_value))]
            if isinstance(items, list):
                # The validator descends into the array as if it were a schema and fails on any
                # item past prefixItems: only arrays no longer than prefixItems validate.
                rest = self.fabricate(place, {ONLY_KINDS: set()})
            elif items is not None:
                rest = self.child(place, "items")
            if "additionalItems" in schema:
                self.ignore("additionalItems", pointer)
        else:
            if isinstance(items, list):
                prefix = [self.child(place, "items", i) for i in range(len(items))]
                if "additionalItems" in schema:
                    extra = schema["additionalItems"]
                    if not isinstance(extra, (dict, bool)):
                        raise CompileError("additionalItems must be a schema", keyword="additionalItems", pointer=pointer)
                    rest = self.child(place, "additionalItems")
            elif items is not None:
                if not isinstance(items, (dict, bool)):
                    raise CompileError("items must be a schema or an array", keyword="items", pointer=pointer)
                rest = self.child(place, "items")
                if "additionalItems" in schema:
                    self.ignore("additionalItems", pointer)
            elif "additionalItems" in schema:
                self.ignore("additionalItems", pointer)
        out.arrays.append(_ArrayFacet(prefix, rest))

    def merge_object(self, out: Facets, place: Place) -> None:
        schema = place.schema
        pointer = place.pointer
        props_value = schema.get("properties", {})
        patterns_value = schema.get("patternProperties", {})
        if not isinstance(props_value, dict):
            raise CompileError("properties must be an object", keyword="properties", pointer=pointer)
        if not isinstance(patterns_value, dict):
            raise CompileError("patternProperties must be an object", keyword="patternProperties", pointer=pointer)
        props = {name: self.child(place, "properties", name) for name in props_value}
        for pattern in patterns_value:
            _check_regex(pattern, "patternProperties", pointer)
        if len(patterns_value) > 1 and any(_has_inline_flags(p) for p in patterns_value):
            self.refuse("patternProperties with inline flags can't be joined as the validator does", "patternProperties", pointer)
        patterns = [(pat, self.child(place, "patternProperties", pat)) for pat in patterns_value]
        additional = None
        if "additionalProperties" in schema:
            value = schema["additionalProperties"]
            if not isinstance(value, (dict, bool)):
                raise CompileError("additionalProperties must be a schema", keyword="additionalProperties", pointer=pointer)
            additional = self.child(place, "additionalProperties")
        out.objects.append(_ObjectFacet(props, patterns, additional, pointer))

"""The keywords each dialect's validator acts on, the kinds of value each constrains, and the
internal keywords only the compiler writes into the schemas it builds.
"""

from __future__ import annotations

from .._ir import ANY_CHAR, lit, opt, repeat, seq


PYTHON_COMMA = seq(lit(","), opt(lit(" ")))  # between keyword arguments, or calls, as Python is written


_ANY_DECODED = repeat(ANY_CHAR, 0, None)


KINDS = ("null", "boolean", "int", "frac", "string", "array", "object")


_TYPE_KINDS = {
    "null": {"null"},
    "boolean": {"boolean"},
    "integer": {"int"},
    "number": {"int", "frac"},
    "string": {"string"},
    "array": {"array"},
    "object": {"object"},
}


# The keywords each dialect's validator acts on; everything else is an annotation to it.
_COMMON = {
    "$ref", "additionalProperties", "allOf", "anyOf", "enum", "format", "maxItems", "maxLength",
    "maxProperties", "maximum", "minItems", "minLength", "minProperties", "minimum", "multipleOf",
    "not", "oneOf", "pattern", "patternProperties", "properties", "required", "type", "uniqueItems",
}


_D6 = _COMMON | {"additionalItems", "const", "contains", "dependencies", "exclusiveMaximum", "exclusiveMinimum", "items", "propertyNames"}


VALIDATORS: dict[str, frozenset[str]] = {
    "draft4": frozenset(_COMMON | {"additionalItems", "dependencies", "items"}),
    "draft6": frozenset(_D6),
    "draft7": frozenset(_D6 | {"if"}),
    "draft2019-09": frozenset(
        (_D6 - {"dependencies"})
        | {"if", "$recursiveRef", "dependentRequired", "dependentSchemas", "unevaluatedItems", "unevaluatedProperties"}
    ),
    "draft2020-12": frozenset(
        (_D6 - {"dependencies", "additionalItems"})
        | {"if", "$dynamicRef", "dependentRequired", "dependentSchemas", "prefixItems", "unevaluatedItems", "unevaluatedProperties"}
    ),
}


# Keywords that branch a conjunction (handled by `_alternatives`, in schema order).
_BRANCHING = ("anyOf", "oneOf", "if", "dependencies", "dependentRequired", "dependentSchemas")


# The kinds of value each type-specific keyword constrains (it passes every other value).
_KEYWORD_KINDS = {
    **dict.fromkeys(("minLength", "maxLength", "pattern", "format"), {"string"}),
    **dict.fromkeys(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"), {"int", "frac"}),
    **dict.fromkeys(
        ("items", "prefixItems", "additionalItems", "contains", "minItems", "maxItems", "uniqueItems", "unevaluatedItems"),
        {"array"},
    ),
    **dict.fromkeys(
        ("properties", "patternProperties", "additionalProperties", "required", "propertyNames", "minProperties",
         "maxProperties", "dependencies", "dependentRequired", "dependentSchemas", "unevaluatedProperties"),
        {"object"},
    ),
}


_ARRAY_KEYWORDS = ("items", "prefixItems", "additionalItems")


_OBJECT_KEYWORDS = ("properties", "patternProperties", "additionalProperties")


# A subschema's string and number values held to the source a compile is given (`grounding`):
# `true` its spans and numbers, `"numbers"` its strings to the numbers the source writes (a
# decimal's string form); without a source, an annotation like any other.
GROUNDED = "grounded"
NUMBERS = "numbers"


class _Cyclic(Exception):
    """A conjunction's alternatives were needed while being computed (a recursive oneOf)."""


class _Internal(str):
    """A key only the compiler writes into schemas it builds (never equal to a JSON key)."""

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)


ALL = _Internal("all")  # value: list of Places, a conjunction


ONLY_KINDS = _Internal("kinds")  # value: set of kinds


NOT_VALUES = _Internal("not-values")  # value: list of JSON values


NOT_PATTERN = _Internal("not-pattern")  # value: (pattern, pointer)


NONINTEGRAL = _Internal("nonintegral")  # value: True; numbers only of a value that is no integer


# value: (n, pointer): more than n members, from `not: {maxProperties: n}` at pointer.
NOT_MAX_PROPERTIES = _Internal("not-maxProperties")


# value: (names, patterns): the object has a key that is none of the names and matches none of
# the patterns (the negation of additionalProperties: false).
HAS_OTHER_KEY = _Internal("has-other-key")

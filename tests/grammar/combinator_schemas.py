"""Random combinator schemas and the JSON texts to try on them, for soundness checks.

Schemas: `not`, `oneOf`, `anyOf`, `allOf` and `if`/`then`/`else`, nested, inside `properties`
and `items` too, over typed leaves, typeless leaves (type-specific keywords with no `type`, which
constrain only their own type), no-op keywords, formats and `const`/`enum` of every JSON type.
Texts: a fixed pool of tricky ones (other spellings of equal numbers, escapes, key orders, empty
containers) and ones made from the schema's own parts (its constants, bounds, keys).
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

KEYS = ("a", "b")
FORMATS = ("date", "email", "ipv4", "uuid")

# Values a schema may name in const/enum, or an instance may be.
ATOMS = (
    None, True, False, 0, 1, -1, 2, 3, 1.5, -0.5, 10, "", "a", "b", "ab", "abc",
    [], [0], [1], ["a"], [0, 1], [[]], [{}], [None], [1.0],
    {}, {"a": 1}, {"a": "x"}, {"b": 0}, {"a": 1, "b": 2}, {"a": []}, {"a": None}, {"a": {}},
)
FORMAT_SAMPLES = (
    "2020-01-01", "2020-02-30", "x@y.z", "@", "127.0.0.1", "1.2.3", "256.1.1.1",
    "12345678-1234-1234-1234-123456789abc", "12345678-1234-1234-1234-12345678",
)
# Texts whose spelling matters: equal values written otherwise, escapes, other key orders.
TRICKY_TEXTS = (
    "1.0", "1e0", "10E-1", "-0", "0.0", "-0.0", "3.0", "2e0", "1.5e0", "0.5", "100", "-1.0", "1e2", "1.5e1",
    "2.50", "1e400", "-1e400", "1e-400",
    '"\\u0061"', '"\\u0061b"', '"\\/"', '"a\\u0000"', '"é"', '"\\ud83d\\ude00"',
    '{"b":2,"a":1}', '{"b":0,"a":1}', '{"a":1.0}', '{"a":"a"}', '{"c":1}', '{"a":1,"c":null}',
    '{"a":1,"a":2}', '{"c":1,"c":"x"}', '{"a":[],"b":{},"c":0}',
    "[1,0]", "[0,0]", "[1.0,1]", '["a","a"]', "[[],[]]", "[{},{}]", "[null,0]", '[0,"a",{}]',
)


def pool_texts() -> list[str]:
    return list(dict.fromkeys([compact(v) for v in ATOMS + FORMAT_SAMPLES] + list(TRICKY_TEXTS)))


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- schemas -------------------------------------------------------------------------------------

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
_small = st.integers(0, 3)
_bound = st.sampled_from([-1, 0, 1, 2, 3, 1.5])
_keys = st.lists(st.sampled_from(KEYS), max_size=2, unique=True)
_NUMBER_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _keyword(inner) -> st.SearchStrategy[dict]:
    """One keyword with its value; `inner` draws subschemas."""
    return st.one_of(
        st.builds(lambda n: {"minLength": n}, _small),
        st.builds(lambda n: {"maxLength": n}, _small),
        st.builds(lambda p: {"pattern": p}, st.sampled_from(["^a", "b$", "^[ab]*$", "a"])),
        st.builds(lambda f: {"format": f}, st.sampled_from(FORMATS)),
        st.builds(lambda k, b: {k: b}, st.sampled_from(_NUMBER_BOUNDS), _bound),
        st.builds(lambda m: {"multipleOf": m}, st.sampled_from([1, 2, 3])),
        st.builds(lambda n: {"minItems": n}, _small),
        st.builds(lambda n: {"maxItems": n}, _small),
        st.builds(lambda n: {"minProperties": n}, _small),
        st.builds(lambda n: {"maxProperties": n}, _small),
        st.builds(lambda r: {"required": r}, st.lists(st.sampled_from(KEYS), min_size=1, max_size=2, unique=True)),
        st.builds(lambda s: {"items": s}, inner),
        st.builds(lambda s: {"prefixItems": [s]}, inner),
        st.builds(lambda k, s: {"properties": {k: s}}, st.sampled_from(KEYS), inner),
        st.builds(lambda k, s: {"properties": {k: s}, "additionalProperties": False}, st.sampled_from(KEYS), inner),
        st.builds(lambda s: {"prefixItems": [s], "items": False}, inner),
        st.builds(lambda p, s: {"patternProperties": {p: s}}, st.sampled_from(["^a", "b"]), inner),
        st.builds(lambda s: {"additionalProperties": s}, inner),
        st.builds(lambda s: {"propertyNames": s}, inner),
        st.builds(lambda k, r: {"dependentRequired": {k: r}}, st.sampled_from(KEYS), _keys),
        st.builds(lambda k, s: {"dependentSchemas": {k: s}}, st.sampled_from(KEYS), inner),
        st.builds(lambda u: {"uniqueItems": u}, st.booleans()),
        st.builds(lambda v: {"const": v}, st.sampled_from(ATOMS)),
        st.builds(lambda vs: {"enum": vs}, st.lists(st.sampled_from(ATOMS), min_size=1, max_size=3)),
    )


def _type_value():
    return st.one_of(st.sampled_from(_TYPES), st.lists(st.sampled_from(_TYPES), min_size=1, max_size=2, unique=True))


def _leaf(inner) -> st.SearchStrategy:
    """A schema with no combinator: typed or typeless, of one or two keywords."""
    keywords = st.lists(_keyword(inner), min_size=1, max_size=2).map(_merged)
    return st.one_of(
        st.sampled_from([True, False, {}]),
        st.builds(lambda t: {"type": t}, _type_value()),
        keywords,
        st.builds(lambda t, k: {"type": t, **k}, _type_value(), keywords),
    )


def _merged(parts: list[dict]) -> dict:
    out: dict = {}
    for part in parts:
        for key, value in part.items():
            out.setdefault(key, value)
    return out


def _combinator(inner) -> st.SearchStrategy[dict]:
    some = st.lists(inner, min_size=1, max_size=3)
    conditional = st.builds(
        lambda c, t, e, which: {"if": c, **({"then": t} if which & 1 else {}), **({"else": e} if which & 2 else {})},
        inner, inner, inner, st.integers(0, 3),
    )
    combined = st.one_of(
        st.builds(lambda s: {"not": s}, inner),
        st.builds(lambda s: {"oneOf": s}, some),
        st.builds(lambda s: {"anyOf": s}, some),
        st.builds(lambda s: {"allOf": s}, some),
        conditional,
    )
    # A combinator beside keywords of its own schema, or inside a property or items.
    return st.one_of(
        combined,
        st.builds(lambda k, c: _merged([c, k]), _keyword(inner), combined),
        st.builds(lambda c: {"items": c}, combined),
        st.builds(lambda k, c: {"properties": {k: c}}, st.sampled_from(KEYS), combined),
    )


def schemas(max_leaves: int = 6) -> st.SearchStrategy:
    """Nested combinator schemas over typed and typeless leaves."""
    base = _leaf(st.sampled_from([True, False, {}, {"type": "integer"}, {"const": 1}, {"minLength": 1}]))
    tree = st.recursive(base, lambda inner: st.one_of(_combinator(inner), _leaf(inner)), max_leaves=max_leaves)
    return _combinator(tree)


# --- texts made from a schema's parts ------------------------------------------------------------


def parts(schema) -> list:
    """Values a schema's own keywords suggest: its constants, values at and beside its bounds,
    strings and containers of its lengths, objects with its keys."""
    out: list = []

    def visit(node):
        if isinstance(node, list):
            for item in node:
                visit(item)
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            if key == "const":
                out.append(value)
            elif key == "enum" and isinstance(value, list):
                out.extend(value)
            elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
                out.extend([value, value - 1, value + 1, value + 0.5, value * 2, float(value)])
            elif key in ("minLength", "maxLength"):
                out.extend(["a" * value, "b" * (value + 1), "ab"[: max(value - 1, 0)]])
            elif key in ("minItems", "maxItems"):
                out.extend([[0] * value, ["a"] * (value + 1)])
            elif key in ("minProperties", "maxProperties"):
                out.extend([{k: 0 for k in "abc"[:value]}, {k: 0 for k in "abc"[: value + 1]}])
            elif key == "required":
                out.append({k: 1 for k in value})
            elif key == "properties":
                for name, sub in value.items():
                    out.extend({name: v} for v in parts(sub)[:4])
            if isinstance(value, (dict, list)) and key not in ("const", "enum"):
                visit(value)

    visit(schema)
    return out


def drawn_values(schema) -> st.SearchStrategy:
    """Values built from the schema's parts and the pool: alone, in lists and in objects."""
    atoms = st.sampled_from(list(ATOMS) + parts(schema))
    return st.one_of(
        atoms,
        st.lists(atoms, max_size=3),
        st.dictionaries(st.sampled_from(KEYS + ("c",)), atoms, max_size=3),
    )

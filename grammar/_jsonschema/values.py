"""JSON values as the validator compares them: equality (1 and 1.0 alike, booleans apart),
kinds, depth, and the keys that memoize leaves.
"""

from __future__ import annotations

import math

from .._errors import LimitError
from .limits import MAX_VALUE_DEPTH
from .refs import Place


def json_key(value):
    """A hashable key, equal for two values exactly where `json_equal` holds: `enum` and `const`
    membership is then a set lookup, not a comparison with every listed value. Built without
    recursion (post-order over an explicit stack), so a deep value costs no Python stack."""
    if not isinstance(value, (list, dict)):
        return _scalar_key(value)
    done: list = []
    todo: list = [(value, False)]
    while todo:
        v, children_done = todo.pop()
        if isinstance(v, (list, dict)):
            if not children_done:
                todo.append((v, True))
                todo.extend((x, False) for x in reversed(v if isinstance(v, list) else list(v.values())))
                continue
            n = len(v)
            items = done[len(done) - n:]
            del done[len(done) - n:]
            done.append(("array", tuple(items)) if isinstance(v, list) else ("object", frozenset(zip(v, items))))
        else:
            done.append(_scalar_key(v))
    return done[0]


def _scalar_key(value):
    if isinstance(value, bool):
        return ("boolean", value)  # apart from 0 and 1
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 1.0 equals 1
    return value


def json_equal(a, b) -> bool:
    """Equality as the validator's `enum`/`const` see it (booleans apart from numbers)."""
    return json_key(a) == json_key(b)


def _kind_of(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "frac"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a JSON value: {value!r}")


def _is_json_value(value, keyword: str | None = None, pointer: str | None = None) -> bool:
    """Whether `value` is a JSON value; a LimitError where it nests deeper than
    `MAX_VALUE_DEPTH` (what lowers a value recurses once per level)."""
    depth = _json_depth(value)
    if depth is not None and depth > MAX_VALUE_DEPTH:
        raise LimitError(f"value nests deeper than {MAX_VALUE_DEPTH} levels", keyword=keyword, pointer=pointer)
    return depth is not None


def _json_depth(value) -> int | None:
    """How deeply `value` nests (a scalar: 0; counted up to just past `MAX_VALUE_DEPTH`), or
    None where it is not a JSON value. Iterative: the value may nest deeper than Python recurses."""
    deepest = 0
    todo = [(value, 0)]
    while todo:
        v, depth = todo.pop()
        if v is None or isinstance(v, (bool, int, str)):
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                return None
            continue
        if isinstance(v, list):
            children = v
        elif isinstance(v, dict) and all(isinstance(k, str) for k in v):
            children = v.values()
        else:
            return None
        deepest = max(deepest, depth + 1)
        if deepest > MAX_VALUE_DEPTH:
            return deepest
        todo.extend((c, depth + 1) for c in children)
    return deepest


def _leaf_key(place: Place) -> tuple | None:
    """What the language of a schema with no subschema and no reference depends on: its
    keywords and their values (typed, so 1, 1.0 and true stay apart), its dialect and the
    keywords already applied. None for any other schema."""
    schema = place.schema
    if type(schema) is not dict:
        return None
    items = []
    for keyword, value in schema.items():
        if type(keyword) is not str or keyword.startswith("$") or keyword == "id":
            return None  # references, resources, anchors, internal keys
        kind = type(value)
        if kind is list:
            if not all(type(v) in _SCALARS for v in value):
                return None
            value = tuple((type(v), v) for v in value)
        elif kind not in _SCALARS:
            return None
        items.append((keyword, kind, value))
    return place.dialect, place.done, frozenset(items)


_SCALARS = (str, int, float, bool, type(None))


def _number_spellings(value) -> list:
    """The value, and for numbers its other exact spelling (1 and 1.0): both equal it as `enum`
    compares, and each is checked on its own."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return [value]
    out = [value]
    if isinstance(value, float) and value.is_integer():
        out.append(int(value))
    elif isinstance(value, int) and abs(value) < 2**53:
        out.append(float(value))
    return out


def _accepts_anything(keyword: str, value) -> bool:
    """Whether a keyword's subschemas accept everything, so that it constrains nothing."""
    if keyword in ("items", "additionalItems", "additionalProperties", "propertyNames", "unevaluatedItems",
                   "unevaluatedProperties"):
        return value is True or value == {}
    if keyword in ("patternProperties", "dependentSchemas"):
        return isinstance(value, dict) and all(v is True or v == {} for v in value.values())
    return False

"""An in-product JSON Schema checker for decoded values.

The grammar enforces most of a schema while decoding; what a lenient compile drops is checked
here afterwards. It follows the `jsonschema` package's semantics (drafts 4 to 2020-12 as the
`$schema` names them; Python `re.search` for `pattern`; floats compared as Python does) for the
keywords in `CHECKED`. A keyword outside that set cannot be checked: callers refuse a schema
that needs one checked.
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import re
import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from ._schema import escape, resolve_local

CHECKED = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "items", "prefixItems",
    "additionalItems", "maxItems", "minItems", "uniqueItems", "contains", "minContains",
    "maxContains", "properties", "patternProperties", "additionalProperties", "required",
    "minProperties", "maxProperties", "propertyNames", "dependentRequired", "dependentSchemas",
    "dependencies", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref",
})


@dataclass(frozen=True)
class Problem:
    """One failed keyword: `path` in the instance, `pointer` of the keyword in the schema."""

    path: str
    keyword: str
    pointer: str
    message: str
    causes: tuple["Problem", ...] = ()


def check(schema: Any, instance: Any) -> list[Problem]:
    """Every keyword of `schema` that `instance` fails (empty when it is valid)."""
    legacy = isinstance(schema, dict) and _is_legacy(schema.get("$schema"))
    return _Checker(schema, legacy).run(schema, instance, "", "")


def can_check(keyword: str, value: Any = None) -> bool:
    """Whether this checker evaluates `keyword` (with `value`, for `format`)."""
    if keyword == "format":
        return not isinstance(value, str) or value in FORMATS or value not in KNOWN_FORMATS
    return keyword in CHECKED


def _is_legacy(uri: Any) -> bool:
    return isinstance(uri, str) and any(f"draft-0{n}" in uri for n in (3, 4, 6, 7))


def field_path(path: str, key: str | int) -> str:
    """A readable path into a value: ``address.zip``, ``tags[2]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class _Checker:
    def __init__(self, root: Any, legacy: bool):
        self.root = root
        self.legacy = legacy

    def run(self, schema: Any, value: Any, path: str, ptr: str) -> list[Problem]:
        if schema is True or schema == {}:
            return []
        if schema is False:
            return [Problem(path, "false", ptr, "no value is allowed here")]
        if not isinstance(schema, dict):
            return []
        out: list[Problem] = []
        if "$ref" in schema:
            try:
                target = resolve_local(self.root, urllib.parse.unquote(schema["$ref"]))
            except (KeyError, IndexError, ValueError):
                out.append(Problem(path, "$ref", ptr + "/$ref", f"unresolvable reference {schema['$ref']!r}"))
            else:
                out += self.run(target, value, path, urllib.parse.unquote(schema["$ref"])[1:])
            if self.legacy:
                return out
        for key, sub in schema.items():
            fn = _KEYWORDS.get(key)
            if fn is not None:
                out += fn(self, schema, sub, value, path, f"{ptr}/{escape(key)}")
        return out


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value: Any, name: str) -> bool:
    actual = _json_type(value)
    if name == "number":
        return actual in ("integer", "number")
    if name == "integer":
        return actual == "integer" or (actual == "number" and value.is_integer())
    return actual == name


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


Keyword = Callable[[_Checker, dict, Any, Any, str, str], list[Problem]]


def _type(c: _Checker, s: dict, want: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    names = want if isinstance(want, list) else [want]
    if any(_is_type(v, n) for n in names):
        return []
    return [Problem(path, "type", ptr, f"expected {' or '.join(map(str, names))}, got {_json_type(v)}")]


def _enum(c: _Checker, s: dict, options: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if isinstance(options, list) and any(_equal(v, o) for o in options):
        return []
    return [Problem(path, "enum", ptr, f"{v!r} is not one of {options!r}")]


def _const(c: _Checker, s: dict, want: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    return [] if _equal(v, want) else [Problem(path, "const", ptr, f"{v!r} is not {want!r}")]


def _multiple_of(c: _Checker, s: dict, d: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not _number(v):
        return []
    if isinstance(d, float) or isinstance(v, float):
        try:
            quotient = v / d
            failed = int(quotient) != quotient
        except OverflowError:
            failed = True
        except (ZeroDivisionError, ValueError):
            failed = not math.isinf(v)
    else:
        failed = v % d != 0
    return [Problem(path, "multipleOf", ptr, f"{v!r} is not a multiple of {d!r}")] if failed else []


def _bound(kind: str) -> Keyword:
    def fn(c: _Checker, s: dict, limit: Any, v: Any, path: str, ptr: str) -> list[Problem]:
        if not _number(v):
            return []
        if isinstance(limit, bool):  # draft 4: a flag that makes minimum/maximum exclusive
            return []
        if kind in ("minimum", "maximum") and s.get("exclusive" + kind[0].upper() + kind[1:]) is True:
            bad = v <= limit if kind == "minimum" else v >= limit
            sign = ">" if kind == "minimum" else "<"
        elif kind == "minimum":
            bad, sign = v < limit, ">="
        elif kind == "maximum":
            bad, sign = v > limit, "<="
        elif kind == "exclusiveMinimum":
            bad, sign = v <= limit, ">"
        else:
            bad, sign = v >= limit, "<"
        return [Problem(path, kind, ptr, f"{v!r} is not {sign} {limit!r}")] if bad else []

    return fn


def _length(kind: str) -> Keyword:
    def fn(c: _Checker, s: dict, n: Any, v: Any, path: str, ptr: str) -> list[Problem]:
        if isinstance(v, str) and kind.endswith("Length"):
            size, what = len(v), "characters"
        elif isinstance(v, list) and kind.endswith("Items"):
            size, what = len(v), "items"
        elif isinstance(v, dict) and kind.endswith("Properties"):
            size, what = len(v), "properties"
        else:
            return []
        bad = size < n if kind.startswith("min") else size > n
        word = "at least" if kind.startswith("min") else "at most"
        return [Problem(path, kind, ptr, f"has {size} {what}, needs {word} {n}")] if bad else []

    return fn


def _pattern(c: _Checker, s: dict, pat: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, str):
        return []
    try:
        found = re.search(pat, v)
    except re.error as e:
        return [Problem(path, "pattern", ptr, f"the pattern {pat!r} is not a valid regex: {e}")]
    return [] if found else [Problem(path, "pattern", ptr, f"{v!r} does not match {pat!r}")]


def _format(c: _Checker, s: dict, fmt: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    checker = FORMATS.get(fmt)
    if checker is None or not isinstance(v, str):
        return []
    try:
        good = checker(v)
    except Exception:  # each format check signals a bad value by raising
        good = False
    return [] if good else [Problem(path, "format", ptr, f"{v!r} is not a valid {fmt}")]


def _items(c: _Checker, s: dict, items: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, list):
        return []
    if isinstance(items, list):
        out = _each_position(c, items, v, path, ptr)
        extra = s.get("additionalItems", True)
        for i in range(len(items), len(v)):
            out += c.run(extra, v[i], field_path(path, i), ptr.rsplit("/", 1)[0] + "/additionalItems")
        return out
    start = len(s.get("prefixItems", [])) if isinstance(s.get("prefixItems"), list) else 0
    return [p for i in range(start, len(v)) for p in c.run(items, v[i], field_path(path, i), ptr)]


def _prefix_items(c: _Checker, s: dict, items: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, list) or not isinstance(items, list):
        return []
    return _each_position(c, items, v, path, ptr)


def _each_position(c: _Checker, schemas: list[Any], v: list[Any], path: str, ptr: str) -> list[Problem]:
    """Item i against schema i, for as many positions as both have."""
    pairs = zip(schemas, v, strict=False)
    return [p for i, (sub, x) in enumerate(pairs) for p in c.run(sub, x, field_path(path, i), f"{ptr}/{i}")]


def _unique(c: _Checker, s: dict, flag: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if flag is not True or not isinstance(v, list):
        return []
    for i in range(len(v)):
        for j in range(i):
            if _equal(v[i], v[j]):
                return [Problem(path, "uniqueItems", ptr, f"items {j} and {i} are equal ({v[i]!r})")]
    return []


def _contains(c: _Checker, s: dict, sub: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, list):
        return []
    hits = sum(1 for i, x in enumerate(v) if not c.run(sub, x, field_path(path, i), ptr))
    low = s.get("minContains", 1) if not c.legacy else 1
    high = s.get("maxContains") if not c.legacy else None
    if hits < low:
        return [Problem(path, "contains", ptr, f"{hits} items match 'contains', needs at least {low}")]
    if high is not None and hits > high:
        return [Problem(path, "maxContains", ptr, f"{hits} items match 'contains', allows at most {high}")]
    return []


def _properties(c: _Checker, s: dict, props: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, dict) or not isinstance(props, dict):
        return []
    return [
        p
        for key, sub in props.items()
        if key in v
        for p in c.run(sub, v[key], field_path(path, key), f"{ptr}/{escape(key)}")
    ]


def _pattern_properties(c: _Checker, s: dict, props: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, dict):
        return []
    return [
        p
        for pat, sub in props.items()
        for key in v
        if re.search(pat, key)
        for p in c.run(sub, v[key], field_path(path, key), f"{ptr}/{escape(pat)}")
    ]


def _additional_properties(c: _Checker, s: dict, sub: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, dict):
        return []
    declared = s.get("properties", {}) or {}
    patterns = list((s.get("patternProperties") or {}).keys())
    extra = [k for k in v if k not in declared and not any(re.search(p, k) for p in patterns)]
    if sub is False and extra:
        keys = ", ".join(map(repr, extra))
        return [Problem(path, "additionalProperties", ptr, f"unexpected key{'s' if len(extra) > 1 else ''} {keys}")]
    return [p for k in extra for p in c.run(sub, v[k], field_path(path, k), ptr)]


def _required(c: _Checker, s: dict, names: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, dict) or not isinstance(names, list):
        return []
    missing = [n for n in names if n not in v]
    return [Problem(field_path(path, n), "required", ptr, "missing required key") for n in missing]


def _property_names(c: _Checker, s: dict, sub: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, dict):
        return []
    return [p for k in v for p in c.run(sub, k, field_path(path, k), ptr)]


def _dependent_required(c: _Checker, s: dict, deps: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, dict):
        return []
    return [
        Problem(field_path(path, need), "dependentRequired", ptr, f"required when {key!r} is present")
        for key, needs in deps.items()
        if key in v
        for need in needs
        if need not in v
    ]


def _dependent_schemas(c: _Checker, s: dict, deps: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, dict):
        return []
    return [p for key, sub in deps.items() if key in v for p in c.run(sub, v, path, f"{ptr}/{escape(key)}")]


def _dependencies(c: _Checker, s: dict, deps: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    if not isinstance(v, dict):
        return []
    out: list[Problem] = []
    for key, dep in deps.items():
        if key not in v:
            continue
        if isinstance(dep, list):
            out += [
                Problem(field_path(path, n), "dependencies", ptr, f"required when {key!r} is present")
                for n in dep
                if n not in v
            ]
        else:
            out += c.run(dep, v, path, f"{ptr}/{escape(key)}")
    return out


def _all_of(c: _Checker, s: dict, subs: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    return [p for i, sub in enumerate(subs) for p in c.run(sub, v, path, f"{ptr}/{i}")]


def _any_of(c: _Checker, s: dict, subs: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    failures = [c.run(sub, v, path, f"{ptr}/{i}") for i, sub in enumerate(subs)]
    if any(not f for f in failures):
        return []
    return _no_alternative("anyOf", failures, path, ptr)


def _no_alternative(keyword: str, failures: list[list[Problem]], path: str, ptr: str) -> list[Problem]:
    """When only one alternative has the value's kind (`Optional[Model]` given an object), its
    own failures say what is wrong; otherwise the combinator fails as a whole."""
    near = [f for f in failures if not any(p.path == path and p.keyword in ("type", "const", "enum") for p in f)]
    if len(near) == 1:
        return near[0]
    causes = tuple(p for f in failures for p in f)
    return [Problem(path, keyword, ptr, "matches none of the alternatives", causes)]


def _one_of(c: _Checker, s: dict, subs: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    failures = [c.run(sub, v, path, f"{ptr}/{i}") for i, sub in enumerate(subs)]
    matched = [i for i, f in enumerate(failures) if not f]
    if len(matched) == 1:
        return []
    if matched:
        return [Problem(path, "oneOf", ptr, f"matches alternatives {matched}, exactly one is allowed")]
    return _no_alternative("oneOf", failures, path, ptr)


def _not(c: _Checker, s: dict, sub: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    return [] if c.run(sub, v, path, ptr) else [Problem(path, "not", ptr, "matches a schema it must not match")]


def _if(c: _Checker, s: dict, sub: Any, v: Any, path: str, ptr: str) -> list[Problem]:
    base = ptr.rsplit("/", 1)[0]
    if not c.run(sub, v, path, ptr):
        return c.run(s["then"], v, path, base + "/then") if "then" in s else []
    return c.run(s["else"], v, path, base + "/else") if "else" in s else []


def _date(v: str) -> bool:
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", v, re.ASCII)) and bool(datetime.date.fromisoformat(v))


_TIME = re.compile(
    r"(?P<h>\d{2}):(?P<m>\d{2}):(?P<s>\d{2})(\.\d+)?(?P<tz>[zZ]|[+-](?P<th>\d{2}):(?P<tm>\d{2}))", re.ASCII
)


def _time(v: str) -> bool:
    m = _TIME.fullmatch(v)
    if not m:
        return False
    if int(m["th"] or 0) > 23 or int(m["tm"] or 0) > 59:
        return False
    return int(m["h"]) <= 23 and int(m["m"]) <= 59 and int(m["s"]) <= 59


def _date_time(v: str) -> bool:
    parts = re.split("[Tt]", v)
    return len(parts) == 2 and _date(parts[0]) and _time(parts[1])


def _uuid(v: str) -> bool:
    uuid.UUID(v)
    return len(v) == 36 and all(v[i] == "-" for i in (8, 13, 18, 23))


def _ipv4(v: str) -> bool:
    return isinstance(ipaddress.IPv4Address(v), ipaddress.IPv4Address)


def _ipv6(v: str) -> bool:
    return "%" not in v and isinstance(ipaddress.IPv6Address(v), ipaddress.IPv6Address)


def _regex(v: str) -> bool:
    re.compile(v)
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "date": _date,
    "time": _time,
    "date-time": _date_time,
    "uuid": _uuid,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "email": lambda v: "@" in v,
    "idn-email": lambda v: "@" in v,
    "regex": _regex,
}

KNOWN_FORMATS = frozenset(FORMATS) | {
    "hostname", "idn-hostname", "uri", "uri-reference", "iri", "iri-reference", "uri-template",
    "json-pointer", "relative-json-pointer", "duration",
}
"""Formats that validators check; of these, the ones missing from FORMATS cannot be checked here.
Any other format name is an annotation with no effect on validity."""

_KEYWORDS: dict[str, Keyword] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "multipleOf": _multiple_of,
    "minimum": _bound("minimum"),
    "maximum": _bound("maximum"),
    "exclusiveMinimum": _bound("exclusiveMinimum"),
    "exclusiveMaximum": _bound("exclusiveMaximum"),
    "minLength": _length("minLength"),
    "maxLength": _length("maxLength"),
    "minItems": _length("minItems"),
    "maxItems": _length("maxItems"),
    "minProperties": _length("minProperties"),
    "maxProperties": _length("maxProperties"),
    "pattern": _pattern,
    "format": _format,
    "items": _items,
    "prefixItems": _prefix_items,
    "uniqueItems": _unique,
    "contains": _contains,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "required": _required,
    "propertyNames": _property_names,
    "dependentRequired": _dependent_required,
    "dependentSchemas": _dependent_schemas,
    "dependencies": _dependencies,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
}

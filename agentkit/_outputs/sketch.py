"""A JSON Schema written as the JSON it describes, with each value's kind in words.

`{"customer": <string>, "quantity": <integer>, "currency": <one of "GBP", "USD">}` tells a
small model what to write in the form it is about to write it; a JSON Schema document tells
it the same in a language it reads far less well (on the tune half of `bench.values` the
sketch moved SmolLM2-135M from 39% to 48% of fields right, grounded). Every keyword a grammar
enforces is said (lengths, bounds, patterns, formats, enums); descriptions follow their value.
"""

from __future__ import annotations

import json
from typing import Any

from .._tools.pydantic_schema import DECIMAL_PATTERNS

MAX_DEPTH = 6  # nesting written out; deeper values are written as <...> (recursive types)

_FORMATS = {
    "date": "a date as YYYY-MM-DD",
    "date-time": "a date and time as YYYY-MM-DDTHH:MM:SS with its offset",
    "time": "a time as HH:MM:SS with its offset",
    "email": "an email address",
    "uri": "a URL",
    "uuid": "a UUID",
    "ipv4": "an IPv4 address",
    "ipv6": "an IPv6 address",
    "duration": "an ISO 8601 duration",
}
_BOUNDS = (("minimum", "at least"), ("exclusiveMinimum", "above"), ("maximum", "at most"),
           ("exclusiveMaximum", "below"), ("multipleOf", "a multiple of"))


def sketch(schema: Any) -> str:
    """`schema` (a JSON Schema, `$ref`s into its own `$defs`) written as the JSON it describes."""
    defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
    return _value(schema, defs, 0)


def _value(node: Any, defs: dict[str, Any], depth: int) -> str:
    if node is True or node == {}:
        return "<any JSON value>"
    if node is False:
        return "<nothing>"
    if not isinstance(node, dict):
        return "<any JSON value>"
    if depth > MAX_DEPTH:
        return "<...>"
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[len("#/$defs/"):] in defs:
        target = defs[ref[len("#/$defs/"):]]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _value({**target, **rest}, defs, depth + 1)
    if node.get("type") == "object" or "properties" in node:
        return _described(_object(node, defs, depth), node)
    if node.get("type") == "array" or "items" in node or "prefixItems" in node:
        return _described(_array(node, defs, depth), node)
    return f"<{_words(node, defs, depth)}>"


def _object(node: dict[str, Any], defs: dict[str, Any], depth: int) -> str:
    props = node.get("properties") or {}
    required = set(node.get("required") or ())
    parts = []
    for name, sub in props.items():
        written = _value(sub, defs, depth + 1)
        if name not in required:
            written += " (optional)" if not _nullable(sub, defs) else ""
        parts.append(f"{json.dumps(name, ensure_ascii=False)}: {written}")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and extra:
        parts.append(f"<any key>: {_value(extra, defs, depth + 1)}")
    elif extra is not False and not props:
        return "<an object>"
    return "{" + ", ".join(parts) + "}"


def _array(node: dict[str, Any], defs: dict[str, Any], depth: int) -> str:
    first = [_value(item, defs, depth + 1) for item in node.get("prefixItems") or ()]
    items = node.get("items")
    body = ", ".join(first + ([_value(items, defs, depth + 1), "..."] if items is not False else []))
    bounds = _count(node.get("minItems"), node.get("maxItems"), "item")
    return f"[{body}]" + (f" ({bounds})" if bounds else "")


def _words(node: dict[str, Any], defs: dict[str, Any], depth: int) -> str:
    """A scalar's kind in words (or a union's, each branch in turn)."""
    if "const" in node:
        return json.dumps(node["const"], ensure_ascii=False)
    if "enum" in node:
        return "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in node["enum"])
    for keyword in ("anyOf", "oneOf"):
        if isinstance(node.get(keyword), list):
            branches = node[keyword]
            null = any(isinstance(b, dict) and b.get("type") == "null" for b in branches)
            said = [_value(b, defs, depth + 1).strip("<>") for b in branches
                    if not (isinstance(b, dict) and (b.get("type") == "null" or _numeral(b)))]
            said = list(dict.fromkeys(said))
            return _described(" or ".join(said) + (", or null where the text does not say" if null else ""), node)
    types = node.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    null = "null" in types
    said = [_scalar(t, node) for t in types if t != "null"] or ["any JSON value"]
    return _described(" or ".join(said) + (", or null where the text does not say" if null else ""), node)


def _scalar(kind: str, node: dict[str, Any]) -> str:
    if kind == "string":
        fmt = node.get("format")
        words = _FORMATS.get(fmt, f"a string ({fmt})") if isinstance(fmt, str) else "string"
        if isinstance(node.get("pattern"), str):
            words += f" matching {node['pattern']}"
        length = _count(node.get("minLength"), node.get("maxLength"), "character")
        return words + (f", {length}" if length else "")
    if kind in ("integer", "number"):
        bounds = [f"{words} {node[key]}" for key, words in _BOUNDS if key in node]
        return kind + (f" ({', '.join(bounds)})" if bounds else "")
    if kind == "boolean":
        return "true or false"
    return {"object": "an object", "array": "a list"}.get(kind, kind)


def _count(low: Any, high: Any, unit: str) -> str:
    if low and high is not None:
        return f"{low} to {high} {unit}s"
    if low:
        return f"at least {low} {unit}{'s' if low != 1 else ''}"
    if high is not None:
        return f"at most {high} {unit}{'s' if high != 1 else ''}"
    return ""


def _described(text: str, node: dict[str, Any]) -> str:
    description = node.get("description")
    if isinstance(description, str) and description.strip():
        return f"{text} ({' '.join(description.split())})"
    return text


def _numeral(node: dict[str, Any]) -> bool:
    """A Decimal's string spelling, said by its number branch."""
    return node.get("type") == "string" and node.get("pattern") in DECIMAL_PATTERNS


def _nullable(node: Any, defs: dict[str, Any]) -> bool:
    if not isinstance(node, dict):
        return False
    branches = node.get("anyOf") or node.get("oneOf") or []
    types = node.get("type")
    return "null" in (types if isinstance(types, list) else [types]) or any(
        isinstance(b, dict) and b.get("type") == "null" for b in branches)

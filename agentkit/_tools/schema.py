"""JSON Schema plumbing: walking subschemas, and the schema of a Python type, normalised for
prompts and grammars (local `$ref`s inlined where not recursive, titles stripped, objects closed)."""

from __future__ import annotations

import copy
from typing import Any, Iterator

from .pydantic_schema import json_schema_of

_MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LIST_KEYWORDS = ("prefixItems", "allOf", "anyOf", "oneOf")
_ONE_KEYWORDS = (
    "additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if", "then",
    "else", "unevaluatedItems", "unevaluatedProperties",
)


def escape(part: str) -> str:
    """One JSON pointer reference token (RFC 6901)."""
    return part.replace("~", "~0").replace("/", "~1")


def unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def subschemas(schema: Any) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Each direct subschema of `schema`, with its path of keys below `schema`."""
    if not isinstance(schema, dict):
        return
    for key in _MAP_KEYWORDS:
        value = schema.get(key)
        if isinstance(value, dict):
            for name, sub in value.items():
                yield (key, name), sub
    for key in _LIST_KEYWORDS:
        value = schema.get(key)
        if isinstance(value, list):
            for i, sub in enumerate(value):
                yield (key, str(i)), sub
    for key in _ONE_KEYWORDS:
        if key in schema and isinstance(schema[key], (dict, bool)):
            yield (key,), schema[key]
    items = schema.get("items")
    if isinstance(items, (dict, bool)):
        yield ("items",), items
    elif isinstance(items, list):
        for i, sub in enumerate(items):
            yield ("items", str(i)), sub
    deps = schema.get("dependencies")
    if isinstance(deps, dict):
        for name, sub in deps.items():
            if isinstance(sub, (dict, bool)):
                yield ("dependencies", name), sub


def pointer(parts: tuple[str, ...]) -> str:
    return "".join("/" + escape(p) for p in parts)


def resolve_local(root: dict[str, Any], ref: str) -> Any:
    """The subschema a local `$ref` ("#/...") names; KeyError when it names nothing."""
    if not ref.startswith("#"):
        raise KeyError(ref)
    node: Any = root
    parts = ref[1:].split("/")[1:] if ref.startswith("#/") else []
    if ref not in ("#", "") and not ref.startswith("#/"):
        raise KeyError(ref)
    for part in [unescape(p) for p in parts]:
        if isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def schema_for_type(tp: Any) -> dict[str, Any]:
    """The normalised JSON Schema of a (prepared) Python type, as pydantic derives it."""
    return normalise(json_schema_of(tp), close_objects=True)


def normalise(schema: dict[str, Any], *, close_objects: bool) -> dict[str, Any]:
    """A copy of a pydantic-made schema fit for a prompt and a grammar: non-recursive local
    `$ref`s inlined, unused `$defs` removed, `title`s stripped, and (`close_objects`) every
    object with declared properties closed to other keys, as tool arguments must be."""
    schema = copy.deepcopy(schema)
    defs = schema.get("$defs", {})
    recursive = _recursive_defs(defs)
    schema = _inline(schema, defs, recursive)
    kept = {name: _inline(defs[name], defs, recursive) for name in sorted(recursive)}
    schema.pop("$defs", None)
    if kept:
        schema["$defs"] = kept
    _strip_titles(schema)
    if close_objects:
        close_open_objects(schema)
    return schema


def close_open_objects(node: Any) -> None:
    """Close, in place, every object of `node` that declares properties and says nothing of other
    keys (`additionalProperties: false`), as tool arguments must be."""
    if not isinstance(node, dict):
        return
    if "properties" in node and not {"additionalProperties", "patternProperties", "unevaluatedProperties"} & node.keys():
        node["additionalProperties"] = False
    for _, sub in subschemas(node):
        close_open_objects(sub)


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(unescape(ref[len("#/$defs/"):]))
        for _, sub in subschemas(node):
            found |= _refs(sub)
    return found


def _recursive_defs(defs: dict[str, Any]) -> set[str]:
    """The definitions that reach themselves through `$ref`s, and those that reach them."""
    edges = {name: _refs(body) for name, body in defs.items()}

    def reach(start: str) -> set[str]:
        seen, todo = set(), list(edges.get(start, ()))
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(edges.get(name, ()))
        return seen

    cyclic = {name for name in defs if name in reach(name)}
    return {name for name in defs if name in cyclic or reach(name) & cyclic}


def _inline(node: Any, defs: dict[str, Any], keep: set[str]) -> Any:
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = unescape(ref[len("#/$defs/"):])
        if name in defs and name not in keep:
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**_inline(copy.deepcopy(defs[name]), defs, keep), **siblings}
    out = dict(node)
    for path, sub in subschemas(node):
        target: Any = out
        for part in path[:-1]:
            target[part] = type(target[part])(target[part])
            target = target[part]
        key: Any = int(path[-1]) if isinstance(target, list) else path[-1]
        target[key] = _inline(sub, defs, keep)
    return out


def _strip_titles(node: Any) -> None:
    if not isinstance(node, dict):
        return
    node.pop("title", None)
    for _, sub in subschemas(node):
        _strip_titles(sub)

"""JSON Schemas combined into one `anyOf`, so a grammar built from several schemas (a tool turn,
`either`) still has a schema for servers that take schemas rather than grammars.

A schema moved under another keeps its meaning only if its local references still point where
they did: each part's root `$defs` (and `definitions`) move to the union's root `$defs` under a
prefix of their own, and every other local `$ref` gets the part's new place in front. A part
with an `$id`, an `$anchor`, a dynamic or a remote reference cannot be moved safely: then there
is no union (None), and such a grammar travels only as a grammar.
"""

from __future__ import annotations

from typing import Any

_DEFS = ("$defs", "definitions")
_UNMOVABLE = ("$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor")


def moved(schema: Any, pointer: str, prefix: str, defs: dict[str, Any]) -> Any | None:
    """`schema` as it reads at `pointer` under a new root: its root definitions added to `defs`
    under `prefix`, its local references rewritten. None where it cannot be moved."""
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict):
        return None
    own: dict[str, str] = {}
    body = {k: v for k, v in schema.items() if k not in _DEFS and k != "$schema"}
    for key in _DEFS:
        found = schema.get(key)
        if found is None:
            continue
        if not isinstance(found, dict):
            return None
        for name in found:
            own[f"#/{key}/{name}"] = f"#/$defs/{prefix}{name}"
    try:
        for key in _DEFS:
            for name, sub in (schema.get(key) or {}).items():
                defs[f"{prefix}{name}"] = _rewritten(sub, pointer, own)
        return _rewritten(body, pointer, own)
    except _Unmovable:
        return None


class _Unmovable(Exception):
    pass


def _rewritten(node: Any, pointer: str, own: dict[str, str]) -> Any:
    if isinstance(node, list):
        return [_rewritten(item, pointer, own) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _UNMOVABLE:
            raise _Unmovable(key)
        if key == "$ref":
            out[key] = _ref(value, pointer, own)
        elif key in ("enum", "const", "default", "examples"):
            out[key] = value  # values, not schemas: a "$ref" inside them is data
        else:
            out[key] = _rewritten(value, pointer, own)
    return out


def _ref(ref: Any, pointer: str, own: dict[str, str]) -> str:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise _Unmovable("$ref")
    for old, new in own.items():
        if ref == old or ref.startswith(old + "/"):
            return new + ref[len(old):]
    if ref != "#" and not ref.startswith("#/"):
        raise _Unmovable("$ref")  # an anchor name
    return "#" + pointer + ref[1:]

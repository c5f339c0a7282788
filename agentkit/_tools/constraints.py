"""The constraint report: per field, which schema constraints the grammar enforces while
decoding and which only the validator checks after decoding (what a lenient compile dropped)."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from grammar import Grammar

from .schema import escape, resolve_local
from .validator import field_path

ASSERTIONS = (
    "type", "enum", "const", "multipleOf", "minimum", "exclusiveMinimum", "maximum",
    "exclusiveMaximum", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
    "uniqueItems", "prefixItems", "contains", "minContains", "maxContains", "required",
    "additionalProperties", "patternProperties", "propertyNames", "minProperties",
    "maxProperties", "dependentRequired", "dependentSchemas", "dependencies", "anyOf", "oneOf",
    "allOf", "not", "if", "additionalItems", "unevaluatedProperties", "unevaluatedItems",
)
"""Keywords that restrict which values are valid (annotations such as `description` do not)."""


@dataclass(frozen=True)
class FieldConstraints:
    """The constraints on one field: `by_grammar` hold while decoding, `after_decoding` are
    checked by the validator once the value is complete (a call failing them is fed back)."""

    field: str
    by_grammar: tuple[str, ...]
    after_decoding: tuple[str, ...]


class Constraints(Mapping[str, FieldConstraints]):
    """`tool.constraints`: field path (``""`` for the whole value, ``"tags[]"`` for each item,
    ``"address.zip"``) to its `FieldConstraints`."""

    def __init__(self, fields: dict[str, FieldConstraints], placement: dict[tuple[str, str], str]):
        self._fields = fields
        self._placement = placement

    def __getitem__(self, key: str) -> FieldConstraints:
        return self._fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    @property
    def after_decoding(self) -> list[tuple[str, str]]:
        """Every (field, keyword) that only the validator checks."""
        return [(f.field, k) for f in self._fields.values() for k in f.after_decoding]

    def enforced_by(self, pointer: str, keyword: str) -> str:
        """"grammar" or "validator" for the keyword at this schema pointer."""
        return self._placement.get((pointer, keyword), "grammar")

    def __str__(self) -> str:
        rows = []
        for f in self._fields.values():
            grammar_part = ", ".join(f.by_grammar) or "-"
            after_part = ", ".join(f.after_decoding) or "-"
            rows.append(f"{f.field or '(arguments)'}: grammar enforces {grammar_part}; checked after decoding: {after_part}")
        return "\n".join(rows)

    def __repr__(self) -> str:
        return f"Constraints({self._fields!r})"


def _keyword_places(g: Grammar, *, ignored: bool = False) -> set[tuple[str, str]]:
    """The (subschema pointer, keyword) pairs a lenient compile dropped (or, with `ignored`,
    treated as annotations).

    A pointer may name the subschema or the keyword itself; both forms are kept, so a lookup
    by subschema pointer finds either.
    """
    out = set()
    for d in g.ignored if ignored else g.dropped:
        ptr = d.pointer
        suffix = "/" + escape(d.keyword)
        if ptr.endswith(suffix):
            out.add((ptr[: -len(suffix)], d.keyword))
        out.add((ptr, d.keyword))
    return out


def report(schema: Any, g: Grammar, *, checked_formats: Collection[str]) -> Constraints:
    """Walk `schema` (following local `$ref`s once each) and place every assertion keyword.

    A format the grammar ignores is checked after decoding when it is one of `checked_formats`
    (those the validator's format checker knows); otherwise it is an annotation and not listed.
    """
    dropped = _keyword_places(g)
    ignored = _keyword_places(g, ignored=True)
    fields: dict[str, dict[str, set[str]]] = {}
    placement: dict[tuple[str, str], str] = {}
    seen_refs: set[str] = set()

    def visit(node: Any, ptr: str, path: str) -> None:
        if not isinstance(node, dict):
            return
        slot = fields.setdefault(path, {"grammar": set(), "validator": set()})
        for key in node:
            if key not in ASSERTIONS:
                continue
            where = "validator" if (ptr, key) in dropped else "grammar"
            if key == "format" and (ptr, key) in ignored:
                if node[key] in checked_formats:
                    where = "validator"
                else:
                    continue
            placement[(ptr, key)] = where
            slot[where].add(key)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#") and ref not in seen_refs:
            seen_refs.add(ref)
            try:
                visit(resolve_local(schema, ref), ref[1:], path)
            except (KeyError, IndexError, ValueError):
                pass
        for key, sub in (node.get("properties") or {}).items():
            visit(sub, f"{ptr}/properties/{escape(key)}", field_path(path, key))
        items = node.get("items")
        if isinstance(items, list):
            for i, sub in enumerate(items):
                visit(sub, f"{ptr}/items/{i}", field_path(path, i))
        else:
            visit(items, f"{ptr}/items", path + "[]")
        for i, sub in enumerate(node.get("prefixItems") or []):
            visit(sub, f"{ptr}/prefixItems/{i}", field_path(path, i))
        for key in ("additionalProperties", "unevaluatedProperties"):
            visit(node.get(key), f"{ptr}/{key}", field_path(path, "*"))
        for key, sub in (node.get("patternProperties") or {}).items():
            visit(sub, f"{ptr}/patternProperties/{escape(key)}", field_path(path, "*"))
        for key in ("anyOf", "oneOf", "allOf"):
            for i, sub in enumerate(node.get(key) or []):
                visit(sub, f"{ptr}/{key}/{i}", path)
        for key in ("not", "if", "then", "else"):
            visit(node.get(key), f"{ptr}/{key}", path)

    visit(schema, "", "")
    out = {
        path: FieldConstraints(path, tuple(sorted(s["grammar"])), tuple(sorted(s["validator"])))
        for path, s in fields.items()
        if s["grammar"] or s["validator"]
    }
    return Constraints(out, placement)

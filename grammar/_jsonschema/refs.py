"""Where a JSON Schema subschema stands and where its `$ref` leads, as the validator sees it.

A `Place` is a subschema with what reading it needs: its JSON pointer in the root document (for
messages), its base URI (for `$ref`) and its dialect. Dialects follow the validator: a subschema
with its own known `$schema` switches dialect (unknown ones keep the enclosing dialect); `id`
(draft 4) or `$id` changes the base URI; `$anchor` (2019-09+) or a fragment-only id (drafts 4-7)
names an anchor. Only references inside the document resolve: anything else would be fetched by
the validator, so it is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from .._errors import CompileError, LimitError

DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020 = "draft4", "draft6", "draft7", "draft2019-09", "draft2020-12"
LEGACY = (DRAFT4, DRAFT6, DRAFT7)  # dialects where `$ref` hides its siblings

_META = {
    "http://json-schema.org/draft-04/schema": DRAFT4,
    "http://json-schema.org/draft-06/schema": DRAFT6,
    "http://json-schema.org/draft-07/schema": DRAFT7,
    "https://json-schema.org/draft/2019-09/schema": DRAFT2019,
    "https://json-schema.org/draft/2020-12/schema": DRAFT2020,
}
_DRAFT3 = "http://json-schema.org/draft-03/schema"

MAX_DEPTH = 256

# Keywords whose values are subschemas, per shape (as the `referencing` library walks them).
_IN_PLACE = {
    "additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if", "items",
    "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties",
}
_ARRAY = {"allOf", "anyOf", "oneOf", "prefixItems", "items"}
_MAPPING = {"$defs", "definitions", "dependentSchemas", "patternProperties", "properties", "dependencies"}


def dialect_of(schema: object, default: str, pointer: str = "") -> str:
    """The dialect the validator reads `schema` in: its `$schema` if known, else `default`."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return default
    uri = schema["$schema"]
    if not isinstance(uri, str):
        raise CompileError("$schema must be a string", keyword="$schema", pointer=pointer)
    normalized = urlsplit(uri).geturl()
    if normalized == _DRAFT3:
        raise CompileError("draft 3 schemas are not supported", keyword="$schema", pointer=pointer)
    return _META.get(normalized, default)


def escape_token(token: str | int) -> str:
    token = str(token)
    if "~" not in token and "/" not in token:
        return token
    return token.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True)
class Place:
    """A subschema in context: what it is, where it stands, how its `$ref`s resolve."""

    schema: object
    pointer: str
    base: str
    dialect: str
    # Keywords already applied by the compiler (so a place can be revisited without them).
    done: frozenset[str] = field(default=frozenset())

    @property
    def key(self) -> tuple:
        return (id(self.schema), self.base, self.dialect, self.done)

    def without(self, *keywords: str) -> "Place":
        if self.done.issuperset(keywords):
            return self
        return Place(self.schema, self.pointer, self.base, self.dialect, self.done | frozenset(keywords))


def _own_id(schema: object, dialect: str) -> str | None:
    """The id that moves the base URI, as the validator's dialect reads it."""
    if not isinstance(schema, dict):
        return None
    if dialect in LEGACY and "$ref" in schema:
        return None
    key = "id" if dialect == DRAFT4 else "$id"
    value = schema.get(key)
    if not isinstance(value, str) or value.startswith("#"):
        return None
    return value[:-1] if value.endswith("#") else value


def _own_anchors(schema: object, dialect: str) -> list[str]:
    if not isinstance(schema, dict):
        return []
    if dialect in LEGACY:
        if "$ref" in schema:
            return []
        value = schema.get("id" if dialect == DRAFT4 else "$id")
        return [value[1:]] if isinstance(value, str) and value.startswith("#") and len(value) > 1 else []
    out = []
    for key in ("$anchor",) + (("$dynamicAnchor",) if dialect == DRAFT2020 else ()):
        value = schema.get(key)
        if isinstance(value, str):
            out.append(value)
    return out


class Document:
    """The root schema with its resources (base URI -> place) and anchors, for `$ref`."""

    def __init__(self, root: object, default_dialect: str = DRAFT2020):
        dialect = dialect_of(root, default_dialect)
        self.root = self.enter(root, "", "", dialect)
        self.resources: dict[str, Place] = {}
        self.anchors: dict[tuple[str, str], Place] = {}
        self._indexed = False  # resources and anchors are found on the first `$ref`

    @staticmethod
    def enter(schema: object, pointer: str, base: str, dialect: str) -> Place:
        """The place of `schema` entered from a parent with `base` and `dialect`."""
        dialect = dialect_of(schema, dialect, pointer)
        own = _own_id(schema, dialect)
        if own is not None:
            base = urljoin(base, own)
        return Place(schema, pointer, base, dialect)

    def child(self, place: Place, *path: str | int) -> Place:
        """The place of a subschema below `place` at a keyword path."""
        value = place.schema
        for token in path:
            value = value[token]
        pointer = place.pointer
        for token in path:
            pointer += "/" + escape_token(token)
        return self.enter(value, pointer, place.base, place.dialect)

    def _index(self, place: Place, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise LimitError("schema nests too deeply", pointer=place.pointer)
        schema = place.schema
        if not isinstance(schema, dict):
            return
        base_uri = urldefrag(place.base)[0]
        if base_uri not in self.resources or place.pointer == "":
            if place is self.root or _own_id(schema, place.dialect) is not None:
                self.resources.setdefault(base_uri, place)
        for name in _own_anchors(schema, place.dialect):
            self.anchors.setdefault((base_uri, name), place)
        for keyword, value in schema.items():
            for path in _subschema_paths(keyword, value, place.dialect):
                self._index(self.child(place, *path), depth + 1)

    def resolve(self, place: Place, ref: object) -> Place:
        """The place a `$ref` at `place` leads to, or a CompileError saying why it can't."""
        if not isinstance(ref, str):
            raise CompileError("$ref must be a string", keyword="$ref", pointer=place.pointer)
        if not self._indexed:
            self._index(self.root, 0)
            self._indexed = True
        if ref.startswith("#"):
            uri, fragment = urldefrag(place.base)[0], ref[1:]
        else:
            uri, fragment = urldefrag(urljoin(place.base, ref))
        resource = self.resources.get(uri)
        if resource is None:
            raise CompileError(
                f"$ref {ref!r} leaves the schema document (only local references are supported)",
                keyword="$ref",
                pointer=place.pointer,
            )
        if fragment.startswith("/"):
            return self._walk(resource, unquote(fragment), ref, place)
        if fragment:
            found = self.anchors.get((uri, fragment))
            if found is None:
                raise CompileError(f"$ref {ref!r}: no such anchor", keyword="$ref", pointer=place.pointer)
            return found
        return resource

    def _walk(self, resource: Place, pointer: str, ref: str, origin: Place) -> Place:
        current = resource
        value = resource.schema
        segments: list[str | int] = []
        start = current
        for raw in pointer[1:].split("/"):
            token: str | int
            if isinstance(value, list):
                try:
                    token = int(raw)
                    value = value[token]
                except (ValueError, IndexError):
                    raise CompileError(f"$ref {ref!r} points nowhere", keyword="$ref", pointer=origin.pointer)
            elif isinstance(value, dict):
                token = raw.replace("~1", "/").replace("~0", "~")
                if token not in value:
                    raise CompileError(f"$ref {ref!r} points nowhere", keyword="$ref", pointer=origin.pointer)
                value = value[token]
            else:
                raise CompileError(f"$ref {ref!r} points nowhere", keyword="$ref", pointer=origin.pointer)
            segments.append(token)
            pointer_here = start.pointer + "".join("/" + escape_token(t) for t in segments)
            if _is_subschema_path(segments, start.schema, start.dialect):
                current = self.enter(value, pointer_here, start.base, start.dialect)
                start = current
                segments = []
            else:
                current = Place(value, pointer_here, start.base, start.dialect)
        return current


def _subschema_paths(keyword: str, value: object, dialect: str) -> list[tuple[str | int, ...]]:
    out: list[tuple[str | int, ...]] = []
    if keyword in _IN_PLACE and isinstance(value, (dict, bool)):
        out.append((keyword,))
    if keyword in _ARRAY and isinstance(value, list):
        out.extend((keyword, i) for i in range(len(value)))
    if keyword in _MAPPING and isinstance(value, dict):
        out.extend((keyword, k) for k, v in value.items() if isinstance(v, (dict, bool)))
    return out


def _is_subschema_path(segments: list[str | int], parent: object, dialect: str) -> bool:
    if not isinstance(parent, dict) or not segments or not isinstance(segments[0], str):
        return False
    keyword = segments[0]
    if len(segments) == 1:
        return keyword in _IN_PLACE
    if len(segments) == 2:
        return (keyword in _ARRAY and isinstance(segments[1], int)) or (
            keyword in _MAPPING and isinstance(segments[1], str)
        )
    return False

"""JSON Schema -> grammar IR, sound against the `jsonschema` validator.

The validator is the meaning: `validator_for(schema, default=Draft202012Validator)(schema,
format_checker=<that class's FORMAT_CHECKER>)`. Every text the grammar accepts parses to a value
that validator accepts; a keyword that cannot be enforced so is a `CompileError` naming the keyword
and its JSON pointer (or, with `lenient=True`, dropped and listed on `Grammar.dropped`).

How a schema becomes rules:
- a *conjunction* of subschemas (a list of `Place`s) is the unit: `$ref`, `allOf` and `not` are
  expanded into more conjuncts (`_flatten`); `anyOf`, `oneOf`, `if` and dependencies branch, each
  branch a conjunction of the rest with one alternative (`_alternatives`);
- a conjunction without branches merges into one `Facets` record (per-type constraints), lowered
  to text by type: objects in declared property order, arrays by position, strings through the
  JSON-escaping homomorphism, numbers as digit automata;
- each conjunction is memoized as a named rule, so `$ref` cycles become recursive rules.

Negation (`not`, the `else` side of `if`, and the other branches of a `oneOf` that can't be proved
disjoint) is built keyword by keyword as the union of each keyword's violations; a keyword of one
type (`minLength`, `maximum`, `items`, `required` ...) is violated only by values of that type, one
that constrains nothing (`minLength: 0`, `items: true`) by none, and an excluded array or object
splits the arrays or objects into those that differ from it in length, a key or an item. Where a
keyword's violations can't be built, `not` and `if` are a `CompileError`, never a looser grammar.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from dataclasses import dataclass, field, replace
from itertools import product

from . import _json_lang as lang
from ._errors import CompileError, LimitError
from ._grammar import Dropped, Grammar, Ignored
from ._ir import (
    ANY_CHAR,
    EMPTY,
    NOTHING,
    Lit,
    Node,
    alt,
    char_set,
    lit,
    opt,
    ref,
    repeat,
    seq,
    walk,
)
from ._json_formats import format_automaton, format_language, is_checked
from ._json_lengths import node_lengths as _node_lengths
from ._json_lengths import within
from ._json_numbers import ANY_NUMBER, Bound, contains_number, number_texts, tighter_lower, tighter_upper
from ._json_refs import DRAFT4, DRAFT2020, LEGACY, Document, Place, escape_token
from ._json_strings import ANY_STRING, encode, excluding, excluding_text, quoted, string_text
from ._timing import logged_compile, schema_size

MAX_RULES = 50_000
MAX_ALTERNATIVES = 256
MAX_DEPTH = 200
MAX_REPEAT = 100_000
MAX_PATTERN_SUBSETS = 4
MAX_DEPENDENCIES = 6
MAX_COUNT_STATES = 4_000
MAX_UNCOUNTED_EXTRAS = 16  # members a lenient grammar asks for where minProperties is left to the validator
MAX_NEGATION_DEPTH = 6
MAX_NEGATED_ONE_OF = 8  # its negation names every pair of branches
MAX_VALUE_DEPTH = 64  # nesting of a const/enum value
MAX_EXCLUDED_NUMBERS = 1_000  # numbers a `not` (of an enum, a const) may leave out of a range
_POSITIONS_PER_RULE = 32  # array positions (prefixItems) lowered into one rule
PYTHON_COMMA = seq(lit(","), opt(lit(" ")))  # between keyword arguments, or calls, as Python is written
LENGTH_CAP = 512  # longest string an automaton-built string language allows
SMALL_LENGTH = 64  # up to this maxLength, patterns and lengths are intersected exactly
EXACT_LENGTH_STATES = 4_000  # product states past which a length is spread over a language's parts
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
MAX_OTHER_KEY = 3


def any_json(*, whitespace: int | None = None) -> Grammar:
    """Any JSON value (compact, or with at most `whitespace` blanks between tokens)."""
    return from_json_schema(True, whitespace=whitespace)


@logged_compile("json-schema", schema_size)
def from_json_schema(
    schema: dict | bool | str, *, lenient: bool = False, whitespace: int | None = None
) -> Grammar:
    """The grammar of the JSON texts of the values `schema` accepts.

    `schema` may be JSON text. Output is compact JSON unless `whitespace` allows up to that many
    blanks between tokens. Objects keep the schema's property order (optional ones may be
    skipped; extra keys, where allowed, follow the declared ones).
    """
    source = "json-schema"
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise CompileError(f"schema is not valid JSON: {e}", keyword="$schema", pointer="") from None
        except RecursionError:  # the decoder's own depth bound
            raise LimitError("schema text nests too deeply to parse", pointer="") from None
    compiler = _compiler_for(schema, lenient, whitespace)
    root = compiler.compile_root()
    return Grammar(
        compiler.rules | {"root": root},
        "root",
        dropped=tuple(compiler.dropped),
        ignored=tuple(compiler.ignored),
        source=source,
        schema=schema,
    )


def keyword_arguments(schema: dict | bool, *, lenient: bool = False, whitespace: int | None = None) -> Grammar:
    """The grammar of an object schema's values written as Python keyword arguments,
    `name=value, name=value` (values in JSON, blanks as `from_json_schema`; the comma may take
    one space): the body of a call `f(...)`. Only declared properties can be written."""
    compiler = _compiler_for(schema, lenient, whitespace)
    root = compiler.compile_keywords()
    return Grammar(compiler.rules | {"root": root}, "root", dropped=tuple(compiler.dropped),
                   ignored=tuple(compiler.ignored), source="keyword-arguments")


def _compiler_for(schema, lenient: bool, whitespace: int | None) -> _Compiler:
    """A compiler for a parsed schema, its arguments checked."""
    if not isinstance(schema, (dict, bool)):
        raise CompileError("a schema must be an object or a boolean", pointer="")
    if whitespace is not None and (not isinstance(whitespace, int) or whitespace < 0):
        raise CompileError("whitespace must be a non-negative integer or None", keyword="whitespace")
    _check_integers(schema)
    return _Compiler(schema, lenient=lenient, whitespace=whitespace or 0)


MAX_INTEGER_DIGITS = 4_000
"""Digits an integer in a schema may have: Python prints no integer past 4,300 of them."""


def _check_integers(schema) -> None:
    """Refuse a schema holding an integer too long to print (a bound or a value), naming where
    it stands. A loop, not a recursion, over the whole document: schemas nest deep."""
    largest = 10**MAX_INTEGER_DIGITS
    steps: list[tuple[int, str | int]] = [(-1, "")]  # (parent step, key): each container's place
    todo: list[tuple[object, int]] = [(schema, 0)]
    while todo:
        value, at = todo.pop()
        if isinstance(value, (dict, list)):
            for k, v in value.items() if isinstance(value, dict) else enumerate(value):
                if isinstance(v, (dict, list, int)):
                    steps.append((at, k))
                    todo.append((v, len(steps) - 1))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= largest:
            path: list[str | int] = []
            while at > 0:
                at, key = steps[at]
                path.append(key)
            path.reverse()
            keyword = next((t for t in reversed(path) if isinstance(t, str)), None)
            raise LimitError(f"an integer of more than {MAX_INTEGER_DIGITS} digits",
                             keyword=keyword, pointer="".join("/" + escape_token(t) for t in path))


# --- merged constraints ---------------------------------------------------------------------------


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


# --- the compiler ---------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, schema: dict | bool, *, lenient: bool, whitespace: int):
        self.lenient = lenient
        self.document = Document(schema)
        self.root_dialect = self.document.root.dialect
        self.rules: dict[str, Node] = {}
        self.dropped: list[Dropped] = []
        self.ignored: list[Ignored] = []
        self._seen_ignored: set[tuple[str, str]] = set()
        self._seen_dropped: set[tuple[str, str]] = set()
        # The blanks allowed between tokens, one rule every place refers to: a rule used in many
        # places is built once and called, not spelled out at each of them.
        self.ws = EMPTY
        if whitespace:
            self.rules["ws"] = repeat(char_set(" \t\n\r"), 0, whitespace)
            self.ws = ref("ws")
        self._compiled: dict[tuple, Node] = {}
        self._leaves: dict[tuple, tuple[Node, list[str], list[tuple[str, str]]]] = {}  # see `_leaf_key`
        self._pending: dict[tuple, str] = {}
        self._recursive: set[str] = set()
        self._alternatives: dict[tuple, list[Facets]] = {}
        self._expanding: set[tuple] = set()
        self._negations: dict[tuple, Place | None] = {}
        self._inexact: set[tuple] = set()
        self._narrowing: set[tuple] = set()  # places whose negation is exact but leaves values out
        self._narrowed: set[int] = set()  # ids of the schemas of narrowed negations
        self._fabricated: list[dict] = []
        self._exclusions: dict[frozenset[str], Node] = {}
        self._regex: dict[str, Node] = {}
        self._counter = 0
        self._depth = 0
        self._any_value: Node | None = None
        self._to_encode: list[str] = []
        self._shared: dict[Node, Node] = {}
        self._numbers: dict[tuple, Node] = {}  # see `lower_number`
        self._listed: dict[int, tuple[list, int, set]] = {}  # see `among`

    # --- bookkeeping -------------------------------------------------------------------------

    def name(self, tag: str) -> str:
        self._counter += 1
        return f"{tag}-{self._counter}"

    def rule(self, name: str, node: Node) -> Node:
        if len(self.rules) >= MAX_RULES:
            raise LimitError(f"schema needs more than {MAX_RULES} grammar rules")
        self.rules[name] = node
        return ref(name)

    def shared(self, node: Node, tag: str) -> Node:
        """`node` as a rule, one for every equal node: values of the same shape in many places
        (every integer property) then compile to one piece of automaton, whose token sets the
        matcher finds once for all of them."""
        if isinstance(node, Lit) or node == NOTHING:
            return node  # a literal's states are cheap wherever it is; nothing needs no rule
        found = self._shared.get(node)
        if found is None:
            found = self._shared[node] = self.rule(self.name(tag), node)
        return found

    def refuse(self, message: str, keyword: str, pointer: str) -> None:
        """A keyword that can't be enforced: an error, or (lenient) a recorded drop."""
        if not self.lenient:
            raise CompileError(message, keyword=keyword, pointer=pointer)
        if (keyword, pointer) not in self._seen_dropped:
            self._seen_dropped.add((keyword, pointer))
            self.dropped.append(Dropped(keyword, pointer, message))

    def ignore(self, keyword: str, pointer: str) -> None:
        if (keyword, pointer) not in self._seen_ignored:
            self._seen_ignored.add((keyword, pointer))
            self.ignored.append(Ignored(keyword, pointer))

    def child(self, place: Place, *path: str | int) -> Place:
        """A subschema's place; schemas the compiler writes may hold places directly."""
        value = place.schema
        for token in path:
            value = value[token]
        if isinstance(value, Place):
            return value
        return self.document.child(place, *path)

    def fabricate(self, origin: Place, schema: dict) -> Place:
        """A place for a schema the compiler wrote (read as 2020-12, references already resolved)."""
        self._fabricated.append(schema)  # kept alive: places are keyed by id()
        return Place(schema, origin.pointer, origin.base, DRAFT2020)

    def fabricate_at(self, pointer: str, schema: dict | bool) -> Place:
        """A place for a schema the compiler wrote that holds no reference."""
        self._fabricated.append(schema)
        return Place(schema, pointer, "", DRAFT2020)

    # --- entry -------------------------------------------------------------------------------

    def compile_root(self) -> Node:
        root = self.compile_conj([self.document.root])
        self.finish()
        return root

    def compile_keywords(self) -> Node:
        """The root object's members as Python keyword arguments (`name=value, ...`, values
        in JSON): only its declared properties, as a call can't spell another key."""
        root = self.document.root
        try:
            alternatives = self.alternatives([root])
        except _Cyclic:
            raise CompileError("anyOf/oneOf/if branches lead back to themselves before reaching a value",
                               keyword="$ref", pointer="") from None
        parts = []
        for f in alternatives:
            if f.values is not None:
                raise CompileError("keyword arguments can't spell an enum or const of objects",
                                   keyword="enum", pointer=f.pointer)
            if "object" in f.kinds:
                parts.extend(self.lower_object(g, keywords=True) for g in self.excluding_containers(f, "object"))
        self.finish()
        return alt(*parts)

    def compile_conj(self, conj: list[Place]) -> Node:
        """The JSON texts of values satisfying every place in `conj`, memoized as a rule."""
        key = tuple(p.key for p in conj)
        if key in self._compiled:
            return self._compiled[key]
        # Equal leaf schemas in many places (every `{"type": "integer"}` property) are lowered
        # once; what was ignored or dropped there is noted again at each place.
        leaf = _leaf_key(conj[0]) if len(conj) == 1 else None
        if leaf is not None:
            found = self._leaves.get(leaf)
            if found is not None:
                node, ignored, dropped = found
                for keyword in ignored:
                    self.ignore(keyword, conj[0].pointer)
                for keyword, reason in dropped:
                    self.refuse(reason, keyword, conj[0].pointer)
                self._compiled[key] = node
                return node
            notes = len(self.ignored), len(self.dropped)
        if key in self._pending:
            name = self._pending[key]
            self._recursive.add(name)
            return ref(name)
        if not conj or all(p.schema is True or p.schema == {} for p in conj):
            return self.any_value()
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise LimitError("schema nests too deeply", pointer=conj[0].pointer)
        name = self.name("v")
        self._pending[key] = name
        try:
            node = alt(*(self.lower(f) for f in self.alternatives(conj)))
        except _Cyclic:
            raise CompileError(
                "anyOf/oneOf/if branches lead back to themselves before reaching a value (the "
                "validator recurses forever: no value validates)",
                keyword="$ref",
                pointer=conj[-1].pointer,
            ) from None
        except RecursionError:
            # Python's stack ran out before MAX_DEPTH (each level costs several frames): the
            # deepest conjunction that can still report names the place.
            raise LimitError("schema nests too deeply", pointer=conj[0].pointer) from None
        finally:
            del self._pending[key]
            self._depth -= 1
        if name in self._recursive or _size(node) > 40:
            node = self.rule(name, node)
        self._compiled[key] = node
        if leaf is not None:
            self._leaves[leaf] = (
                node,
                [i.keyword for i in self.ignored[notes[0]:]],
                [(d.keyword, d.reason) for d in self.dropped[notes[1]:]],
            )
        return node

    # --- flattening: $ref, allOf, not ---------------------------------------------------------

    def flatten(self, conj: list[Place]) -> tuple[list[Place], list[tuple[str, Place]]] | None:
        """Expand `$ref`, `allOf` and `not` into more conjuncts. Returns the conjuncts and the
        branching keywords still to distribute, or None if the conjunction is `false`."""
        facets: list[Place] = []
        branching: list[tuple[str, Place]] = []
        seen: set[tuple] = set()

        for place in conj:
            if not self._visit(place, (), seen, facets, branching):
                return None
        done = ("$ref", "allOf", "not", ALL)
        # Branch owners as the conjuncts returned, so `_expand` can tell which one to drop
        # the branching keyword from (else it is distributed again, squaring the branches).
        applied = {f.key: f.without(*done) for f in facets}
        return list(applied.values()), [(keyword, applied[owner.key]) for keyword, owner in branching]

    def _visit(self, place: Place, path: tuple, seen: set[tuple], facets: list[Place],
               branching: list[tuple[str, Place]]) -> bool:
        """`flatten` of one conjunct reached along `path`: False if it is `false`."""
        if place.key in path:
            raise CompileError(
                "$ref/allOf cycle that never reaches a value (the validator recurses forever)",
                keyword="$ref",
                pointer=place.pointer,
            )
        if place.key in seen:
            return True
        seen.add(place.key)
        schema = place.schema
        if schema is True:
            return True
        if schema is False:
            return False
        if not isinstance(schema, dict):
            raise CompileError("a schema must be an object or a boolean", pointer=place.pointer)
        path = path + (place.key,)
        if len(path) > MAX_DEPTH:
            raise LimitError("$ref/allOf chain too deep", pointer=place.pointer)
        facets.append(place)
        legacy_ref = place.dialect in LEGACY and "$ref" in schema
        if legacy_ref:
            for keyword in schema:
                if keyword != "$ref" and not isinstance(keyword, _Internal):
                    self.ignore(keyword, place.pointer)
            if "$ref" not in place.done:
                target = self.resolve(place)
                if target is not None and not self._visit(target, path, seen, facets, branching):
                    return False
            return True
        for keyword in schema:
            if keyword in place.done:
                continue
            if keyword == "$ref":
                target = self.resolve(place)
                if target is not None and not self._visit(target, path, seen, facets, branching):
                    return False
            elif keyword == "allOf" and keyword in VALIDATORS[place.dialect]:
                children = schema["allOf"]
                if not isinstance(children, list):
                    raise CompileError("allOf must be an array", keyword="allOf", pointer=place.pointer)
                for i in range(len(children)):
                    if not self._visit(self.child(place, "allOf", i), path, seen, facets, branching):
                        return False
            elif keyword is ALL:
                for child in schema[ALL]:
                    if not self._visit(child, path, seen, facets, branching):
                        return False
            elif keyword == "not" and keyword in VALIDATORS[place.dialect]:
                inner = self.child(place, "not")
                negation = self.negation(inner, 0)
                if negation is not None and not self.exact_negation(inner):
                    negation = None
                if negation is None:
                    self.refuse("cannot enforce this 'not' soundly", "not", place.pointer)
                elif not self._visit(negation, path, seen, facets, branching):
                    return False
            elif keyword in _BRANCHING and keyword in VALIDATORS[place.dialect]:
                branching.append((keyword, place))
        return True

    def resolve(self, place: Place) -> Place | None:
        try:
            return self.document.resolve(place, place.schema["$ref"])
        except CompileError as e:
            if isinstance(e, LimitError) or not self.lenient:
                raise
            self.refuse(e.reason, "$ref", place.pointer)
            return None

    # --- branching: anyOf, oneOf, if, dependencies ---------------------------------------------

    def alternatives(self, conj: list[Place]) -> list[Facets]:
        """The conjunction as a union of branch-free constraint sets."""
        key = tuple(p.key for p in conj)
        if key in self._alternatives:
            return self._alternatives[key]
        if key in self._expanding:
            raise _Cyclic()
        pointer = conj[-1].pointer if conj else ""  # the newest conjunct: the branch taken last
        if len(self._expanding) >= MAX_DEPTH:
            raise LimitError("anyOf/oneOf/if/dependencies nest too deeply", pointer=pointer)
        self._expanding.add(key)
        try:
            out = self._expand(conj)
        except RecursionError:  # as in `compile_conj`
            raise LimitError("schema nests too deeply", pointer=pointer) from None
        finally:
            self._expanding.discard(key)
        self._alternatives[key] = out
        return out

    def _expand(self, conj: list[Place]) -> list[Facets]:
        flat = self.flatten(conj)
        if flat is None:
            out: list[Facets] = []
        else:
            facets, branching = flat
            if not branching:
                out = [self.merge(facets)]
            else:
                keyword, owner = branching[0]
                rest = [f.without(keyword) if f.key == owner.key else f for f in facets]
                out = []
                for branch in self.branches(keyword, owner, rest):
                    out.extend(self.alternatives(rest + branch))
                    if len(out) > MAX_ALTERNATIVES:
                        raise LimitError(
                            f"schema expands to more than {MAX_ALTERNATIVES} alternatives",
                            keyword=keyword,
                            pointer=owner.pointer,
                        )
        # A narrowed alternative with no values left may stand for some: kept for the proofs.
        return [f for f in out if f.kinds or f.narrowed]

    def branches(self, keyword: str, owner: Place, rest: list[Place]) -> list[list[Place]]:
        schema = owner.schema
        value = schema[keyword]
        pointer = owner.pointer
        if keyword in ("anyOf", "oneOf"):
            if not isinstance(value, list) or not value:
                raise CompileError(f"{keyword} must be a non-empty array", keyword=keyword, pointer=pointer)
            options = [[self.child(owner, keyword, i)] for i in range(len(value))]
            if keyword == "oneOf":
                return self.exclusive(options, owner, rest)
            return options
        if keyword == "if":
            condition = self.child(owner, "if")
            then = [self.child(owner, "then")] if "then" in schema else []
            otherwise = [self.child(owner, "else")] if "else" in schema else []
            negated = self.negation(condition, 0)
            if negated is not None and not self.exact_negation(condition):
                negated = None
            if negated is None:
                if not then and not otherwise:
                    return [[]]
                self.refuse("cannot decide this 'if' condition soundly", "if", pointer)
                return [[]]
            return [[condition] + then, [negated] + otherwise]
        # dependencies / dependentRequired / dependentSchemas
        if not isinstance(value, dict):
            raise CompileError(f"{keyword} must be an object", keyword=keyword, pointer=pointer)
        if len(value) > MAX_DEPENDENCIES:
            raise LimitError(f"more than {MAX_DEPENDENCIES} dependencies", keyword=keyword, pointer=pointer)
        per_property: list[list[list[Place]]] = []
        for prop, dep in value.items():
            absent = self.fabricate(owner, {"properties": {prop: False}})
            if isinstance(dep, list) and (keyword != "dependentSchemas"):
                if not all(isinstance(d, str) for d in dep):
                    raise CompileError("dependency names must be strings", keyword=keyword, pointer=pointer)
                present = [self.fabricate(owner, {"required": [prop, *dep]})]
            elif isinstance(dep, (dict, bool)) and keyword != "dependentRequired":
                present = [self.fabricate(owner, {"required": [prop]}), self.child(owner, keyword, prop)]
            else:
                raise CompileError(f"invalid {keyword} entry for {prop!r}", keyword=keyword, pointer=pointer)
            per_property.append([[absent], present])
        return [sum(combo, []) for combo in product(*per_property)]

    def exclusive(self, options: list[list[Place]], owner: Place, rest: list[Place]) -> list[list[Place]]:
        """oneOf branches made mutually exclusive. Kinds of value two branches both accept
        entirely are invalid (each such value passes twice) and are removed from every branch;
        what remains must be provably disjoint, else each branch gets the negation of the others;
        an error where neither works."""
        facets = [self.alternatives(rest + o) for o in options]
        everywhere: set[str] = set()
        for kind in _KIND_GROUPS:
            total = sum(1 for fs in facets if any(_accepts_all(f, kind) for f in fs))
            if total >= 2:
                everywhere |= _KIND_GROUPS[kind]
        if everywhere:
            keep = self.fabricate(owner, {ONLY_KINDS: set(KINDS) - everywhere})
            options = [o + [keep] for o in options]
            facets = [self.alternatives(rest + o) for o in options]
        disjoint = all(
            self.disjoint_sets(facets[i], facets[j]) for i in range(len(options)) for j in range(i + 1, len(options))
        )
        if disjoint:
            return options
        negations = [self.negation(o[0], 0) for o in options]
        if all(n is not None for n in negations):
            exclusive = [o + [negations[j] for j in range(len(options)) if j != i] for i, o in enumerate(options)]
            exact = all(self.exact_negation(o[0]) for o in options)
            # A partial negation may only trim a branch, never empty a kind of value from it.
            if exact or all(
                _kinds(self.alternatives(rest + e)) == _kinds(f) for e, f in zip(exclusive, facets)
            ):
                return exclusive
        self.refuse("oneOf branches may overlap (exactly-one can't be enforced)", "oneOf", owner.pointer)
        return options

    # --- negation ---------------------------------------------------------------------------

    def negation(self, place: Place, depth: int) -> Place | None:
        """A place whose values are among those `place` rejects: all of them where
        `exact_negation(place)`, else a subset (what unsupported keywords would reject is left
        out). None where nothing useful can be said."""
        if place.key in self._negations:
            return self._negations[place.key]
        self._negations[place.key] = None  # a cycle through negation is unsupported
        result = self._negate(place, depth)
        self._negations[place.key] = result
        if result is not None and (place.key in self._inexact or place.key in self._narrowing):
            self._narrowed.add(id(result.schema))
        return result

    def exact_negation(self, place: Place) -> bool:
        return place.key in self._negations and self._negations[place.key] is not None and place.key not in self._inexact

    def _nested(self, outer: Place, inner: Place, depth: int) -> Place | None:
        """The negation of `inner`, as part of negating `outer` (inexactness carries over)."""
        negated = self.negation(inner, depth + 1)
        if negated is not None and not self.exact_negation(inner):
            self._inexact.add(outer.key)
        return negated

    def _negate(self, place: Place, depth: int) -> Place | None:
        if depth > MAX_NEGATION_DEPTH:
            return None
        schema = place.schema
        if schema is True:
            return self.fabricate(place, {ONLY_KINDS: set()})
        if schema is False:
            return self.fabricate(place, {})
        if not isinstance(schema, dict):
            return None
        if place.dialect in LEGACY and "$ref" in schema:
            target = self.resolve(place)
            return None if target is None else self._nested(place, target, depth)
        parts: list[dict] = []  # the negation is the union of these
        validators = VALIDATORS[place.dialect]
        typed = "type" in schema and "type" not in place.done
        own_kinds = self.kinds_of(schema["type"], place) if typed else set(KINDS)
        supported = 0
        for keyword, value in schema.items():
            if keyword in place.done or keyword not in validators and not (
                place.dialect == DRAFT4 and keyword in ("exclusiveMinimum", "exclusiveMaximum")
            ):
                continue
            if not _KEYWORD_KINDS.get(keyword, own_kinds) & own_kinds:
                # Only values `type` already rejects could violate it: `type`'s part has them.
                supported += 1
                continue
            negated = self._negate_keyword(place, keyword, value, depth)
            if negated is None:
                # Leaving out this keyword's violations keeps the result inside the negation
                # (sound), if smaller.
                self._inexact.add(place.key)
                continue
            supported += 1
            parts.extend(negated)
        if not supported and any(k in validators for k in schema if k not in place.done):
            return None
        if not parts:
            return self.fabricate(place, {ONLY_KINDS: set()})
        if len(parts) == 1:
            return self.fabricate(place, parts[0])
        return self.fabricate(place, {"anyOf": [self.fabricate(place, p) for p in parts]})

    def _negate_keyword(self, place: Place, keyword: str, value, depth: int) -> list[dict] | None:
        """The negation of one keyword, as a union of schemas (None: not supported). A keyword
        of one type constrains only values of that type, so only they can violate it."""
        if keyword == "type":
            kinds = self.kinds_of(value, place)
            out = set(KINDS) - kinds
            if "int" in kinds and "frac" not in kinds and place.dialect != DRAFT4:
                # 1.0 is an integer there: fractional texts only of values that are not, and
                # not all of those (exponent forms are left out).
                self._narrowing.add(place.key)
                return [{ONLY_KINDS: out, NONINTEGRAL: True}]
            return [{ONLY_KINDS: out}]
        if keyword in ("enum", "const"):
            values = [value] if keyword == "const" else value
            if not isinstance(values, list) or not all(_is_json_value(v) for v in values):
                return None
            return [{NOT_VALUES: list(values)}]
        if keyword == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return None
            return [{ONLY_KINDS: {"object"}, "properties": {name: False}} for name in dict.fromkeys(value)]
        if keyword == "pattern":
            if not isinstance(value, str):
                return None
            return [{ONLY_KINDS: {"string"}, NOT_PATTERN: (value, place.pointer)}]
        if keyword in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return None
            kind = {"L": "string", "I": "array", "P": "object"}[keyword[3]]
            word = keyword[3:]
            if keyword == "maxProperties":  # kept apart: a refusal of the count it gives names it
                return [{ONLY_KINDS: {kind}, NOT_MAX_PROPERTIES: (value, place.pointer)}]
            if keyword.startswith("min"):
                if value == 0:
                    return []  # every value satisfies it
                flipped = {ONLY_KINDS: {kind}, "max" + word: value - 1}
            else:
                flipped = {ONLY_KINDS: {kind}, "min" + word: value + 1}
            return [flipped]
        if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if isinstance(value, bool) and place.dialect == DRAFT4:
                return []  # read by minimum/maximum
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            exclusive = keyword.startswith("exclusive")
            if place.dialect == DRAFT4:
                flag = "exclusiveMinimum" if keyword == "minimum" else "exclusiveMaximum"
                exclusive = place.schema.get(flag) is True
            lower = "inimum" in keyword
            if lower:
                flipped = {"maximum": value} if exclusive else {"exclusiveMaximum": value}
            else:
                flipped = {"minimum": value} if exclusive else {"exclusiveMinimum": value}
            return [{ONLY_KINDS: {"int", "frac"}, **flipped}]
        if keyword == "properties":
            if not isinstance(value, dict):
                return None
            out = []
            for name in value:
                negated = self._nested(place, self.child(place, "properties", name), depth)
                if negated is None:
                    return None
                out.append({ONLY_KINDS: {"object"}, "required": [name], "properties": {name: {ALL: [negated]}}})
            return out
        if keyword == "anyOf":
            if not isinstance(value, list):
                return None
            negs = [self._nested(place, self.child(place, "anyOf", i), depth) for i in range(len(value))]
            if any(n is None for n in negs):
                return None
            return [{ALL: negs}]
        if keyword == "allOf":
            if not isinstance(value, list):
                return None
            negs = [self._nested(place, self.child(place, "allOf", i), depth) for i in range(len(value))]
            if any(n is None for n in negs):
                return None
            return [{ALL: [n]} for n in negs]
        if keyword == "$ref":
            target = self.resolve(place)
            negated = None if target is None else self._nested(place, target, depth)
            return None if negated is None else [{ALL: [negated]}]
        if keyword == "not":
            return [{ALL: [self.child(place, "not")]}]
        if keyword == "oneOf":
            if not isinstance(value, list) or not value or len(value) > MAX_NEGATED_ONE_OF:
                return None
            branches = [self.child(place, "oneOf", i) for i in range(len(value))]
            negs = [self._nested(place, b, depth) for b in branches]
            if any(n is None for n in negs):
                return None
            # None of the branches, or two of them.
            pairs = [{ALL: [branches[i], branches[j]]} for i in range(len(value)) for j in range(i + 1, len(value))]
            return [{ALL: negs}, *pairs]
        if keyword == "if":
            return self._negate_conditional(place, depth)
        if keyword in ("dependentRequired", "dependentSchemas", "dependencies"):
            return self._negate_dependencies(place, keyword, value, depth)
        if keyword in ("prefixItems", "items") and isinstance(value, list):
            if keyword == "items" and place.dialect == DRAFT2020:
                return None
            # Some item the array has is rejected by its position's schema.
            out = []
            for i in range(len(value)):
                negated = self._nested(place, self.child(place, keyword, i), depth)
                if negated is None:
                    return None
                out.append({ONLY_KINDS: {"array"}, "minItems": i + 1, "prefixItems": [True] * i + [{ALL: [negated]}]})
            return out
        if _accepts_anything(keyword, value):
            return []
        if keyword in ("items", "additionalItems") and value is False:
            # Any item past the positions a tuple keyword covers is a violation.
            if keyword == "additionalItems":
                positions = place.schema.get("items")
                if not isinstance(positions, list):
                    return []  # the validator ignores it without a tuple of items
            else:
                positions = place.schema.get("prefixItems", []) if place.dialect == DRAFT2020 else []
            if not isinstance(positions, list):
                return None
            return [{ONLY_KINDS: {"array"}, "minItems": len(positions) + 1}]
        if keyword == "additionalProperties" and value is False:
            names = place.schema.get("properties", {})
            patterns = place.schema.get("patternProperties", {})
            if not isinstance(names, dict) or not isinstance(patterns, dict):
                return None
            return [{ONLY_KINDS: {"object"}, HAS_OTHER_KEY: (frozenset(names), tuple(patterns))}]
        if keyword == "format":
            return None if isinstance(value, str) and is_checked(value, self.root_dialect) else []
        if keyword in ("uniqueItems",) and value is False:
            return []
        return None

    def _negate_conditional(self, place: Place, depth: int) -> list[dict] | None:
        """Values `if`/`then`/`else` reject: the condition holds and `then` fails, or it fails
        and `else` fails (a missing branch rejects nothing)."""
        condition = self.child(place, "if")
        out = []
        if "then" in place.schema:
            then_fails = self._nested(place, self.child(place, "then"), depth)
            if then_fails is None:
                return None
            out.append({ALL: [condition, then_fails]})
        if "else" in place.schema:
            condition_fails = self._nested(place, condition, depth)
            else_fails = self._nested(place, self.child(place, "else"), depth)
            if condition_fails is None or else_fails is None:
                return None
            out.append({ALL: [condition_fails, else_fails]})
        return out

    def _negate_dependencies(self, place: Place, keyword: str, value, depth: int) -> list[dict] | None:
        """Objects that have a property and break what depends on it: lack a property it
        requires, or fail its schema."""
        if not isinstance(value, dict):
            return None
        out = []
        for prop, dep in value.items():
            has = {ONLY_KINDS: {"object"}, "required": [prop]}
            if isinstance(dep, list) and keyword != "dependentSchemas":
                if not all(isinstance(d, str) for d in dep):
                    return None
                out.extend({**has, "properties": {d: False}} for d in dict.fromkeys(dep) if d != prop)
            elif isinstance(dep, (dict, bool)) and keyword != "dependentRequired":
                negated = self._nested(place, self.child(place, keyword, prop), depth)
                if negated is None:
                    return None
                out.append({**has, ALL: [negated]})
            else:
                return None
        return out

    # --- merging one branch -------------------------------------------------------------------

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

    # --- lowering -----------------------------------------------------------------------------

    def any_value(self) -> Node:
        if self._any_value is None:
            ws = self.ws
            value = ref("json-value")
            member = seq(self.json_string(), ws, lit(":"), ws, value)
            obj = seq(lit("{"), ws, opt(seq(member, repeat(seq(ws, lit(","), ws, member), 0, None))), ws, lit("}"))
            arr = seq(lit("["), ws, opt(seq(value, repeat(seq(ws, lit(","), ws, value), 0, None))), ws, lit("]"))
            self.rules["json-object"] = obj
            self.rules["json-array"] = arr
            self.rules["json-value"] = alt(
                ref("json-object"), ref("json-array"), self.json_string(), ANY_NUMBER, lit("true"), lit("false"), lit("null")
            )
            self._any_value = value
        return self._any_value

    def lower(self, f: Facets) -> Node:
        if f.values is not None:
            return self.lower_values(f)
        parts: list[Node] = []
        if "null" in f.kinds and not any(v is None for v in f.not_values):
            parts.append(lit("null"))
        if "boolean" in f.kinds:
            words = [lit(w) for w, v in (("true", True), ("false", False)) if not any(x is v for x in f.not_values)]
            if words:
                parts.append(self.shared(alt(*words), "bool"))
        if "int" in f.kinds or "frac" in f.kinds:
            parts.append(self.shared(self.lower_number(f), "num"))
        if "string" in f.kinds:
            parts.append(self.lower_string(f))
        if "array" in f.kinds:
            parts.extend(self.lower_array(g) for g in self.excluding_containers(f, "array"))
        if "object" in f.kinds:
            parts.extend(self.lower_object(g) for g in self.excluding_containers(f, "object"))
        return alt(*parts)

    # excluded arrays and objects --------------------------------------------------------------

    def excluding_containers(self, f: Facets, kind: str) -> list[Facets]:
        """`f`'s values of `kind` ("array" or "object") less its excluded values of that kind,
        as facets with no such exclusion left: each excluded value splits every piece that may
        hold it into the pieces that differ from it in length, in a key, or at one position."""
        excluded = [v for v in f.not_values if _kind_of(v) == kind]
        pieces = [replace(f, not_values=[v for v in f.not_values if _kind_of(v) != kind])]
        for value in excluded:
            split: list[Facets] = []
            for piece in pieces:
                if self.value_ok(value, piece, 0) is False:
                    split.append(piece)
                elif kind == "array":
                    split.extend(self.arrays_unlike(piece, value))
                else:
                    split.extend(self.objects_unlike(piece, value))
                if len(split) > MAX_ALTERNATIVES:
                    raise LimitError(
                        f"excluding {kind}s splits into more than {MAX_ALTERNATIVES} alternatives",
                        keyword="not", pointer=f.pointer,
                    )
            pieces = split
        return pieces

    def arrays_unlike(self, f: Facets, value: list) -> list[Facets]:
        """The arrays of `f` that differ from `value`: shorter, longer, or of its length with
        some item not equal to its item there."""
        n = len(value)
        anything = self.fabricate_at(f.pointer, {})
        out = [replace(f, min_items=max(f.min_items, n + 1))]
        if n > 0:
            out.append(replace(f, max_items=n - 1 if f.max_items is None else min(f.max_items, n - 1)))
        exact = dict(min_items=max(f.min_items, n), max_items=n if f.max_items is None else min(f.max_items, n))
        for i, item in enumerate(value):
            differs = self.fabricate_at(f.pointer, {NOT_VALUES: [item]})
            out.append(replace(f, arrays=f.arrays + [_ArrayFacet([anything] * i + [differs], None)], **exact))
        return [g for g in out if g.max_items is None or g.min_items <= g.max_items]

    def objects_unlike(self, f: Facets, value: dict) -> list[Facets]:
        """The objects of `f` that differ from `value`: one of its keys missing, all of them and
        one more, or one of its keys with another value."""
        out = [replace(f, required=_added(f.required, value), min_props=max(f.min_props, len(value) + 1))]
        for key, item in value.items():
            if key not in f.required:
                absent = _ObjectFacet({key: self.fabricate_at(f.pointer, False)}, [], None, f.pointer)
                out.append(replace(f, objects=f.objects + [absent]))
            differs = self.fabricate_at(f.pointer, {NOT_VALUES: [item]})
            out.append(replace(f, required=_added(f.required, [key]),
                               objects=f.objects + [_ObjectFacet({key: differs}, [], None, f.pointer)]))
        return [g for g in out if g.max_props is None or g.min_props <= g.max_props]

    # values ---------------------------------------------------------------------------------

    def lower_values(self, f: Facets) -> Node:
        texts: list[Node] = []
        for value in f.values:
            for candidate in _number_spellings(value):
                if self.value_ok(candidate, f, 0) is True:
                    texts.append(self.value_text(candidate))
        return alt(*texts)

    def value_text(self, value) -> Node:
        """The JSON text of one value: compact, object keys in the value's own order (one
        spelling per value keeps the text linear in the value's size; the grammar may accept
        fewer spellings than the validator, never more)."""
        ws = self.ws
        if isinstance(value, dict):
            members = [seq(quoted(k), ws, lit(":"), ws, self.value_text(v)) for k, v in value.items()]
            return seq(lit("{"), ws, _joined(members, seq(ws, lit(","), ws)), ws, lit("}"))
        if isinstance(value, list):
            items = [self.value_text(v) for v in value]
            return seq(lit("["), ws, _joined(items, seq(ws, lit(","), ws)), ws, lit("]"))
        if isinstance(value, str):
            return quoted(value)
        return lit(json.dumps(value))

    def value_ok(self, value, f: Facets, depth: int) -> bool | None:
        """Whether the validator accepts `value` under `f`: True, False, or None where unsure
        (a narrowed `f` may leave out a value the validator accepts)."""
        verdict = self._value_verdict(value, f, depth)
        return None if verdict is False and f.narrowed else verdict

    def _value_verdict(self, value, f: Facets, depth: int) -> bool | None:
        """Whether `f`'s values hold `value`: True, False, or None where unsure."""
        if depth > 20:
            return None
        kind = _kind_of(value)
        if kind == "frac" and value.is_integer() and "int" in f.kinds and f.dialect != DRAFT4:
            kind_ok = True
        else:
            kind_ok = kind in f.kinds
        if not kind_ok:
            return False
        if f.values is not None and not self.among(value, f.values):
            return False
        if f.not_values and self.among(value, f.not_values):
            return False
        if kind == "string":
            if len(value) < f.min_len or (f.max_len is not None and len(value) > f.max_len):
                return False
            if any(not re.search(p, value) for p, _ in f.patterns):
                return False
            if any(re.search(p, value) for p, _ in f.not_patterns):
                return False
            for name, _ in f.formats:
                if not format_automaton(name).matches(value):
                    return None
            return True
        if kind in ("int", "frac"):
            if f.nonintegral and (kind == "int" or value.is_integer()):
                return False
            if not contains_number(value, f.lo, f.hi):
                return False
            return all(value % m == 0 for m in f.multiples)
        verdicts: list[bool | None] = []
        if kind == "array":
            if len(value) < f.min_items or (f.max_items is not None and len(value) > f.max_items):
                return False
            if f.unique is not None and len({json_key(item) for item in value}) < len(value):
                return False
            verdicts = [self.conj_ok(item, self.item_conj(f, i), depth) for i, item in enumerate(value)]
        elif kind == "object":
            if len(value) < f.min_props or (f.max_props is not None and len(value) > f.max_props):
                return False
            if any(name not in value for name in f.required):
                return False
            for names, patterns in f.other_keys:
                if not any(k not in names and not any(re.search(p, k) for p in patterns) for k in value):
                    return False
            for key, item in value.items():
                if f.names:
                    verdicts.append(self.conj_ok(key, f.names, depth))
                verdicts.append(self.conj_ok(item, [p for o in f.objects for p in o.schemas_for(key)], depth))
        return _all(verdicts)

    def among(self, value, values: list) -> bool:
        """Whether `value` equals one of `values` as `enum` compares: a set lookup, the set of
        keys found once per list (and again if the list grew)."""
        entry = self._listed.get(id(values))
        if entry is None or entry[0] is not values or entry[1] != len(values):
            entry = self._listed[id(values)] = (values, len(values), {json_key(v) for v in values})
        return json_key(value) in entry[2]

    def conj_ok(self, value, conj: list[Place], depth: int) -> bool | None:
        if not conj:
            return True  # no constraint: every JSON value
        if any(p.schema is False for p in conj):
            return False
        try:
            return _any(self.value_ok(value, g, depth + 1) for g in self.alternatives(conj))
        except _Cyclic:
            return None

    # --- disjointness (for oneOf) ---------------------------------------------------------------

    def disjoint_sets(self, a: list[Facets], b: list[Facets], depth: int = 0) -> bool:
        """Whether no value satisfies both an alternative of `a` and one of `b` (True only if sure)."""
        try:
            return all(self.disjoint(x, y, depth) for x in a for y in b)
        except _Cyclic:
            return False  # the answer depends on itself: not provably disjoint

    def disjoint(self, a: Facets, b: Facets, depth: int) -> bool:
        if depth > 4 or a.narrowed or b.narrowed:
            return False
        if a.values is not None or b.values is not None:
            listed, other = (a, b) if a.values is not None else (b, a)
            return all(
                self.value_ok(v, other, 0) is False or self.value_ok(v, listed, 0) is False
                for value in listed.values
                for v in _number_spellings(value)
            )
        numeric = {"int", "frac"}
        kinds_a = {("number" if k in numeric else k) for k in a.kinds}
        kinds_b = {("number" if k in numeric else k) for k in b.kinds}
        for kind in kinds_a & kinds_b:
            if kind in ("null", "boolean"):
                return False
            if kind == "number" and not _ranges_disjoint(a, b):
                return False
            if kind == "string" and not (
                (a.max_len is not None and a.max_len < b.min_len) or (b.max_len is not None and b.max_len < a.min_len)
            ):
                return False
            if kind == "array" and not self.arrays_disjoint(a, b, depth):
                return False
            if kind == "object" and not self.objects_disjoint(a, b, depth):
                return False
        return True

    def arrays_disjoint(self, a: Facets, b: Facets, depth: int) -> bool:
        if (a.max_items is not None and a.max_items < b.min_items) or (b.max_items is not None and b.max_items < a.min_items):
            return True
        for i in range(min(a.min_items, b.min_items)):
            ca, cb = self.item_conj(a, i), self.item_conj(b, i)
            if ca and cb and self.disjoint_sets(self.alternatives(ca), self.alternatives(cb), depth + 1):
                return True
        return False

    def objects_disjoint(self, a: Facets, b: Facets, depth: int) -> bool:
        if (a.max_props is not None and a.max_props < b.min_props) or (b.max_props is not None and b.max_props < a.min_props):
            return True
        for x, y in ((a, b), (b, a)):
            for name in x.required:
                conj_y = [p for o in y.objects for p in o.schemas_for(name)]
                if any(p.schema is False for p in conj_y):
                    return True
                if y.names and self.conj_ok(name, y.names, 0) is False:
                    return True
        for x, y in ((a, b), (b, a)):
            for name in x.required:
                cx = [p for o in x.objects for p in o.schemas_for(name)]
                cy = [p for o in y.objects for p in o.schemas_for(name)]
                if cx and cy and self.disjoint_sets(self.alternatives(cx), self.alternatives(cy), depth + 1):
                    return True
        return False

    # numbers --------------------------------------------------------------------------------

    def lower_number(self, f: Facets) -> Node:
        modulus = 1
        for m in f.multiples:
            modulus = modulus * m // math.gcd(modulus, m)
        # Excluded values cut the range into pieces with exclusive ends.
        cuts = sorted({Fraction(v) for v in f.not_values if _kind_of(v) in ("int", "frac")})
        if len(cuts) > MAX_EXCLUDED_NUMBERS:  # each piece costs rules and memory of its own
            raise LimitError(f"{len(cuts)} excluded numbers cut the range into more than {MAX_EXCLUDED_NUMBERS + 1} "
                             "pieces", keyword="not", pointer=f.pointer)
        # Every integer property with the same bounds has the same texts: built once.
        key = (repr(f.lo), repr(f.hi), modulus, tuple(cuts), "int" in f.kinds, "frac" in f.kinds and not f.multiples,
               f.nonintegral)
        found = self._numbers.get(key)
        if found is None:
            try:
                found = self._numbers[key] = self._number_pieces(f, modulus, cuts)
            except LimitError as e:  # the number lowering knows no places: name this one
                if e.pointer is not None:
                    raise
                raise LimitError(e.reason, keyword=e.keyword, pointer=f.pointer) from None
        return found

    def _number_pieces(self, f: Facets, modulus: int, cuts: list[Fraction]) -> Node:
        points: list[Bound | None] = [None]
        points += [Bound(c, True, int(c) if c.denominator == 1 else float(c)) for c in cuts]
        points.append(None)
        pieces = [
            (tighter_lower(f.lo, points[i]), tighter_upper(f.hi, points[i + 1])) for i in range(len(points) - 1)
        ]
        return alt(
            *(
                number_texts(
                    lo,
                    hi,
                    integers="int" in f.kinds and not f.nonintegral,
                    fractions="frac" in f.kinds and not f.multiples,
                    nonintegral=f.nonintegral,
                    modulus=modulus,
                    rule=self.rule,
                    tag=self.name("num"),
                )
                for lo, hi in pieces
            )
        )

    # strings --------------------------------------------------------------------------------

    def lower_string(self, f: Facets) -> Node:
        decoded = self.string_language(f)
        if decoded == _ANY_DECODED:
            return self.json_string()
        return string_text(decoded, self.encoded_rule)

    def json_string(self) -> Node:
        if "json-string" not in self.rules:
            self.rules["json-string"] = ANY_STRING
        return ref("json-string")

    def encoded_rule(self, name: str) -> Node:
        """A rule of JSON string-body texts for a rule of decoded strings."""
        encoded = name + "-json"
        if encoded not in self.rules:
            self.rules[encoded] = NOTHING  # placeholder: the body is encoded by `finish`
            self._to_encode.append(name)
        return ref(encoded)

    def finish(self) -> None:
        """Encode the rules of decoded strings that string texts refer to (iteratively: the
        rules of a long automaton form long chains)."""
        while self._to_encode:
            name = self._to_encode.pop()
            self.rules[name + "-json"] = encode(self.rules[name], self.encoded_rule)

    def regex(self, pattern: str, pointer: str) -> Node | None:
        if pattern not in self._regex:
            try:
                from ._regex import regex_node
            except ImportError:
                self.refuse("pattern needs the regular expression front end, which is not available", "pattern", pointer)
                return None
            try:
                self._regex[pattern] = regex_node(pattern, pointer=pointer)
            except CompileError as e:
                if isinstance(e, LimitError) or not self.lenient:
                    raise type(e)(e.reason, keyword="pattern", pointer=pointer) from None
                self.refuse(e.reason, "pattern", pointer)
                return None
        return self._regex[pattern]

    def string_language(self, f: Facets) -> Node:
        """Decoded strings satisfying `f`'s string keywords, as IR (small automata as rules)."""
        excluded = [v for v in f.not_values if isinstance(v, str)]
        if not f.patterns and not f.formats and not f.not_patterns:
            if not excluded:
                return repeat(ANY_CHAR, f.min_len, f.max_len)
            if (f.min_len, f.max_len) == (0, None):
                return excluding(excluded)
        if len(f.patterns) + len(f.formats) == 1 and not f.not_patterns and not excluded:
            if f.patterns:
                node = self.regex(*f.patterns[0])
            else:
                node = format_language(f.formats[0][0])
            if node is None:
                return repeat(ANY_CHAR, f.min_len, f.max_len)
            lo, hi = _node_lengths(node)
            if lo >= f.min_len and (f.max_len is None or (hi is not None and hi <= f.max_len)):
                return node
            if (hi is not None and hi < f.min_len) or (f.max_len is not None and lo > f.max_len):
                return NOTHING
            bound = max(f.min_len, f.max_len or 0)
            if bound > SMALL_LENGTH or (f.formats and format_automaton(f.formats[0][0]).size * (bound + 1) > EXACT_LENGTH_STATES):
                # A long bound, or a large format: the length spread over the language's parts
                # instead of multiplying automata. Inside language-and-length (sound), if smaller.
                fitted = within(node, f.min_len, f.max_len)
                if fitted is not None:
                    return fitted
        return lang.to_node(self.string_dfa(f), self.rule, self.name("str"))

    def string_dfa(self, f: Facets) -> lang.DFA:
        """The same language as an automaton (for intersections and complements)."""
        longest = f.max_len
        if longest is not None and longest > LENGTH_CAP and f.min_len <= LENGTH_CAP:
            longest = LENGTH_CAP  # strings up to the cap: a sub-language, so still sound
        dfa = lang.lengths(f.min_len, longest)
        for pattern, pointer in f.patterns:
            node = self.regex(pattern, pointer)
            if node is not None:
                dfa = lang.intersect(dfa, lang.from_node(node))
        for name, _ in f.formats:
            dfa = lang.intersect(dfa, format_automaton(name))
        for pattern, pointer in f.not_patterns:
            node = self.regex(pattern, pointer)
            if node is None:
                self.refuse("cannot enforce 'not pattern' without the pattern", "not", pointer)
                continue
            dfa = lang.intersect(dfa, lang.complement(lang.from_node(node)))
        excluded = [v for v in f.not_values if isinstance(v, str)]
        if excluded:
            dfa = lang.intersect(dfa, lang.from_node(excluding(excluded)))
        return dfa

    # arrays ---------------------------------------------------------------------------------

    def item_conj(self, f: Facets, i: int) -> list[Place]:
        conj: list[Place] = []
        for a in f.arrays:
            if i < len(a.prefix):
                conj.append(a.prefix[i])
            elif a.rest is not None:
                conj.append(a.rest)
        return conj

    def lower_array(self, f: Facets) -> Node:
        lo, hi = f.min_items, f.max_items
        if hi is not None and hi < lo:
            return NOTHING
        if f.unique is not None and (hi is None or hi > 1):
            self.refuse("uniqueItems is not supported beyond maxItems 1", "uniqueItems", f.unique)
        n_prefix = max((len(a.prefix) for a in f.arrays), default=0)
        positions = [self.compile_conj(self.item_conj(f, i)) for i in range(n_prefix)]
        rest_conj = [a.rest for a in f.arrays if a.rest is not None]
        rest = self.compile_conj(rest_conj)
        ws = self.ws
        sep = seq(ws, lit(","), ws)

        # Built from the last position in: item i follows i items already written.
        stop = n_prefix if hi is None else min(n_prefix, hi)
        need = max(0, lo - stop)
        most = None if hi is None else hi - stop
        if most == 0:
            items = EMPTY
        elif rest == NOTHING:
            items = EMPTY if need == 0 else NOTHING
        elif stop > 0:
            items = repeat(seq(sep, rest), need, most)
        else:
            items = seq(rest, repeat(seq(sep, rest), max(need - 1, 0), None if most is None else most - 1))
            if need == 0:
                items = opt(items)
        for i in reversed(range(stop)):
            items = seq(sep if i > 0 else EMPTY, positions[i], items)
            if i >= lo:
                items = opt(items)
            if i and i % _POSITIONS_PER_RULE == 0:
                # Each optional position nests the rest: a rule now and then keeps every node
                # shallow (what walks nodes recurses once per level).
                items = self.rule(self.name("items"), items)
        return seq(lit("["), ws, items, ws, lit("]"))

    # objects --------------------------------------------------------------------------------

    def lower_object(self, f: Facets, *, keywords: bool = False) -> Node:
        """An object's JSON text; with `keywords`, its declared members as keyword arguments."""
        ws = self.ws
        declared: list[str] = []
        for o in f.objects:
            for name in o.props:
                if name not in declared:
                    declared.append(name)
        for name in f.required:
            if name not in declared:
                declared.append(name)
        members: list[tuple[str, Node, bool]] = []  # (name, member text, required)
        for name in declared:
            conj = [p for o in f.objects for p in o.schemas_for(name)]
            allowed = not any(p.schema is False for p in conj)
            if allowed and f.names:
                allowed = self.conj_ok(name, f.names, 0) is True
            if not allowed:
                if name in f.required:
                    return NOTHING
                continue
            value = self.compile_conj(conj)
            if value == NOTHING:
                if name in f.required:
                    return NOTHING
                continue
            if keywords:
                if not name.isidentifier():
                    raise CompileError(f"property {name!r} is not an identifier, so it can't be a keyword argument",
                                       keyword="properties", pointer=f"{f.pointer}/properties/{name}")
                members.append((name, seq(lit(name + "="), value), name in f.required))
            else:
                members.append((name, seq(quoted(name), ws, lit(":"), ws, value), name in f.required))
        extras = NOTHING if keywords else self.extra_members(f, declared)
        if len(f.other_keys) > MAX_OTHER_KEY:
            raise LimitError("too many 'some other key' constraints", keyword="additionalProperties", pointer=f.pointer)
        others = [
            (frozenset(n for n, _, _ in members if n not in names and not any(re.search(p, n) for p in patterns)),
             not patterns and names <= set(declared))
            for names, patterns in f.other_keys
        ]
        if keywords:
            return self.member_list(members, extras, f.min_props, f.max_props, f.pointer, others, sep=PYTHON_COMMA,
                                    lo_at=f.min_props_at)
        body = self.member_list(members, extras, f.min_props, f.max_props, f.pointer, others, lo_at=f.min_props_at)
        return seq(lit("{"), ws, body, ws, lit("}"))

    def extra_members(self, f: Facets, declared: list[str]) -> Node:
        """One member whose key is not declared: its key language and value, by pattern region."""
        ws = self.ws
        patterns = [(pat, place, i) for i, o in enumerate(f.objects) for pat, place in o.patterns]
        names_language = self.names_dfa(f)
        if len(patterns) > MAX_PATTERN_SUBSETS:
            self.refuse("too many patternProperties to partition keys", "patternProperties", f.pointer)
            patterns = []
        regions: list[tuple[list[int], list[Place]]] = []
        for mask in range(1 << len(patterns)):
            inside = [k for k in range(len(patterns)) if mask >> k & 1]
            conj = [patterns[k][1] for k in inside]
            for i, o in enumerate(f.objects):
                if not any(patterns[k][2] == i for k in inside) and o.additional is not None:
                    conj.append(o.additional)
            if any(p.schema is False for p in conj):
                continue
            regions.append((inside, conj))
        out: list[Node] = []
        for inside, conj in regions:
            value = self.compile_conj(conj)
            if value == NOTHING:
                continue
            if not patterns and names_language is None:
                names_key = frozenset(declared)
                if names_key not in self._exclusions:
                    self._exclusions[names_key] = excluding_text(declared, self.rule, self.name("key"))
                key_text = self._exclusions[names_key]
            else:
                key = self.key_language(patterns, inside, declared, names_language, f.pointer)
                if key is NOTHING:
                    continue
                key_text = string_text(key, self.encoded_rule)
            out.append(self.rule(self.name("extra"), seq(key_text, ws, lit(":"), ws, value)))
        return alt(*out)

    def names_dfa(self, f: Facets) -> lang.DFA | None:
        """Decoded key strings `propertyNames` allows, as an automaton (None: any)."""
        if not f.names:
            return None
        dfa = lang.literal_set([])
        for g in self.alternatives(f.names):
            if "string" not in g.kinds:
                continue
            if g.values is not None:
                keys = [v for v in g.values if isinstance(v, str) and self.value_ok(v, g, 0)]
                part = lang.literal_set(keys)
            else:
                part = self.string_dfa(g)
            dfa = lang.union(dfa, part)
        return dfa

    def key_language(self, patterns, inside: list[int], declared: list[str], names: lang.DFA | None, pointer: str) -> Node:
        outside = [k for k in range(len(patterns)) if k not in inside]
        positive = []
        for k in inside:
            node = self.regex(patterns[k][0], pointer)
            if node is None:
                return NOTHING
            positive.append(node)
        # Fast paths with no automaton.
        if not outside and names is None:
            if not positive:
                return excluding(declared)
            if len(positive) == 1 and not any(re.search(patterns[inside[0]][0], d) for d in declared):
                return positive[0]
        dfa = lang.from_node(excluding(declared))
        for node in positive:
            dfa = lang.intersect(dfa, lang.from_node(node))
        for k in outside:
            node = self.regex(patterns[k][0], pointer)
            if node is None:
                return NOTHING
            dfa = lang.intersect(dfa, lang.complement(lang.from_node(node)))
        if names is not None:
            dfa = lang.intersect(dfa, names)
        return lang.to_node(dfa, self.rule, self.name("key"))

    def member_list(
        self,
        members: list[tuple[str, Node, bool]],
        extra: Node,
        lo: int,
        hi: int | None,
        pointer: str,
        others: list[tuple[frozenset[str], bool]] = (),
        sep: Node | None = None,
        lo_at: tuple[str, str] | None = None,
    ) -> Node:
        """Declared members in order (optional ones skippable), then extra members, with the
        member count in lo..hi and `sep` (a comma) only between members. Each of `others`
        (names, extras count) asks for a member named in `names`, or an extra one where
        `extras count`. `lo_at` is the keyword and pointer `lo` came from (minProperties at
        `pointer` unless told)."""
        if sep is None:
            sep = seq(self.ws, lit(","), self.ws)
        n = len(members)
        if (hi is not None and hi < lo) or (extra == NOTHING and lo > n):
            return NOTHING
        # Two extra members may spell the same key (`{"a":1,"a":2}` parses to one member), and
        # no grammar here tells keys apart: where extra members would have to make up two or
        # more of minProperties, it is refused. Lenient, the validator checks it after decoding
        # and the grammar still asks for that many members (up to a bound), keys alike or not.
        required = sum(1 for _, _, r in members if r)
        repeats_allowed = False
        if extra != NOTHING and lo - required > 1:
            keyword, at = lo_at or ("minProperties", pointer)
            self.refuse("extra members may spell the same key, so the grammar cannot count "
                        f"{lo - required} distinct ones", keyword, at)
            repeats_allowed = True
            lo = min(lo, required + MAX_UNCOUNTED_EXTRAS)
        cap = max(lo, 1) if hi is None else hi
        if (n + 1) * (cap + 1) * (1 << len(others)) > MAX_COUNT_STATES:
            # Name the larger of the two factors: the properties, or the count bound.
            if n >= cap:
                raise LimitError(f"{n} properties are too many to count the members written over "
                                 f"(properties times counts past {MAX_COUNT_STATES})", keyword="properties",
                                 pointer=pointer)
            keyword = "maxProperties" if hi is not None else "minProperties"
            raise LimitError(f"{keyword} {cap} is too many members to count over {n} properties "
                             f"(properties times counts past {MAX_COUNT_STATES})", keyword=keyword, pointer=pointer)
        tag = self.name("obj")
        shared = n > 3

        def extras(count: int, unmet: frozenset[int]) -> Node:
            need = max(0, lo - count)
            if need > 1 and not repeats_allowed:  # no members to count them with (see above)
                return NOTHING
            if unmet:
                if not all(others[k][1] for k in unmet):
                    return NOTHING
                need = 1
            most = None if hi is None else hi - count
            if most is not None and most < need:
                return NOTHING
            if extra == NOTHING:
                return EMPTY if need == 0 else NOTHING
            if count > 0:
                return repeat(seq(sep, extra), need, most)
            if most == 0:
                return EMPTY
            first = seq(extra, repeat(seq(sep, extra), max(need - 1, 0), None if most is None else most - 1))
            return first if need > 0 else opt(first)

        if all(required for _, _, required in members):
            # One path, with no member to skip: the members in order, then the extra ones.
            parts: list[Node] = []
            unmet = frozenset(range(len(others)))
            for count, (name, text, _) in enumerate(members):
                if hi is not None and count + 1 > hi:
                    return NOTHING
                parts.extend((sep, text) if count else (text,))
                unmet = frozenset(k for k in unmet if name not in others[k][0])
            return seq(*parts, extras(n, unmet))

        # Position i with c members written so far (capped: past `cap` counts behave alike) and
        # `unmet` groups still wanting a member. Where each state goes (with the member written,
        # or without it) is found from the first position on, then the nodes from the last back:
        # a loop, not a recursion, as objects with thousands of optional members exist.
        start = (0, frozenset(range(len(others))))
        levels: list[dict[tuple[int, frozenset[int]], tuple]] = []  # state -> (written, skipped)
        here = {start}
        for name, _, required in members:
            moves = {}
            for c, unmet in here:
                written = None
                if hi is None or c + 1 <= hi:
                    written = (min(c + 1, cap), frozenset(k for k in unmet if name not in others[k][0]))
                moves[(c, unmet)] = (written, None if required else (c, unmet))
            levels.append(moves)
            here = {nxt for pair in moves.values() for nxt in pair if nxt is not None}
        built = {key: extras(key[0], key[1]) for key in here}
        for i in reversed(range(n)):
            text = members[i][1]
            nodes: dict[tuple[int, frozenset[int]], Node] = {}
            for (c, unmet), (written, skipped) in levels[i].items():
                node = NOTHING if written is None else seq(sep if c > 0 else EMPTY, text, built[written])
                if skipped is not None:
                    node = alt(node, built[skipped])
                if shared:
                    node = self.rule(f"{tag}-{i}-{c}-{'.'.join(map(str, sorted(unmet)))}", node)
                nodes[(c, unmet)] = node
            built = nodes
        return built[start]


# --- helpers ----------------------------------------------------------------------------------------


def _bad(message: str, keyword: str, pointer: str):
    raise CompileError(message, keyword=keyword, pointer=pointer)


def _count(value, keyword: str, pointer: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CompileError(f"{keyword} must be a non-negative integer", keyword=keyword, pointer=pointer)
    return value


def _check_regex(pattern: str, keyword: str, pointer: str) -> None:
    if not isinstance(pattern, str):
        raise CompileError("a pattern must be a string", keyword=keyword, pointer=pointer)
    from ._regex import check_pattern

    try:
        check_pattern(pattern)
    except CompileError as e:
        raise type(e)(e.reason, keyword=keyword, pointer=pointer) from None


def _has_inline_flags(pattern: str) -> bool:
    return re.search(r"\(\?[aiLmsux]+\)", pattern) is not None


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


def _added(names: list[str], more) -> list[str]:
    return names + [n for n in more if n not in names]


def _joined(items: list[Node], sep: Node) -> Node:
    if not items:
        return EMPTY
    out = [items[0]]
    for item in items[1:]:
        out.extend((sep, item))
    return seq(*out)


def _size(node: Node) -> int:
    count = 0
    for _ in walk(node):
        count += 1
        if count > 1000:
            break
    return count


def _all(verdicts) -> bool | None:
    """Three-valued and: False if any is False, else None if any is unsure."""
    verdicts = list(verdicts)
    if any(v is False for v in verdicts):
        return False
    return None if any(v is None for v in verdicts) else True


def _any(verdicts) -> bool | None:
    verdicts = list(verdicts)
    if any(v is True for v in verdicts):
        return True
    return None if any(v is None for v in verdicts) else False


_KIND_GROUPS = {
    "null": {"null"},
    "boolean": {"boolean"},
    "number": {"int", "frac"},
    "string": {"string"},
    "array": {"array"},
    "object": {"object"},
}


def _kinds(alternatives: list[Facets]) -> set[str]:
    return set().union(*(f.kinds for f in alternatives)) if alternatives else set()


def _accepts_all(f: Facets, kind: str) -> bool:
    """Whether `f` accepts every value of a kind (so two such oneOf branches clash on all)."""
    if not _KIND_GROUPS[kind] <= f.kinds or f.values is not None:
        return False
    if any(_kind_of(v) in _KIND_GROUPS[kind] or (kind == "number" and _kind_of(v) == "int") for v in f.not_values):
        return False
    if kind == "string":
        return f.min_len == 0 and f.max_len is None and not f.patterns and not f.formats and not f.not_patterns
    if kind == "number":
        return f.lo is None and f.hi is None and not f.multiples and not f.nonintegral
    if kind == "array":
        return (
            f.min_items == 0 and f.max_items is None and f.unique is None
            and all(a.rest is None or a.rest.schema is True and not a.prefix for a in f.arrays)
            and all(not a.prefix for a in f.arrays)
        )
    if kind == "object":
        return (
            not f.objects and not f.required and not f.names and f.min_props == 0 and f.max_props is None
            and not f.other_keys
        )
    return True


def _ranges_disjoint(a: Facets, b: Facets) -> bool:
    for low, high in ((a.lo, b.hi), (b.lo, a.hi)):
        if low is not None and high is not None:
            if low.value > high.value or (low.value == high.value and (low.exclusive or high.exclusive)):
                return True
    return False

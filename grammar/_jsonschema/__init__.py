"""JSON Schema -> grammar IR, sound against the `jsonschema` validator.

The validator is the meaning: `validator_for(schema, default=Draft202012Validator)(schema,
format_checker=<that class's FORMAT_CHECKER>)`. Every text the grammar accepts parses to a value
that validator accepts; a keyword that cannot be enforced so is a `CompileError` naming the keyword
and its JSON pointer (or, with `lenient=True`, dropped and listed on `Grammar.dropped`).

How a schema becomes rules, in two passes, room by room (each module one job; `compiler`
composes them): refs → expand/negate/merge → facet graph → lower, each conjunction once.
- `graph`: the first pass: a worklist takes each *conjunction* of subschemas (a list of
  `Place`s) reachable from the root once, expands and merges it, and queues the conjunctions its
  items and members must satisfy: a graph of facets;
- `compiler`: the entry, and the second pass: the graph lowered to one memoized rule per
  conjunction, so `$ref` cycles become recursive rules;
- `expansion`: `$ref`, `allOf` and `not` expanded into more conjuncts; `anyOf`, `oneOf`, `if` and
  dependencies branched, each branch a conjunction of the rest with one alternative;
- `negation`: `not`, the `else` side of `if` and the other branches of a `oneOf` that can't be
  proved disjoint, built keyword by keyword as the union of each keyword's violations (where a
  keyword's violations can't be built, a `CompileError`, never a looser grammar);
- `facets`: a conjunction without branches merged into one `Facets` record of per-type constraints;
- `proofs`: what a merged record says of a value, and whether two records share none;
- `lowering`, `lower_strings`, `lower_containers`: a record lowered to text by type: numbers as
  digit automata, strings through the JSON-escaping homomorphism, arrays by position, objects in
  declared property order;
- `context`: the rules table, names, notes of what was dropped or ignored; `limits` and
  `vocabulary` (the dialects' keywords and the compiler's internal ones), `values` (JSON value
  semantics) and `helpers` beside them.
"""

from __future__ import annotations

import json
from typing import Sequence

from .._errors import CompileError, LimitError
from .._grammar import Grammar
from .._timing import logged_compile, schema_size
from .compiler import _Compiler
from .form import Form, json_form
from .grounding import GroundedField, Grounding
from .limits import MAX_INTEGER_DIGITS
from .refs import escape_token
from .vocabulary import PYTHON_COMMA

__all__ = ["PYTHON_COMMA", "Form", "GroundedField", "Grounding", "any_json", "from_json_schema", "json_form",
           "keyword_arguments"]


def any_json(*, whitespace: int | None = None, separators: Sequence[str] | None = None) -> Grammar:
    """Any JSON value, in the form `from_json_schema` writes."""
    return from_json_schema(True, whitespace=whitespace, separators=separators)


@logged_compile("json-schema", schema_size)
def from_json_schema(
    schema: dict | bool | str, *, lenient: bool = False, whitespace: int | None = None,
    separators: Sequence[str] | None = None, grounding: Grounding | None = None,
) -> Grammar:
    """The grammar of the JSON texts of the values `schema` accepts.

    `schema` may be JSON text. Output is compact JSON (`{"a":1,"b":[2,3]}`) unless `whitespace`
    allows up to that many blanks around every token, or `separators` fixes the text between
    tokens as `json.dumps` takes it: `(", ", ": ")` is `json.dumps`'s own form, `{"a": 1,
    "b": [2, 3]}` (each separator is its `,` or `:` with JSON blanks around it; nothing follows
    `{`/`[` or comes before `}`/`]`). Objects keep the schema's property order (optional ones
    may be skipped; extra keys, where allowed, follow the declared ones).

    With `grounding`, each subschema that says `"grounded": true` holds its strings to spans of
    `grounding.source` and its numbers to the numbers it writes, within the subschema's own
    constraints; a field that cannot be so held keeps its plain grammar. `Grammar.grounding`
    says, per place, which (`GroundedField`).
    """
    source = "json-schema"
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise CompileError(f"schema is not valid JSON: {e}", keyword="$schema", pointer="") from None
        except RecursionError:  # the decoder's own depth bound
            raise LimitError("schema text nests too deeply to parse", pointer="") from None
    if grounding is not None and not isinstance(grounding, Grounding):
        raise CompileError(f"grounding must be a Grounding, not {type(grounding).__name__}", keyword="grounding")
    compiler = _compiler_for(schema, lenient, whitespace, separators, grounding)
    root = compiler.compile_root()
    return Grammar(
        compiler.rules | {"root": root},
        "root",
        dropped=tuple(compiler.dropped),
        ignored=tuple(compiler.ignored),
        source=source,
        schema=schema,
        grounding=tuple(compiler.grounded_fields),
    )


def keyword_arguments(schema: dict | bool, *, lenient: bool = False, whitespace: int | None = None,
                      separators: Sequence[str] | None = None, grounding: Grounding | None = None) -> Grammar:
    """The grammar of an object schema's values written as Python keyword arguments,
    `name=value, name=value` (values in JSON, in the form `from_json_schema` writes; the comma
    between arguments may take one space): the body of a call `f(...)`. Only declared
    properties can be written. `grounding` as for `from_json_schema`."""
    compiler = _compiler_for(schema, lenient, whitespace, separators, grounding)
    root = compiler.compile_keywords()
    return Grammar(compiler.rules | {"root": root}, "root", dropped=tuple(compiler.dropped),
                   ignored=tuple(compiler.ignored), source="keyword-arguments",
                   grounding=tuple(compiler.grounded_fields))


def _compiler_for(schema, lenient: bool, whitespace: int | None, separators: Sequence[str] | None,
                  grounding: Grounding | None = None) -> _Compiler:
    """A compiler for a parsed schema, its arguments checked."""
    if not isinstance(schema, (dict, bool)):
        raise CompileError("a schema must be an object or a boolean", pointer="")
    form = json_form(whitespace, separators)
    _check_integers(schema)
    return _Compiler(schema, lenient=lenient, form=form, grounding=grounding)


def _check_integers(schema) -> None:
    """Refuse a schema holding an integer too long to print (a bound or a value), naming where
    it stands. A loop, not a recursion, over the whole document: schemas nest deep. Each
    container is read once, at the first place found: a document built in Python may hold one
    object in many places (the same subschema as each of 2,500 properties, nested), which a
    walk of every place would read exponentially often."""
    largest = 10**MAX_INTEGER_DIGITS
    steps: list[tuple[int, str | int]] = [(-1, "")]  # (parent step, key): each container's place
    todo: list[tuple[object, int]] = [(schema, 0)]
    seen: set[int] = set()
    while todo:
        value, at = todo.pop()
        if isinstance(value, (dict, list)):
            if id(value) in seen:
                continue
            seen.add(id(value))
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

"""The check after decoding: a decoded value against its JSON Schema, by the `jsonschema` package.

The grammar enforces most of a schema while decoding; what a lenient compile drops is checked
here once the value is complete. The dialect is the one the schema's `$schema` names (2020-12
when it names none), with that dialect's format checker. Building a validator costs far more
than a check, so one is built per schema and kept by its owner (a tool, an output type).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from . import deferred_iri as _deferred_iri

_deferred_iri.defer()  # before jsonschema's format checkers are imported

from jsonschema import Draft3Validator, Draft202012Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for

from .schema import escape, pointer, subschemas

SPEC_FORMATS = frozenset({
    "date", "time", "date-time", "duration", "uuid", "ipv4", "ipv6", "email", "idn-email",
    "hostname", "idn-hostname", "uri", "uri-reference", "iri", "iri-reference", "uri-template",
    "json-pointer", "relative-json-pointer", "regex",
})
"""The formats the JSON Schema specification defines; any other format name is an annotation
with no effect on validity."""


@dataclass(frozen=True)
class Problem:
    """One failed keyword: `path` in the instance, `pointer` of the keyword in the schema;
    `causes`, for a combinator none of whose alternatives fits, what each alternative failed."""

    path: str
    keyword: str
    pointer: str
    message: str
    causes: tuple[Problem, ...] = ()


def field_path(path: str, key: str | int) -> str:
    """A readable path into a value: ``address.zip``, ``tags[2]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class SchemaValidator:
    """A schema's validator: `problems(value)` lists what the value fails, each with its field."""

    def __init__(self, schema: dict[str, Any] | bool):
        dialect = _dialect(validator_for(schema, default=Draft202012Validator))
        self.schema = schema
        self.formats: frozenset[str] = frozenset(dialect.FORMAT_CHECKER.checkers)
        self._validator: Validator = dialect(schema, format_checker=dialect.FORMAT_CHECKER)
        self._pointers = _subschema_pointers(schema)

    def checks(self, keyword: str, value: Any = None) -> bool:
        """Whether a `keyword` with this `value` is checked here: every keyword is, but for a
        format the specification defines and this dialect's checker lacks, and a `$ref` to a
        document other than the schema itself."""
        if keyword == "format":
            return not isinstance(value, str) or value in self.formats or value not in SPEC_FORMATS
        if keyword == "$ref":
            return not isinstance(value, str) or value.startswith("#")
        return True

    def problems(self, instance: Any) -> list[Problem]:
        """Every keyword of the schema that `instance` fails (empty when it is valid)."""
        return [p for error in self._validator.iter_errors(instance) for p in self._problems(error)]

    def _problems(self, error: ValidationError) -> list[Problem]:
        path = ""
        for key in error.absolute_path:
            path = field_path(path, key)
        keyword = str(error.validator) if error.validator is not None else "false"
        where = self._pointers.get(id(error.schema))
        if where is None:  # a boolean subschema: only the keyword above it is known
            where = pointer(tuple(str(k) for k in error.absolute_schema_path)[:-1])
        at = f"{where}/{escape(keyword)}"
        if keyword in ("anyOf", "oneOf") and error.context:
            return _no_alternative(Problem(path, keyword, at, error.message), self._alternatives(error))
        return [Problem(path, keyword, at, error.message)]

    def _alternatives(self, error: ValidationError) -> list[list[Problem]]:
        """A failed combinator's sub-errors, grouped per alternative."""
        failures: dict[Any, list[Problem]] = {}
        for sub in error.context or ():
            # A `false` alternative's error carries no schema path: it is an alternative of its own.
            where = sub.relative_schema_path[0] if sub.relative_schema_path else object()
            failures.setdefault(where, []).extend(self._problems(sub))
        return list(failures.values())


def _no_alternative(whole: Problem, failures: list[list[Problem]]) -> list[Problem]:
    """When only one alternative has the value's kind (`Optional[Model]` given an object), its
    own failures say what is wrong; otherwise the combinator fails as a whole."""
    near = [f for f in failures if not any(p.path == whole.path and p.keyword in ("type", "const", "enum") for p in f)]
    if len(near) == 1:
        return near[0]
    return [Problem(whole.path, whole.keyword, whole.pointer, whole.message, tuple(p for f in failures for p in f))]


def _subschema_pointers(schema: Any) -> dict[int, str]:
    """id of each object subschema -> its JSON pointer, so an error can name where its keyword
    stands (a `$ref`'s target is an object of the same schema)."""
    found: dict[int, str] = {}
    todo: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    while todo:
        node, parts = todo.pop()
        if not isinstance(node, dict) or id(node) in found:
            continue
        found[id(node)] = pointer(parts)
        todo.extend((sub, parts + below) for below, sub in subschemas(node))
    return found


# --- keywords that name a missing key: the error's path is that key, as for any other field ---


def _required(validator: Any, names: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "object"):
        yield from _missing(names, instance, "is a required property")


def _dependent_required(validator: Any, deps: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "object"):
        for key, needs in deps.items():
            if key in instance:
                yield from _missing(needs, instance, f"is a dependency of {key!r}")


def _dependencies(validator: Any, deps: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for key, dep in deps.items():
        if key not in instance:
            continue
        if validator.is_type(dep, "array"):
            yield from _missing(dep, instance, f"is a dependency of {key!r}")
        else:
            yield from validator.descend(instance, dep, schema_path=key)


def _missing(names: Iterable[Any], instance: dict[str, Any], why: str) -> Iterator[ValidationError]:
    for name in names:
        if name not in instance:
            yield ValidationError(f"{name!r} {why}", path=[name])


_MISSING_KEY_KEYWORDS = {"required": _required, "dependentRequired": _dependent_required, "dependencies": _dependencies}


@functools.cache
def _dialect(cls: type[Validator]) -> Any:
    """`cls` with the missing-key keywords above in place of its own (those it has; draft 3's
    differ, and are left as they are)."""
    if cls is Draft3Validator:
        return cls
    own = {k: fn for k, fn in _MISSING_KEY_KEYWORDS.items() if k in cls.VALIDATORS}
    return extend(cls, validators=own)  # type: ignore[no-untyped-call]  # untyped in its stubs

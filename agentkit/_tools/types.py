"""Python types made ready for pydantic, and refused where their JSON Schema would not say what
the validator checks (so the grammar built from the schema and the validator cannot drift)."""

from __future__ import annotations

import collections.abc
import enum
import functools
import sys
import types
import typing
from typing import Any

import typing_extensions


class UnsupportedType(TypeError):
    """A type with no faithful JSON Schema; the message says why."""


_REFUSED = {
    complex: "complex numbers have no JSON form the schema can describe",
    bytearray: "raw bytes have no JSON form",
    memoryview: "raw bytes have no JSON form",
}


def prepare(tp: Any) -> Any:
    """`tp` with every `typing.TypedDict` rebuilt as `typing_extensions.TypedDict` (pydantic
    needs that on Python < 3.12), after checking that each part has a faithful schema."""
    return _prepare(tp)


def _prepare(tp: Any) -> Any:
    if isinstance(tp, type) and tp in _REFUSED:
        raise UnsupportedType(f"{_name(tp)}: {_REFUSED[tp]}")
    if _is_typing_typeddict(tp):
        return _rebuild_typeddict(tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is None or origin is typing.Literal or not args:
        return tp
    if origin is typing.Annotated:
        return typing.Annotated[(_prepare(args[0]), *tp.__metadata__)]
    if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        _check_key(args[0])
    new = tuple(a if a is Ellipsis else _prepare(a) for a in args)
    if new == args:
        return tp
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[new]
    return origin[new]


def _check_key(key: Any) -> None:
    if typing.get_origin(key) is typing.Annotated:
        key = typing.get_args(key)[0]
    if key is str or key is Any:
        return
    if typing.get_origin(key) is typing.Literal and all(isinstance(v, str) for v in typing.get_args(key)):
        return
    if isinstance(key, type) and issubclass(key, enum.Enum) and all(isinstance(m.value, str) for m in key):
        return
    raise UnsupportedType(
        f"dict keys of type {_name(key)}: JSON object keys are strings; use dict[str, ...] "
        "(or a Literal / Enum of strings)"
    )


def _is_typing_typeddict(tp: Any) -> bool:
    """A `typing.TypedDict` class, which pydantic refuses before Python 3.12."""
    return sys.version_info < (3, 12) and type(tp) is getattr(typing, "_TypedDictMeta", None)


_REBUILDING: set[type] = set()


@functools.lru_cache(maxsize=None)
def _rebuild_typeddict(tp: type) -> type:
    if tp in _REBUILDING:
        raise UnsupportedType(
            f"recursive typing.TypedDict {tp.__name__}: declare it with typing_extensions.TypedDict"
        )
    _REBUILDING.add(tp)
    try:
        return _rebuilt(tp)
    finally:
        _REBUILDING.discard(tp)


def _rebuilt(tp: type) -> type:
    hints = typing.get_type_hints(tp, include_extras=True)
    required = getattr(tp, "__required_keys__", frozenset(hints))
    fields = {}
    for key, hint in hints.items():
        hint = _strip_required(hint)
        wrap = typing_extensions.Required if key in required else typing_extensions.NotRequired
        fields[key] = wrap[_prepare(hint)]
    rebuilt = typing_extensions.TypedDict(tp.__name__, fields)  # type: ignore[operator]
    rebuilt.__doc__ = tp.__doc__
    rebuilt.__module__ = tp.__module__
    return rebuilt


def _strip_required(hint: Any) -> Any:
    while typing.get_origin(hint) in (
        typing.Required,
        typing.NotRequired,
        typing_extensions.Required,
        typing_extensions.NotRequired,
    ):
        hint = typing.get_args(hint)[0]
    return hint


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)

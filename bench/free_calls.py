"""Tool calls read out of a model's free (unconstrained) answer, in every form models write them.

The free run is the benchmark's baseline, so its parser must not be the reason it fails: a call
counts however the model spelled it. Forms taken: `<tool_call>` tags (hermes), code fences,
a bare JSON call or a list of calls, the OpenAI wrappers (`{"type": "function", "function":
{...}}`, `{"tool_calls": [...]}`), `arguments`/`parameters`/`args` (as an object or a JSON
string), `{"<tool name>": {...arguments}}`, Python-literal dicts (single quotes, `True`), and
Python call syntax (`f(a=1)`, `[f(a=1), g(b=2)]`, dotted names, positional arguments mapped to
the declared parameter order, JSON's `true`/`false`/`null` inside).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

Call = dict[str, Any]
Parameters = Mapping[str, Sequence[str]]
"""Tool name -> its parameter names in declared order."""

_MARKUP = re.compile(r"```[\w-]*|</?tool_call>|</?function_call>")
_NAME_KEYS = ("name", "function", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args")
_WRAPPER_KEYS = ("tool_calls", "calls", "function_calls")
_CALL_START = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\s*\(")
_JSON_NAMES = {"true": True, "false": False, "null": None, "none": None}


def parse_free_calls(text: str, parameters: Parameters | None = None) -> list[Call]:
    """The calls in `text` as `{"name", "arguments"}` dicts, in order; empty when none is found.

    `parameters` (the tools on offer) lets a `{"<tool name>": {...}}` object and positional
    Python arguments be read; Python call syntax is then read only for those tool names."""
    body = _MARKUP.sub("\n", text)
    return _object_calls(body, parameters or {}) or _python_calls(body, parameters)


# --- JSON (or Python-literal) objects -------------------------------------------------------------


def _object_calls(text: str, parameters: Parameters) -> list[Call]:
    calls: list[Call] = []
    pos = 0
    while (start := _next_bracket(text, pos)) is not None:
        decoded = _decode_at(text, start)
        if decoded is None:
            pos = start + 1
            continue
        value, end = decoded
        found = list(_calls_in(value, parameters))
        if found or not isinstance(value, dict):
            calls += found
            pos = end
        else:  # an object that is not a call may still hold calls further in
            pos = start + 1
    return calls


def _next_bracket(text: str, pos: int) -> int | None:
    found = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
    return min(found) if found else None


def _decode_at(text: str, start: int) -> tuple[Any, int] | None:
    """The JSON value starting at `start` and where it ends, else the shortest Python literal."""
    try:
        return json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError:
        pass
    closer = "}" if text[start] == "{" else "]"
    end = text.find(closer, start)
    while end >= 0:
        try:
            return _literal(ast.parse(text[start:end + 1], mode="eval").body), end + 1
        except (SyntaxError, ValueError, TypeError, RecursionError):
            end = text.find(closer, end + 1)
    return None


def _calls_in(value: Any, parameters: Parameters) -> Iterator[Call]:
    if isinstance(value, list):
        for item in value:
            yield from _calls_in(item, parameters)
        return
    if not isinstance(value, dict):
        return
    for key in _WRAPPER_KEYS:
        if isinstance(value.get(key), list):
            yield from _calls_in(value[key], parameters)
            return
    if isinstance(value.get("function"), dict):  # OpenAI's {"type": "function", "function": {...}}
        yield from _calls_in(value["function"], parameters)
        return
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if name is not None:
        arguments: Any = next((value[k] for k in _ARGUMENT_KEYS if k in value), {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                return
        if isinstance(arguments, dict):
            yield {"name": name, "arguments": arguments}
        return
    if len(value) == 1:
        [(key, arguments)] = value.items()
        if key in parameters and isinstance(arguments, dict):
            yield {"name": key, "arguments": arguments}


# --- Python call syntax ---------------------------------------------------------------------


def _python_calls(text: str, parameters: Parameters | None) -> list[Call]:
    calls: list[Call] = []
    pos = 0
    while match := _CALL_START.search(text, pos):
        parsed = _call_at(text, match.start(), parameters)
        if parsed is None:
            pos = match.end()  # look inside: `print(f(a=1))` still holds `f(a=1)`
        else:
            calls.append(parsed[0])
            pos = parsed[1]
    return calls


def _call_at(text: str, start: int, parameters: Parameters | None) -> tuple[Call, int] | None:
    """The call whose text starts at `start` (closed by the first `)` that makes it parse)."""
    end = text.find(")", start)
    while end >= 0:
        try:
            node = ast.parse(text[start:end + 1], mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            end = text.find(")", end + 1)
            continue
        call = _as_call(node, parameters) if isinstance(node, ast.Call) else None
        return (call, end + 1) if call is not None else None
    return None


def _as_call(node: ast.Call, parameters: Parameters | None) -> Call | None:
    try:
        name = ast.unparse(node.func)
        arguments = {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg}
        positional = [_literal(a) for a in node.args]
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
    if parameters is not None and name not in parameters:
        return None
    if positional:
        names = list(parameters[name]) if parameters is not None else []
        if len(positional) > len(names):
            return None
        arguments = {**dict(zip(names, positional, strict=False)), **arguments}
    return {"name": name, "arguments": arguments}


class _JsonNames(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id.lower() in _JSON_NAMES:
            return ast.Constant(_JSON_NAMES[node.id.lower()])
        return node


def _literal(node: ast.AST) -> Any:
    """A Python literal's value, JSON's `true`/`false`/`null` taken as Python's."""
    return ast.literal_eval(_JsonNames().visit(node))

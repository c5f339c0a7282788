"""Tool-call grammars: each tool name bound to its own argument shape.

A call is `{"name":<one tool name>,"arguments":<that tool's arguments>}`, so a call naming one
tool can never borrow another tool's arguments. With `envelope="hermes"` each call is wrapped
in `<tool_call>` tags, as Qwen/Hermes chat templates expect. Several calls follow one another,
separated by a newline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from ._errors import CompileError
from ._grammar import Dropped, Grammar, Ignored, merge_rules
from ._ir import ANY_CHAR, Node, alt, char_set, lit, negate, opt, ref, repeat, seq, star
from ._timing import logged_compile, tool_set_size

Envelope = Literal["json", "hermes"]

HERMES_OPEN = "<tool_call>"
HERMES_CLOSE = "</tool_call>"
_BLANKS = " \t\r\n"


@dataclass(frozen=True)
class ToolSchema:
    """A callable tool: its name, the JSON Schema of its arguments, and what it does."""

    name: str
    schema: dict[str, Any] = field(hash=False)
    description: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise CompileError("a tool needs a non-empty name", keyword="name")


def arguments(
    schema: dict[str, Any] | bool, *, lenient: bool = False, whitespace: int | None = None
) -> Grammar:
    """The grammar of one argument object for a tool with this JSON Schema."""
    from ._jsonschema import from_json_schema

    if isinstance(schema, dict):
        declared = schema.get("type")
        if declared is not None and declared != "object" and not (
            isinstance(declared, list) and "object" in declared
        ):
            raise CompileError(
                f"tool arguments must be an object, not {declared!r}", keyword="type", pointer=""
            )
        schema = {**schema, "type": "object"}
    elif schema is True:
        schema = {"type": "object"}
    return from_json_schema(schema, lenient=lenient, whitespace=whitespace)


def _call_rules(
    tools: Sequence[ToolSchema], lenient: bool, whitespace: int | None
) -> tuple[Node, dict[str, Node], tuple[Dropped, ...], tuple[Ignored, ...]]:
    if not tools:
        raise CompileError("at least one tool is needed", keyword="tools")
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise CompileError(f"tool names must be unique; repeated: {', '.join(dup)}", keyword="name")
    rules: dict[str, Node] = {}
    branches = []
    dropped: list[Dropped] = []
    ignored: list[Ignored] = []
    for i, tool in enumerate(tools):
        try:
            g = arguments(tool.schema, lenient=lenient, whitespace=whitespace)
        except CompileError as exc:
            raise CompileError(
                f"tool {tool.name!r}: {exc.reason}",
                keyword=exc.keyword,
                pointer=f"/{tool.name}{exc.pointer or ''}" if exc.pointer is not None else None,
            ) from exc
        prefix = f"t{i}-"
        rules.update(merge_rules((prefix, g.rules)))
        head = '{"name":' + json.dumps(tool.name, ensure_ascii=False) + ',"arguments":'
        branches.append(seq(lit(head), ref(prefix + g.root), lit("}")))
        dropped += [Dropped(d.keyword, f"/{tool.name}{d.pointer}", d.reason) for d in g.dropped]
        ignored += [Ignored(d.keyword, f"/{tool.name}{d.pointer}") for d in g.ignored]
    call = alt(*branches)
    return call, rules, tuple(dropped), tuple(ignored)


def _calls(call: Node, envelope: Envelope, max_calls: int | None) -> Node:
    if max_calls is not None and max_calls < 1:
        raise CompileError("max_calls must be at least 1", keyword="max_calls")
    if envelope == "hermes":
        one = seq(lit(HERMES_OPEN + "\n"), call, lit("\n" + HERMES_CLOSE))
    elif envelope == "json":
        one = call
    else:
        raise CompileError(f"unknown envelope {envelope!r}: use 'json' or 'hermes'", keyword="envelope")
    more = None if max_calls is None else max_calls - 1
    return seq(one, repeat(seq(lit("\n"), one), 0, more))


@logged_compile("tool-calls", tool_set_size)
def tool_calls(
    tools: Sequence[ToolSchema],
    *,
    envelope: Envelope = "json",
    max_calls: int | None = 1,
    lenient: bool = False,
    whitespace: int | None = None,
) -> Grammar:
    """One to `max_calls` tool calls (None: any number), newline-separated."""
    call, rules, dropped, ignored = _call_rules(tools, lenient, whitespace)
    rules["root"] = _calls(call, envelope, max_calls)
    return Grammar(rules, "root", dropped=dropped, ignored=ignored, source="tool_calls")


def _text_not_starting_with(tag: str) -> Node:
    """Non-empty text whose first non-blank character is neither `{` nor the start of `tag`."""
    blanks = star(char_set(_BLANKS))
    rest = star(ANY_CHAR)
    # First non-blank character: anything but a blank, "{" or the tag's first character.
    plain = seq(negate([(ord(c), ord(c)) for c in _BLANKS + "{" + tag[:1]]), rest)
    # Or a proper prefix of the tag followed by the end of text or by a character that leaves it.
    near_misses = []
    for k in range(1, len(tag)):
        leave = negate([(ord(tag[k]), ord(tag[k]))])
        near_misses.append(seq(lit(tag[:k]), opt(seq(leave, rest))))
    return seq(blanks, alt(plain, *near_misses))


@logged_compile("tool-calls-or-text", tool_set_size)
def tool_calls_or_text(
    tools: Sequence[ToolSchema],
    *,
    envelope: Envelope = "json",
    max_calls: int | None = 1,
    lenient: bool = False,
    whitespace: int | None = None,
) -> Grammar:
    """Tool calls (as `tool_calls`) or a free-text answer that cannot be mistaken for one."""
    call, rules, dropped, ignored = _call_rules(tools, lenient, whitespace)
    tag = HERMES_OPEN if envelope == "hermes" else "{"
    rules["calls"] = _calls(call, envelope, max_calls)
    rules["text"] = _text_not_starting_with(tag)
    rules["root"] = alt(ref("calls"), ref("text"))
    return Grammar(rules, "root", dropped=dropped, ignored=ignored, source="tool_calls_or_text")


def parse_tool_calls(text: str, *, envelope: Envelope = "json") -> list[dict[str, Any]] | None:
    """The calls in `text` as `{"name", "arguments"}` dicts, or None if `text` is free text.

    Meant for text a tool grammar produced; raises ValueError on a malformed call.
    """
    stripped = text.strip()
    opening = HERMES_OPEN if envelope == "hermes" else "{"
    if not stripped.startswith(opening):
        return None
    calls = []
    decoder = json.JSONDecoder()
    pos = 0
    while pos < len(stripped):
        if envelope == "hermes":
            if not stripped.startswith(HERMES_OPEN, pos):
                raise ValueError(f"expected {HERMES_OPEN} at offset {pos}")
            pos += len(HERMES_OPEN)
        while pos < len(stripped) and stripped[pos] in _BLANKS:
            pos += 1
        obj, pos = decoder.raw_decode(stripped, pos)
        if not (isinstance(obj, dict) and set(obj) == {"name", "arguments"}):
            raise ValueError(f"not a tool call: {obj!r}")
        calls.append(obj)
        while pos < len(stripped) and stripped[pos] in _BLANKS:
            pos += 1
        if envelope == "hermes":
            if not stripped.startswith(HERMES_CLOSE, pos):
                raise ValueError(f"expected {HERMES_CLOSE} at offset {pos}")
            pos += len(HERMES_CLOSE)
            while pos < len(stripped) and stripped[pos] in _BLANKS:
                pos += 1
    return calls

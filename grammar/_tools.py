"""Tool-call grammars: each tool name bound to its own argument shape.

A call is `{"name":<one tool name>,"arguments":<that tool's arguments>}`, so a call naming one
tool can never borrow another tool's arguments. The envelope is how a call is written around
that object: `"json"` bare, `"hermes"` in `<tool_call>` tags as Qwen/Hermes chat templates
teach, `"fenced"` in a ```json block as tool models often write anyway. A tuple of envelopes
lets the model open each call in whichever of them it chooses. Several calls follow one
another, separated by a newline. `whitespace` allows up to that many blanks between the JSON
tokens of the call (so a model may pretty-print it as it would unconstrained).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from ._errors import CompileError
from ._grammar import Dropped, Grammar, Ignored, merge_rules
from ._ir import ANY_CHAR, Node, alt, char_set, lit, negate, opt, ref, repeat, seq, star
from ._timing import logged_compile, tool_set_size

Envelope = Literal["json", "hermes", "fenced"]

HERMES_OPEN = "<tool_call>"
HERMES_CLOSE = "</tool_call>"
FENCE_OPEN = "```json"
FENCE_CLOSE = "```"
_BLANKS = " \t\r\n"
# What each envelope writes before and after a call's JSON object.
_WRAP = {"json": ("", ""), "hermes": (HERMES_OPEN + "\n", "\n" + HERMES_CLOSE), "fenced": (FENCE_OPEN + "\n", "\n" + FENCE_CLOSE)}
# The text by which each envelope's call is recognised: free text must not start with it.
_OPENING = {"json": "{", "hermes": HERMES_OPEN, "fenced": FENCE_OPEN}


def envelopes(envelope: Envelope | Sequence[Envelope]) -> tuple[Envelope, ...]:
    """`envelope` as a tuple of known envelopes, in the order given."""
    chosen = (envelope,) if isinstance(envelope, str) else tuple(envelope)
    if not chosen:
        raise CompileError("at least one envelope is needed", keyword="envelope")
    for e in chosen:
        if e not in _WRAP:
            raise CompileError(f"unknown envelope {e!r}: use 'json', 'hermes' or 'fenced'", keyword="envelope")
    return chosen


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
    ws = repeat(char_set(_BLANKS), 0, whitespace) if whitespace else None
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
        name = json.dumps(tool.name, ensure_ascii=False)
        if ws is None:
            branches.append(seq(lit('{"name":' + name + ',"arguments":'), ref(prefix + g.root), lit("}")))
        else:
            pieces = ["{", '"name"', ":", name, ",", '"arguments"', ":"]
            head = [node for piece in pieces for node in (lit(piece), ws)]
            branches.append(seq(*head, ref(prefix + g.root), ws, lit("}")))
        dropped += [Dropped(d.keyword, f"/{tool.name}{d.pointer}", d.reason) for d in g.dropped]
        ignored += [Ignored(d.keyword, f"/{tool.name}{d.pointer}") for d in g.ignored]
    call = alt(*branches)
    return call, rules, tuple(dropped), tuple(ignored)


def _calls(call: Node, chosen: tuple[Envelope, ...], max_calls: int | None) -> Node:
    if max_calls is not None and max_calls < 1:
        raise CompileError("max_calls must be at least 1", keyword="max_calls")
    wrapped = []
    for e in chosen:
        before, after = _WRAP[e]
        wrapped.append(seq(lit(before), call, lit(after)) if before else call)
    one = alt(*wrapped) if len(wrapped) > 1 else wrapped[0]
    more = None if max_calls is None else max_calls - 1
    return seq(one, repeat(seq(lit("\n"), one), 0, more))


@logged_compile("tool-calls", tool_set_size)
def tool_calls(
    tools: Sequence[ToolSchema],
    *,
    envelope: Envelope | Sequence[Envelope] = "json",
    max_calls: int | None = 1,
    lenient: bool = False,
    whitespace: int | None = None,
) -> Grammar:
    """One to `max_calls` tool calls (None: any number), newline-separated."""
    chosen = envelopes(envelope)
    call, rules, dropped, ignored = _call_rules(tools, lenient, whitespace)
    rules["root"] = _calls(call, chosen, max_calls)
    return Grammar(rules, "root", dropped=dropped, ignored=ignored, source="tool_calls")


def _text_not_starting_with(openings: Sequence[str]) -> Node:
    """Non-empty text whose first non-blank characters do not begin any of `openings`.

    After the blanks: a character no opening starts with, then anything; or a proper prefix
    of an opening (that is not itself an opening) followed by the end of the text or by a
    character that continues no opening, then anything."""
    blanks = star(char_set(_BLANKS))
    rest = star(ANY_CHAR)

    def others(chars: set[str]) -> Node:
        return negate([(ord(c), ord(c)) for c in sorted(chars)])

    branches = [seq(others(set(_BLANKS) | {o[0] for o in openings}), rest)]
    prefixes = sorted({o[:k] for o in openings for k in range(1, len(o))} - set(openings))
    for prefix in prefixes:
        if any(prefix.startswith(o) for o in openings):
            continue  # a shorter opening already begins it: that text is a call, not a near miss
        following = {o[len(prefix)] for o in openings if o.startswith(prefix) and len(o) > len(prefix)}
        branches.append(seq(lit(prefix), opt(seq(others(following), rest))))
    return seq(blanks, alt(*branches))


@logged_compile("tool-calls-or-text", tool_set_size)
def tool_calls_or_text(
    tools: Sequence[ToolSchema],
    *,
    envelope: Envelope | Sequence[Envelope] = "json",
    max_calls: int | None = 1,
    lenient: bool = False,
    whitespace: int | None = None,
) -> Grammar:
    """Tool calls (as `tool_calls`) or a free-text answer that cannot be mistaken for one."""
    chosen = envelopes(envelope)
    call, rules, dropped, ignored = _call_rules(tools, lenient, whitespace)
    rules["calls"] = _calls(call, chosen, max_calls)
    rules["text"] = _text_not_starting_with(_openings(chosen))
    rules["root"] = alt(ref("calls"), ref("text"))
    return Grammar(rules, "root", dropped=dropped, ignored=ignored, source="tool_calls_or_text")


def _openings(chosen: tuple[Envelope, ...]) -> list[str]:
    # A bare JSON object is never free text, whatever the envelopes (the call's own opening).
    return sorted({"{"} | {_OPENING[e] for e in chosen})


def free_text(*, envelope: Envelope | Sequence[Envelope] = "json") -> Grammar:
    """Non-empty text that cannot be read as a tool call in these envelopes (the text branch
    of `tool_calls_or_text`, alone): a final answer where calls are not allowed."""
    return Grammar({"root": _text_not_starting_with(_openings(envelopes(envelope)))}, "root", source="free_text")


def parse_tool_calls(text: str, *, envelope: Envelope | Sequence[Envelope] = "json") -> list[dict[str, Any]] | None:
    """The calls in `text` as `{"name", "arguments"}` dicts, or None if `text` is free text.

    Each call may be written in any of the given envelopes. Meant for text a tool grammar
    produced; raises ValueError on a malformed call.
    """
    chosen = envelopes(envelope)
    stripped = text.strip()
    if not any(stripped.startswith(_OPENING[e]) for e in chosen):
        return None
    calls = []
    decoder = json.JSONDecoder()
    pos = 0
    while pos < len(stripped):
        # The envelope of this call: the first whose opening is here (a tag or fence before "{").
        e = next((e for e in chosen if e != "json" and stripped.startswith(_OPENING[e], pos)), None)
        if e is None:
            if "json" not in chosen or not stripped.startswith("{", pos):
                expected = " or ".join(_OPENING[e] for e in chosen)
                raise ValueError(f"expected {expected} at offset {pos}")
            e = "json"
        pos += len(_WRAP[e][0].rstrip("\n"))
        pos = _skip_blanks(stripped, pos)
        obj, pos = decoder.raw_decode(stripped, pos)
        if not (isinstance(obj, dict) and set(obj) == {"name", "arguments"}):
            raise ValueError(f"not a tool call: {obj!r}")
        calls.append(obj)
        pos = _skip_blanks(stripped, pos)
        close = _WRAP[e][1].lstrip("\n")
        if close:
            if not stripped.startswith(close, pos):
                raise ValueError(f"expected {close} at offset {pos}")
            pos = _skip_blanks(stripped, pos + len(close))
    return calls


def _skip_blanks(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _BLANKS:
        pos += 1
    return pos

"""Tool-call grammars: each tool name bound to its own argument shape.

A call is `{"name":<one tool name>,"arguments":<that tool's arguments>}`, so a call naming one
tool can never borrow another tool's arguments. The envelope is how a call is written around
that object: `"json"` bare (or all of the turn's calls as one bare JSON list), `"hermes"` in
`<tool_call>` tags as Qwen/Hermes chat templates teach, `"fenced"` in a ```json block as tool
models often write anyway (a fence may also hold the turn's calls as a JSON list or one a
line, as models asked for several write them; with `listed`, every envelope holds the calls
as one list, and only so). A tuple of envelopes lets the model open each call in whichever of
them it chooses. Several calls follow one another,
separated by a newline. The call's JSON is in one form with its arguments', as
`from_json_schema` takes it: compact by default, `whitespace` allows up to that many blanks
between its tokens (so a model may pretty-print it as it would unconstrained), `separators`
fixes them (`(", ", ": ")`: as `json.dumps` writes, `{"name": "f", "arguments": {"a": 1}}`). `preamble`
lets free text come before the first call, as tool models often write ("I will look that up."):
the text holds no tag or fence opening, and the first one it reaches begins the call.

`"python"` is the other way tool models write calls (BFCL's prompt mode, Llama 3.2's
template): all of a turn's calls in one list, `[get_weather(city="Paris"), f(n=2)]`, each
argument `name=value` with the value in JSON; small models also drop the brackets
(`get_weather(city="Paris")`), which is read as the same calls. It is used alone, not beside
other envelopes; free text then never begins with `[` or a tool's name and `(`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Collection, Literal, Sequence

from ._byte_budget import ByteLengths, within_bytes
from ._errors import CompileError
from ._grammar import Dropped, Grammar, Ignored, merge_rules
from ._held_numbers import RUN_CHARS, check_numbers, check_openings, number_rules
from ._jsonschema import PYTHON_COMMA, Form, GroundedField, Grounding, from_json_schema, json_form, keyword_arguments
from ._schema_union import moved
from ._ir import ANY_CHAR, Node, alt, char_set, chars, lit, negate, opt, ref, repeat, seq, star
from ._timing import logged_compile, tool_set_size

Envelope = Literal["json", "hermes", "fenced", "python"]

HERMES_OPEN = "<tool_call>"
HERMES_CLOSE = "</tool_call>"
FENCE_OPEN = "```json"
FENCE_CLOSE = "```"
_BLANKS = " \t\r\n"
# What each envelope writes before and after a call's JSON object.
_WRAP = {"json": ("", ""), "hermes": (HERMES_OPEN + "\n", "\n" + HERMES_CLOSE), "fenced": (FENCE_OPEN + "\n", "\n" + FENCE_CLOSE)}
# The text by which each envelope's call is recognised: free text must not start with it.
_OPENING = {"json": "{", "hermes": HERMES_OPEN, "fenced": FENCE_OPEN, "python": "["}
_PY_NAME = re.compile(r"[A-Za-z_][\w.\-]*", re.ASCII)


def envelopes(envelope: Envelope | Sequence[Envelope]) -> tuple[Envelope, ...]:
    """`envelope` as a tuple of known envelopes, in the order given."""
    chosen = (envelope,) if isinstance(envelope, str) else tuple(envelope)
    if not chosen:
        raise CompileError("at least one envelope is needed", keyword="envelope")
    for e in chosen:
        if e not in _OPENING:
            raise CompileError(f"unknown envelope {e!r}: use 'json', 'hermes', 'fenced' or 'python'",
                               keyword="envelope")
    if "python" in chosen and len(chosen) > 1:
        raise CompileError("the 'python' envelope writes every call in one list: it can't be mixed with others",
                           keyword="envelope")
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
    schema: dict[str, Any] | bool, *, lenient: bool = False, whitespace: int | None = None,
    separators: Sequence[str] | None = None, grounding: Grounding | None = None,
) -> Grammar:
    """The grammar of one argument object for a tool with this JSON Schema (in the form
    `from_json_schema` writes). With `grounding`, the parameters the schema marks
    `"grounded": true` are held to its source, as `from_json_schema` holds them."""
    return from_json_schema(_object_schema(schema), lenient=lenient, whitespace=whitespace, separators=separators,
                            grounding=grounding)


def _keyword_arguments(schema: dict[str, Any] | bool, *, lenient: bool, whitespace: int | None,
                       separators: Sequence[str] | None, grounding: Grounding | None = None) -> Grammar:
    """A tool's arguments as the keyword arguments of a Python call (the python envelope)."""
    return keyword_arguments(_object_schema(schema), lenient=lenient, whitespace=whitespace, separators=separators,
                             grounding=grounding)


def _check_grounding(grounding: Any) -> None:
    if grounding is not None and not isinstance(grounding, Grounding):
        raise CompileError(f"grounding must be a Grounding, not {type(grounding).__name__}", keyword="grounding")


def _object_schema(schema: dict[str, Any] | bool) -> dict[str, Any] | bool:
    """`schema` held to objects: arguments are always an object."""
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
    return schema


@dataclass(frozen=True)
class _CallRules:
    """One call of any of a turn's tools: the node, its rules, and what the tools' argument
    compiles dropped, ignored and grounded (each pointer led by `/<tool name>`)."""

    call: Node
    rules: dict[str, Node]
    dropped: tuple[Dropped, ...]
    ignored: tuple[Ignored, ...]
    grounding: tuple[GroundedField, ...]


def _call_rules(
    tools: Sequence[ToolSchema], lenient: bool, whitespace: int | None, python: bool = False,
    separators: Sequence[str] | None = None, grounding: Grounding | None = None,
) -> _CallRules:
    """One call of any of the tools: the JSON call object, or (`python`) `name(arguments)`;
    the call's JSON in its arguments' form (its blanks the rule `ws`, as theirs)."""
    if not tools:
        raise CompileError("at least one tool is needed", keyword="tools")
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise CompileError(f"tool names must be unique; repeated: {', '.join(dup)}", keyword="name")
    form = json_form(whitespace, separators)
    rules: dict[str, Node] = dict(form.rules)
    branches = []
    dropped: list[Dropped] = []
    ignored: list[Ignored] = []
    grounded: list[GroundedField] = []
    for i, tool in enumerate(tools):
        if python and not _PY_NAME.fullmatch(tool.name):
            raise CompileError(f"tool name {tool.name!r} can't be written as a Python call", keyword="name")
        try:
            g = (_keyword_arguments if python else arguments)(tool.schema, lenient=lenient, whitespace=whitespace,
                                                              separators=separators, grounding=grounding)
        except CompileError as exc:
            raise CompileError(
                f"tool {tool.name!r}: {exc.reason}",
                keyword=exc.keyword,
                pointer=f"/{tool.name}{exc.pointer or ''}" if exc.pointer is not None else None,
            ) from exc
        prefix = f"t{i}-"
        rules.update(merge_rules((prefix, g.rules)))
        name = json.dumps(tool.name, ensure_ascii=False)
        if python:
            branches.append(seq(lit(tool.name + "("), ref(prefix + g.root), lit(")")))
        else:
            head = [lit("{"), form.inner, lit('"name"'), form.colon, lit(name), form.comma, lit('"arguments"'),
                    form.colon]
            branches.append(seq(*head, ref(prefix + g.root), form.inner, lit("}")))
        dropped += [Dropped(d.keyword, f"/{tool.name}{d.pointer}", d.reason) for d in g.dropped]
        ignored += [Ignored(d.keyword, f"/{tool.name}{d.pointer}") for d in g.ignored]
        grounded += [GroundedField(f"/{tool.name}{n.pointer}", n.kind, n.grounded, n.reason) for n in g.grounding]
    # One rule that every place a call may be written refers to: a turn's grammar writes the
    # call in each envelope, after a preamble, and again for later calls, and the automaton
    # then builds the tools' argument shapes once, not once per place.
    rules["call"] = alt(*branches)
    return _CallRules(ref("call"), rules, tuple(dropped), tuple(ignored), tuple(grounded))


def _one_call(call: Node, chosen: tuple[Envelope, ...]) -> Node:
    wrapped = []
    for e in chosen:
        before, after = _WRAP[e]
        wrapped.append(seq(lit(before), call, lit(after)) if before else call)
    return alt(*wrapped) if len(wrapped) > 1 else wrapped[0]


def _more_calls(max_calls: int | None) -> int | None:
    """How many calls may follow the first (None: any number)."""
    if max_calls is not None and max_calls < 1:
        raise CompileError("max_calls must be at least 1", keyword="max_calls")
    return None if max_calls is None else max_calls - 1


def _later_calls(call: Node, chosen: tuple[Envelope, ...], max_calls: int | None) -> Node:
    """The calls after the first: up to `max_calls - 1` more, each after a newline."""
    return repeat(seq(lit("\n"), _one_call(call, chosen)), 0, _more_calls(max_calls))


def _call_list(call: Node, max_calls: int | None, form: Form) -> Node:
    """A JSON list of one to `max_calls` calls (in the calls' form): all of a turn's calls in one fence."""
    more = repeat(seq(form.comma, call), 0, _more_calls(max_calls))
    return seq(lit("["), form.inner, call, more, form.inner, lit("]"))


def _several_in_fence(call: Node, max_calls: int | None, form: Form) -> list[Node]:
    """What one fence may hold besides a lone call, the two forms models asked for several calls
    write them in: the turn's calls as a JSON list, and (where a turn holds more than one) two
    to `max_calls` calls one a line."""
    bodies = [_call_list(call, max_calls, form)]
    more = _more_calls(max_calls)
    if more != 0:
        bodies.append(seq(call, repeat(seq(lit("\n"), call), 1, more)))
    return bodies


def _calls(call: Node, chosen: tuple[Envelope, ...], max_calls: int | None, form: Form,
           listed: bool = False) -> Node:
    if listed:
        return alt(*(_listed_in(e, call, max_calls, form) for e in chosen))
    if chosen == ("python",):
        in_list = seq(call, repeat(seq(PYTHON_COMMA, call), 0, _more_calls(max_calls)))
        return alt(seq(lit("["), in_list, lit("]")), in_list)
    forms = [seq(_one_call(call, chosen), _later_calls(call, chosen, max_calls))]
    if "json" in chosen:
        forms.append(_call_list(call, max_calls, form))
    if "fenced" in chosen:
        before, after = _WRAP["fenced"]
        forms += [seq(lit(before), body, lit(after)) for body in _several_in_fence(call, max_calls, form)]
    return alt(*forms) if len(forms) > 1 else forms[0]


def _listed(chosen: tuple[Envelope, ...], listed: bool) -> bool:
    """Whether JSON calls are written as one list: python calls are always a list of their own."""
    return listed and chosen != ("python",)


def _listed_in(e: Envelope, call: Node, max_calls: int | None, form: Form) -> Node:
    """All of a turn's calls as one JSON list inside envelope `e` (bare, in a tag, in a fence)."""
    before, after = _WRAP[e]
    return seq(lit(before), _call_list(call, max_calls, form), lit(after))


def _delimited(chosen: tuple[Envelope, ...]) -> tuple[Envelope, ...]:
    """The envelopes a call may open after a preamble: those with an opening of their own."""
    found = tuple(e for e in chosen if e in ("hermes", "fenced"))
    if not found:
        raise CompileError("a preamble needs an envelope that opens with a tag or fence ('hermes' or 'fenced')",
                           keyword="preamble")
    return found


def _preamble_rules(
    call: Node, chosen: tuple[Envelope, ...], max_calls: int | None, form: Form, *, may_end: bool,
    listed: bool = False, bounded: bool = False, blanks: int = 0,
) -> dict[str, Node]:
    """Rules for text before the first call: `preamble` is its start (blanks, then a character
    other than `{`, so it never reads as a bare call).

    The text is read by an automaton over the openings of the delimited envelopes (state =
    the longest text end that begins an opening), so it never holds an opening: the first
    opening it reaches continues as that envelope's call, then any later calls. With
    `may_end`, the text may also end anywhere (a final answer); otherwise a call must follow.
    `bounded`: the plainer text of `_plain_preamble`, which a byte budget can bound, after at
    most `blanks` blanks.
    """
    openings = {_OPENING[e]: e for e in _delimited(chosen)}
    later = _later_calls(call, chosen, max_calls)
    if bounded:
        return _plain_preamble(openings, call, later, max_calls, form, may_end=may_end, listed=listed,
                               bare={"{", "["} if "json" in chosen else {"{"}, blanks=blanks)
    prefixes = sorted({o[:k] for o in openings for k in range(len(o))})
    names = {prefix: f"preamble-{i}" for i, prefix in enumerate(prefixes)}
    alphabet = sorted({c for o in openings for c in o})

    def after(state: str, c: str) -> Node:
        text = state + c
        for start in range(len(text) + 1):
            suffix = text[start:]
            if suffix in openings:
                e = openings[suffix]
                return _opened(e, len(suffix), call, later, max_calls, form, listed)
            if suffix in names:
                return ref(names[suffix])
        raise AssertionError("the empty suffix is always a state")

    others = negate([(ord(c), ord(c)) for c in alphabet])
    rules: dict[str, Node] = {}
    for prefix, name in names.items():
        branches = [seq(lit(c), after(prefix, c)) for c in alphabet]
        branches.append(seq(others, ref(names[""])))
        rules[name] = opt(alt(*branches)) if may_end else alt(*branches)
    bare = {"{", "["} if "json" in chosen else {"{"}  # a bare call (or list of them) opens calls, not text
    first_others = negate([(ord(c), ord(c)) for c in sorted(set(alphabet) | set(_BLANKS) | bare)])
    firsts = [seq(lit(c), after("", c)) for c in alphabet if c not in _BLANKS and c not in bare]
    rules["preamble"] = seq(star(char_set(_BLANKS)), alt(seq(first_others, ref(names[""])), *firsts))
    return rules


def _opened(e: Envelope, read: int, call: Node, later: Node, max_calls: int | None, form: Form,
            listed: bool) -> Node:
    """What follows the first `read` characters of envelope `e`'s opening after a preamble: the
    rest of its opening, then the calls."""
    before, close = _WRAP[e]
    rest = lit(before[read:])
    if listed:
        return seq(rest, _call_list(call, max_calls, form), lit(close))
    calls = seq(rest, call, lit(close), later)
    if e == "fenced":
        return alt(calls, *(seq(rest, body, lit(close)) for body in _several_in_fence(call, max_calls, form)))
    return calls


def _plain_preamble(openings: dict[str, Envelope], call: Node, later: Node, max_calls: int | None,
                    form: Form, *, may_end: bool, listed: bool, bare: set[str], blanks: int) -> dict[str, Node]:
    """The preamble under a byte budget: text that holds no character an opening begins with
    (so it reaches no opening but its last), a sub-language of the preamble's with no rule
    that recurses, so its length can be bounded. Then an opening and the calls, or (`may_end`)
    the end."""
    firsts = {o[0] for o in openings}
    opened = [_opened(e, 0, call, later, max_calls, form, listed) for e in openings.values()]
    text_chars = _chars_except([(0, 0x10FFFF)], without=firsts)
    first = _chars_except([(0, 0x10FFFF)], without=firsts | set(_BLANKS) | bare)
    text = seq(first, star(text_chars))
    # Text then calls, and (`may_end`) text alone as its own branch: an answer keeps the whole budget.
    forms = [seq(text, alt(*opened)), *([text] if may_end else []), *opened]
    return {"preamble": seq(repeat(char_set(_BLANKS), 0, blanks), alt(*forms))}


@logged_compile("tool-calls", tool_set_size)
def tool_calls(
    tools: Sequence[ToolSchema],
    *,
    envelope: Envelope | Sequence[Envelope] = "json",
    max_calls: int | None = 1,
    lenient: bool = False,
    whitespace: int | None = None,
    separators: Sequence[str] | None = None,
    preamble: bool = False,
    listed: bool = False,
    max_bytes: int | None = None,
    grounding: Grounding | None = None,
) -> Grammar:
    """One to `max_calls` tool calls (None: any number), newline-separated; with `preamble`,
    free text may come first, and the first tag or fence it reaches opens the calls. With
    `listed`, the calls are one JSON list in whichever envelope opens them (bare, a tag, a
    fence), so a second call is a comma away from the first, and "one call" is a list of one.
    `whitespace` or `separators`: the form of the calls' JSON, as `from_json_schema` takes it
    (compact by default).

    `max_bytes`: every sentence at most that many UTF-8 bytes (see `within_bytes`), for a model
    whose turn must end within as many tokens and no decoder that can close it: fewer calls,
    blanks and characters, never other ones; `LimitError` where not even one call fits.

    `grounding`: each argument whose schema says `"grounded": true` is held to the source's
    spans (a string) or the numbers it writes (a number), as `from_json_schema` holds it;
    `Grammar.grounding` records each such place, its pointer led by `/<tool name>`, and where
    one kept its plain grammar (no span or number of the source fits), why."""
    _check_grounding(grounding)
    chosen = envelopes(envelope)
    listed = _listed(chosen, listed)
    python = chosen == ("python",)
    json_form(whitespace, separators)  # checked as given, before a byte budget lowers the blanks
    max_calls, whitespace = _fitted(tools, max_bytes, max_calls, lenient, whitespace, python, separators)
    form = json_form(whitespace, separators)
    built = _call_rules(tools, lenient, whitespace, python=python, separators=separators, grounding=grounding)
    call, rules = built.call, built.rules
    rules["root"] = _calls(call, chosen, max_calls, form, listed)
    if preamble:
        rules.update(_preamble_rules(call, chosen, max_calls, form, may_end=False, listed=listed,
                                     bounded=max_bytes is not None, blanks=whitespace or 0))
        rules["root"] = alt(rules["root"], ref("preamble"))
    schema = calls_schema(tools) if "json" in chosen else None
    g = Grammar(rules, "root", dropped=built.dropped, ignored=built.ignored, source="tool_calls", schema=schema,
                grounding=built.grounding)
    return g if max_bytes is None else within_bytes(g, max_bytes)


_LEADING_BLANKS = 4  # blanks before a free-text answer under a byte budget
# How much of a call's room its blanks may take at most (one blank in this many bytes).
_BYTES_A_BLANK = 64
_WRAPPING = max(len(before) + len(after) for before, after in _WRAP.values()) + 1  # and a newline


def _fitted(tools: Sequence[ToolSchema], max_bytes: int | None, max_calls: int | None, lenient: bool,
            whitespace: int | None, python: bool,
            separators: Sequence[str] | None = None) -> tuple[int | None, int | None]:
    """`max_calls` and `whitespace` for turns of at most `max_bytes` bytes: as many calls as
    leave each room for three times its shortest, and blanks that take a small share of a
    call's room, so most of the budget goes to the arguments' values."""
    if max_bytes is None:
        return max_calls, whitespace
    _more_calls(max_calls)
    rules = _call_rules(tools, lenient, None, python=python, separators=separators).rules
    shortest = ByteLengths(rules).rule_lo["call"] + _WRAPPING
    calls = max(1, int(max_bytes // (3 * shortest)))
    calls = calls if max_calls is None else min(calls, max_calls)
    blanks = min(whitespace or 0, max_bytes // calls // _BYTES_A_BLANK)
    return calls, blanks or None


def calls_schema(tools: Sequence[ToolSchema]) -> dict[str, Any] | None:
    """One bare JSON call of any of `tools`, `{"name": <its name>, "arguments": <its arguments>}`,
    as a JSON Schema: the part of a json-envelope `tool_calls` grammar a server that takes only
    schemas can hold. It states no preamble, no tag or fence, one call a turn, and blanks as the
    server writes them. None where an argument schema cannot be moved into the union (an `$id`,
    an anchor, a remote reference)."""
    defs: dict[str, Any] = {}
    branches = []
    for i, tool in enumerate(tools):
        arguments_schema = moved(_object_schema(tool.schema), f"/anyOf/{i}/properties/arguments", f"t{i}-", defs)
        if arguments_schema is None:
            return None
        branches.append({
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": arguments_schema},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    return {"anyOf": branches, **({"$defs": defs} if defs else {})}


def _text_not_starting_with(openings: Sequence[str], blanks: int | None = None,
                            numbers: Sequence[str] | None = None) -> dict[str, Node]:
    """Rules for non-empty text (rule "text") whose first non-blank characters do not begin any
    of `openings` (ASCII, as every envelope's opening and every python tool name is).

    After the blanks: a character no opening starts with, then anything; or a proper prefix
    of an opening (that is not itself an opening) followed by the end of the text or by a
    character that continues no opening, then anything. The "anything" and the non-ASCII
    characters that deviate are rules of their own, called from every place they are
    needed: one set of states, not a copy of each per branch. `blanks`: at most that many
    leading blanks (None: any number). `numbers`: every number the text writes is one of
    these (`_held_numbers`; None: any)."""
    if not all(o.isascii() for o in openings):
        raise CompileError(f"free text's excluded openings must be ASCII: {sorted(openings)}")
    if numbers is not None:
        check_openings(openings)
    blanks = repeat(char_set(_BLANKS), 0, blanks)
    rest = ref("text-rest")
    closed = set(openings)
    runs = set(RUN_CHARS) if numbers is not None else set()

    def others(chars: set[str]) -> Node:
        ascii_others = _chars_except([(0, 0x7F)], without=chars | runs)
        number = (ref("numbers-run"),) if runs else ()
        return alt(seq(ascii_others, rest), ref("text-wide"), *number)

    def by_next(prefix: str, group: Sequence[str]) -> dict[str, list[str]]:
        """The openings of `group` longer than `prefix` (which they all start with), by their
        next character."""
        following: dict[str, list[str]] = {}
        for o in group:
            if len(o) > len(prefix):
                following.setdefault(o[len(prefix)], []).append(o)
        return dict(sorted(following.items()))

    def after(prefix: str, group: Sequence[str]) -> Node:
        """Text whose start so far is `prefix`, a proper prefix of the openings in `group`: a
        trie, so openings that share a start (tool names) share its states."""
        following = by_next(prefix, group)
        branches = [others(set(following))]
        branches += [seq(lit(c), after(prefix + c, more)) for c, more in following.items() if prefix + c not in closed]
        return opt(alt(*branches))  # the text may also end here

    firsts = by_next("", openings)
    branches = [others(set(_BLANKS) | set(firsts))]
    branches += [seq(lit(c), after(c, more)) for c, more in firsts.items() if c not in closed]
    rules = {"text": seq(blanks, alt(*branches)), "text-wide": seq(negate([(0, 0x7F)]), rest)}
    if numbers is None:
        return {**rules, "text-rest": star(ANY_CHAR)}
    return {**rules, "text-rest": ref("numbers-text"), **number_rules(numbers)}


def _chars_except(ranges: Sequence[tuple[int, int]], *, without: set[str]) -> Node:
    """The characters of `ranges` but those in `without`."""
    points = sorted(ord(c) for c in without)
    kept: list[tuple[int, int]] = []
    for lo, hi in ranges:
        for p in points:
            if lo <= p <= hi:
                if lo < p:
                    kept.append((lo, p - 1))
                lo = p + 1
        if lo <= hi:
            kept.append((lo, hi))
    return chars(kept)


@logged_compile("tool-calls-or-text", tool_set_size)
def tool_calls_or_text(
    tools: Sequence[ToolSchema],
    *,
    envelope: Envelope | Sequence[Envelope] = "json",
    max_calls: int | None = 1,
    lenient: bool = False,
    whitespace: int | None = None,
    separators: Sequence[str] | None = None,
    preamble: bool = False,
    listed: bool = False,
    max_bytes: int | None = None,
    grounding: Grounding | None = None,
) -> Grammar:
    """Tool calls (as `tool_calls`) or a free-text answer that cannot be mistaken for one.

    With `preamble`, the text holds no tag or fence opening anywhere; the first it reaches
    opens calls, so "Let me check.\n<tool_call>…" is a call, not an answer that holds one.
    `max_bytes` and `grounding` as for `tool_calls`; under a byte budget a preamble holds no
    character a tag or fence opens with."""
    _check_grounding(grounding)
    chosen = envelopes(envelope)
    listed = _listed(chosen, listed)
    python = chosen == ("python",)
    json_form(whitespace, separators)  # checked as given, before a byte budget lowers the blanks
    max_calls, whitespace = _fitted(tools, max_bytes, max_calls, lenient, whitespace, python, separators)
    form = json_form(whitespace, separators)
    built = _call_rules(tools, lenient, whitespace, python=python, separators=separators, grounding=grounding)
    call, rules = built.call, built.rules
    rules["calls"] = _calls(call, chosen, max_calls, form, listed)
    if preamble:
        rules.update(_preamble_rules(call, chosen, max_calls, form, may_end=True, listed=listed,
                                     bounded=max_bytes is not None, blanks=whitespace or 0))
        rules["text"] = ref("preamble")
    else:
        leading = None if max_bytes is None else whitespace or 0
        rules.update(_text_not_starting_with(_openings(chosen, [t.name for t in tools]), leading))
    rules["root"] = alt(ref("calls"), ref("text"))
    g = Grammar(rules, "root", dropped=built.dropped, ignored=built.ignored, source="tool_calls_or_text",
                grounding=built.grounding)
    return g if max_bytes is None else within_bytes(g, max_bytes)


def _openings(chosen: tuple[Envelope, ...], names: Sequence[str] = ()) -> list[str]:
    # A bare JSON object is never free text, whatever the envelopes (the call's own opening),
    # nor a bare list where calls may be one; nor, for python calls, a tool's name and its
    # parenthesis (a call without the brackets).
    bare_calls = {name + "(" for name in names} if chosen == ("python",) else set()
    if "json" in chosen:
        bare_calls.add("[")
    return sorted({"{"} | {_OPENING[e] for e in chosen} | bare_calls)


def free_text(*, envelope: Envelope | Sequence[Envelope] = "json", max_bytes: int | None = None,
              numbers: Collection[str] | None = None) -> Grammar:
    """Non-empty text that cannot be read as a tool call in these envelopes (the text branch
    of `tool_calls_or_text`, alone): a final answer where calls are not allowed. `max_bytes`:
    at most that many UTF-8 bytes (see `within_bytes`). `numbers`: every number the text
    writes (a run of digits with the points and commas between them, less those at its ends)
    is one of these, exactly as given; `numbers_in(source)` reads a source's (None: any
    number). An answer held so restates the numbers of its source and invents none."""
    leading = None if max_bytes is None else _LEADING_BLANKS
    held = None if numbers is None else check_numbers(numbers)
    g = Grammar(_text_not_starting_with(_openings(envelopes(envelope)), leading, held), "text", source="free_text")
    return g if max_bytes is None else within_bytes(g, max_bytes)


def parse_tool_calls(
    text: str,
    *,
    envelope: Envelope | Sequence[Envelope] = "json",
    preamble: bool = False,
    names: Collection[str] = (),
) -> list[dict[str, Any]] | None:
    """The calls in `text` as `{"name", "arguments"}` dicts, or None if `text` is free text.

    Each call may be written in any of the given envelopes; with `preamble`, after free text
    (the calls begin at the first tag or fence opening). For the python envelope, `names` are
    the tools whose calls may come without the list's brackets. Meant for text a tool grammar
    produced; raises ValueError on a malformed call.
    """
    chosen = envelopes(envelope)
    # Only the blanks a grammar lets stand around the calls: text that opens with another space
    # (a vertical tab, a no-break space) is free text to it, however call-like what follows.
    stripped = text.strip(_BLANKS)
    if chosen == ("python",):
        bare = (m := _PY_NAME.match(stripped)) is not None and stripped.startswith("(", m.end()) \
            and m.group() in names
        if not (stripped.startswith("[") or bare):
            return None
        calls, end = _python_calls(stripped, listed=not bare)
        if end != len(stripped):
            raise ValueError(f"unexpected text after the calls at offset {end}")
        return calls
    if not any(stripped.startswith(_OPENING[e]) for e in chosen) and not (
            "json" in chosen and stripped.startswith("[")):
        if not preamble:
            return None
        found = [i for i in (stripped.find(_OPENING[e]) for e in _delimited(chosen)) if i >= 0]
        if not found:
            return None
        stripped = stripped[min(found):]
    calls = []
    decoder = json.JSONDecoder()
    pos = 0
    while pos < len(stripped):
        # The envelope of this call: the first whose opening is here (a tag or fence before "{").
        e = next((e for e in chosen if e != "json" and stripped.startswith(_OPENING[e], pos)), None)
        if e is None:
            if "json" not in chosen or not stripped.startswith(("{", "["), pos):
                expected = " or ".join(_OPENING[e] for e in chosen)
                raise ValueError(f"expected {expected} at offset {pos}")
            e = "json"
        pos += len(_WRAP[e][0].rstrip("\n"))
        pos = _skip_blanks(stripped, pos)
        obj, pos = decoder.raw_decode(stripped, pos)
        found = obj if isinstance(obj, list) and obj else [obj]  # a fence's (or bare) list of calls
        while e == "fenced" and isinstance(obj, dict):  # a fence's calls one a line
            following = _skip_blanks(stripped, pos)
            if not stripped.startswith("{", following):
                break
            obj, pos = decoder.raw_decode(stripped, following)
            found.append(obj)
        for one in found:
            if not (isinstance(one, dict) and set(one) == {"name", "arguments"}):
                raise ValueError(f"not a tool call: {one!r}")
        calls.extend(found)
        pos = _skip_blanks(stripped, pos)
        close = _WRAP[e][1].lstrip("\n")
        if close:
            if not stripped.startswith(close, pos):
                raise ValueError(f"expected {close} at offset {pos}")
            pos = _skip_blanks(stripped, pos + len(close))
    return calls


_PY_KEY = re.compile(r"(\w+)=")


def _python_calls(text: str, *, listed: bool = True) -> tuple[list[dict[str, Any]], int]:
    """The calls of a python-envelope list at the start of `text` (in brackets, or `listed`
    False: without), and where they end."""
    decoder = json.JSONDecoder()
    calls = []
    pos = 1 if listed else 0  # past "["
    while True:
        name = _PY_NAME.match(text, pos)
        if name is None or not text.startswith("(", name.end()):
            raise ValueError(f"expected a call name( at offset {pos}")
        pos = name.end() + 1
        args: dict[str, Any] = {}
        while not text.startswith(")", pos):
            if args:
                pos = _after_comma(text, pos)
            key = _PY_KEY.match(text, pos)
            if key is None:
                raise ValueError(f"expected name= at offset {pos}")
            args[key.group(1)], pos = decoder.raw_decode(text, key.end())
        calls.append({"name": name.group(), "arguments": args})
        pos += 1
        if listed and text.startswith("]", pos):
            return calls, pos + 1
        if not listed and not text.startswith(",", pos):
            return calls, pos
        pos = _after_comma(text, pos)


def _after_comma(text: str, pos: int) -> int:
    if not text.startswith(",", pos):
        raise ValueError(f"expected , at offset {pos}")
    return pos + 2 if text.startswith(" ", pos + 1) else pos + 1


def _skip_blanks(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _BLANKS:
        pos += 1
    return pos

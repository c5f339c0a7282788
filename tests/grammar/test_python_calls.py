"""The python envelope: every call of a turn in one list, `[f(a=1), g(b="x")]`, as BFCL's
prompt mode and pythonic tool templates ask; arguments held to each tool's schema."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammar
from grammar import ToolSchema, parse_tool_calls
from ir_sampling import token_walk

PLAY = ToolSchema(
    "spotify.play",
    {
        "type": "object",
        "properties": {
            "artist": {"type": "string", "maxLength": 12},
            "duration": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"enum": ["pop", "rock"]}, "maxItems": 2},
        },
        "required": ["artist", "duration"],
    },
)
NOW = ToolSchema("now", {"type": "object", "properties": {}})
TOOLS = [PLAY, NOW]

plays = st.fixed_dictionaries(
    {"artist": st.text(alphabet='ab "\\é', max_size=12), "duration": st.integers(1, 999)},
    optional={"tags": st.lists(st.sampled_from(["pop", "rock"]), max_size=2)},
)
calls = st.lists(
    st.one_of(st.builds(lambda a: ("spotify.play", a), plays), st.just(("now", {}))), min_size=1, max_size=4
)


def written(drawn: list[tuple[str, dict]], comma: str, spaced_values: bool) -> str:
    """Calls as a model writes them: keyword arguments in declared order."""
    separators = (", ", ": ") if spaced_values else (",", ":")
    order = ["artist", "duration", "tags"]
    pieces = []
    for name, arguments in drawn:
        args = comma.join(f"{k}={json.dumps(arguments[k], separators=separators, ensure_ascii=False)}"
                          for k in order if k in arguments)
        pieces.append(f"{name}({args})")
    return "[" + comma.join(pieces) + "]"


@settings(max_examples=80, deadline=None)
@given(drawn=calls, comma=st.sampled_from([",", ", "]), spaced=st.booleans())
def test_calls_in_a_python_list_are_accepted_and_parse_as_those_calls(drawn, comma, spaced):
    g = grammar.tool_calls(TOOLS, envelope="python", max_calls=4, whitespace=2 if spaced else None)
    text = written(drawn, comma, spaced)
    assert g.accepts(text)
    assert grammar.tool_calls_or_text(TOOLS, envelope="python", max_calls=4,
                                      whitespace=2 if spaced else None).accepts(text)
    assert parse_tool_calls(text, envelope="python") == [{"name": n, "arguments": a} for n, a in drawn]


@pytest.mark.parametrize("text", [
    "[spotify.play(artist=\"x\")]",                       # a required argument missing
    "[spotify.play(duration=2, artist=\"x\")]",           # out of declared order
    "[spotify.play(artist=\"x\", duration=0)]",           # below its minimum
    "[spotify.play(artist=\"x\", duration=2, year=3)]",   # an undeclared argument
    "[spotify.play(artist='x', duration=2)]",             # values are JSON
    "[now(), now(), now()]",                              # more than max_calls
    "[]", "now() ]", "[now()] ", "[now() ]", "[now(),  now()]", "[now(), now()",
    "[play(artist=\"x\", duration=2)]",                   # an unknown tool
])
def test_what_the_python_envelope_refuses(text):
    g = grammar.tool_calls(TOOLS, envelope="python", max_calls=2)
    assert not g.accepts(text)


def test_text_or_calls_in_the_python_envelope():
    g = grammar.tool_calls_or_text(TOOLS, envelope="python")
    assert g.accepts("[now()]") and g.accepts("No tool fits.")
    assert not g.accepts("[not a call") and not g.accepts("  [now()")
    assert parse_tool_calls("No tool fits.", envelope="python") is None


NAMES = [t.name for t in TOOLS]


@settings(max_examples=60, deadline=None)
@given(drawn=calls.filter(lambda d: len(d) <= 2), comma=st.sampled_from([",", ", "]))
def test_calls_without_the_brackets_are_the_same_calls(drawn, comma):
    """Small models drop the list's brackets: `f(a=1), g(b=2)` is read as those calls."""
    g = grammar.tool_calls_or_text(TOOLS, envelope="python", max_calls=2)
    text = written(drawn, comma, False)[1:-1]
    assert g.accepts(text)
    assert parse_tool_calls(text, envelope="python", names=NAMES) == [{"name": n, "arguments": a} for n, a in drawn]


@settings(max_examples=80, deadline=None)
@given(text=st.text(alphabet="now(spotify.play) [x", min_size=1, max_size=16))
def test_text_never_begins_with_a_call_a_tool_name_and_its_parenthesis(text):
    """Free text is exactly what does not open a list or a tool's call: `now(` begins a call,
    `now is` and `snow(` are text."""
    g = grammar.tool_calls_or_text(TOOLS, envelope="python", max_calls=2)
    opens_call = any(text.lstrip(" ").startswith(o) for o in ("[", "{", "now(", "spotify.play("))
    is_text = g.accepts(text) and parse_tool_calls(text, envelope="python", names=NAMES) is None
    assert is_text == (not opens_call and bool(text.strip(" ")))


def test_python_envelope_errors_say_why():
    with pytest.raises(grammar.CompileError, match="mixed") as mixed:
        grammar.tool_calls(TOOLS, envelope=("python", "json"))
    assert mixed.value.keyword == "envelope"
    with pytest.raises(grammar.CompileError, match="identifier") as key:
        grammar.tool_calls([ToolSchema("f", {"type": "object", "properties": {"a-b": {}}})], envelope="python")
    assert key.value.pointer == "/f/properties/a-b"
    with pytest.raises(grammar.CompileError, match="Python call") as name:
        grammar.tool_calls([ToolSchema("get weather", {"type": "object"})], envelope="python")
    assert name.value.keyword == "name"
    with pytest.raises(grammar.CompileError, match="preamble"):
        grammar.tool_calls_or_text(TOOLS, envelope="python", preamble=True)
    with pytest.raises(grammar.CompileError, match="enum"):
        grammar.tool_calls([ToolSchema("f", {"type": "object", "enum": [{"a": 1}]})], envelope="python")
    with pytest.raises(ValueError, match="offset"):
        parse_tool_calls("[now(]", envelope="python")


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_walks_under_the_python_envelope_never_dead_end_and_validate(data):
    """Random token walks (finished by the shortest completion) end in a list whose every
    call validates against its tool's schema."""
    from runtimes.testing import synthetic_vocabulary

    g = grammar.tool_calls(TOOLS, envelope="python", max_calls=3)
    text = token_walk(g, synthetic_vocabulary(), lambda n: data.draw(st.integers(0, n - 1)), 40)
    found = parse_tool_calls(text, envelope="python", names=[t.name for t in TOOLS])
    assert found and len(found) <= 3
    schemas = {t.name: t.schema for t in TOOLS}
    for call in found:
        jsonschema.validate(call["arguments"], schemas[call["name"]])


def test_python_envelope_grammars_render_as_gbnf_with_the_same_language():
    """Servers take the grammar as GBNF: the rendered text reads back to the same calls."""
    g = grammar.tool_calls_or_text(TOOLS, envelope="python", max_calls=2)
    text = g.to_gbnf()
    assert grammar.gbnf_problem(text) is None
    back = grammar.from_gbnf(text)
    for sample in ['[now(), spotify.play(artist="a", duration=3)]', "No.", "[now(), now(), now()]", "[now("]:
        assert back.accepts(sample) == g.accepts(sample)

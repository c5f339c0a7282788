"""Tool grammars: names bound to their own argument shapes; calls or text, never ambiguous."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammar
from grammar import ToolSchema, parse_tool_calls
from ir_sampling import token_walk

WEATHER = ToolSchema(
    "get_weather",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
ADD = ToolSchema(
    "add",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
)
TOOLS = [WEATHER, ADD]


def _call(name: str, arguments: dict) -> str:
    return json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"))


def test_a_call_cannot_borrow_another_tools_arguments():
    g = grammar.tool_calls(TOOLS)
    assert g.accepts(_call("get_weather", {"city": "Oslo"}))
    assert g.accepts(_call("add", {"a": 1, "b": 2}))
    assert not g.accepts(_call("add", {"city": "Oslo"}))
    assert not g.accepts(_call("get_weather", {"a": 1, "b": 2}))
    assert not g.accepts(_call("nope", {}))
    assert not g.accepts("hello")


def test_max_calls_bounds_the_number_of_calls():
    one, two = _call("add", {"a": 1, "b": 2}), _call("get_weather", {"city": "x"})
    g1 = grammar.tool_calls(TOOLS, max_calls=1)
    g2 = grammar.tool_calls(TOOLS, max_calls=2)
    gn = grammar.tool_calls(TOOLS, max_calls=None)
    assert not g1.accepts(one + "\n" + two)
    assert g2.accepts(one + "\n" + two)
    assert not g2.accepts("\n".join([one, two, one]))
    assert gn.accepts("\n".join([one, two, one, two]))


def test_hermes_envelope_wraps_each_call():
    g = grammar.tool_calls(TOOLS, envelope="hermes", max_calls=2)
    body = _call("add", {"a": 1, "b": 2})
    wrapped = f"<tool_call>\n{body}\n</tool_call>"
    assert g.accepts(wrapped)
    assert g.accepts(wrapped + "\n" + wrapped)
    assert not g.accepts(body)
    assert parse_tool_calls(wrapped + "\n" + wrapped, envelope="hermes") == [json.loads(body)] * 2


@pytest.mark.parametrize("envelope, tag", [("json", "{"), ("hermes", "<tool_call>")])
def test_calls_or_text(envelope, tag):
    g = grammar.tool_calls_or_text(TOOLS, envelope=envelope)
    assert g.accepts("The weather in Oslo is mild.")
    assert g.accepts("  <b>bold</b> answer")
    assert not g.accepts("")
    assert not g.accepts("   \n")
    assert not g.accepts(tag + " not a call")
    assert not g.accepts("\n " + tag + "x")
    call = _call("get_weather", {"city": "Oslo", "unit": "celsius"})
    if envelope == "hermes":
        call = f"<tool_call>\n{call}\n</tool_call>"
    assert g.accepts(call)
    assert parse_tool_calls(call, envelope=envelope)[0]["arguments"]["city"] == "Oslo"
    assert parse_tool_calls("The weather", envelope=envelope) is None


@settings(max_examples=50, deadline=None)
@given(text=st.text(min_size=1, max_size=30))
def test_text_branch_is_exactly_text_not_starting_like_a_call(text):
    g = grammar.tool_calls_or_text(TOOLS, envelope="hermes")
    stripped = text.lstrip(" \t\r\n")
    looks_like_call = stripped.startswith("{") or stripped.startswith("<tool_call>")
    if stripped and not looks_like_call:
        assert g.accepts(text)
    elif not stripped or stripped.startswith("{"):
        assert not g.accepts(text)


ENVELOPE_SETS = [("json",), ("hermes",), ("fenced",), ("hermes", "fenced", "json"), ("fenced", "hermes")]
WRAP = {"json": "{}", "hermes": "<tool_call>\n{}\n</tool_call>", "fenced": "```json\n{}\n```"}
calls = st.lists(
    st.one_of(
        st.builds(lambda a, b: ("add", {"a": a, "b": b}), st.integers(-99, 99), st.integers(-99, 99)),
        st.builds(lambda c: ("get_weather", {"city": c}), st.text("abc xyz", min_size=1, max_size=8)),
    ),
    min_size=1, max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(chosen=st.sampled_from(ENVELOPE_SETS), drawn=calls, data=st.data())
def test_each_call_may_be_written_in_any_chosen_envelope_and_layout(chosen, drawn, data):
    g = grammar.tool_calls(TOOLS, envelope=chosen, max_calls=3, whitespace=8)
    either = grammar.tool_calls_or_text(TOOLS, envelope=chosen, max_calls=3, whitespace=8)
    pieces = []
    for name, arguments in drawn:
        envelope = data.draw(st.sampled_from(chosen))
        indent = data.draw(st.sampled_from([None, 1, 2]))
        body = json.dumps({"name": name, "arguments": arguments}, indent=indent,
                          separators=(",", ":") if indent is None else (",", ": "))
        pieces.append(WRAP[envelope].format(body))
    text = "\n".join(pieces)
    assert g.accepts(text) and either.accepts(text)
    assert parse_tool_calls(text, envelope=chosen) == [{"name": n, "arguments": a} for n, a in drawn]
    other = [e for e in ("json", "hermes", "fenced") if e not in chosen]
    if other:  # an envelope that was not chosen is not a call
        wrapped = WRAP[other[0]].format(_call(*drawn[0]))
        assert not g.accepts(wrapped)


@settings(max_examples=60, deadline=None)
@given(drawn=calls, data=st.data())
def test_a_fence_may_hold_the_turns_calls_as_a_list(drawn, data):
    chosen = data.draw(st.sampled_from([("fenced",), ("hermes", "fenced", "json")]))
    max_calls = data.draw(st.sampled_from([1, 2, 3, None]))
    indent = data.draw(st.sampled_from([None, 2]))
    listed = json.dumps([{"name": n, "arguments": a} for n, a in drawn], indent=indent,
                        separators=(",", ":") if indent is None else (",", ": "))
    text = "```json\n" + listed + "\n```"
    prose = data.draw(st.sampled_from(["", "Here you go:\n"]))
    fits = max_calls is None or len(drawn) <= max_calls
    g = grammar.tool_calls(TOOLS, envelope=chosen, max_calls=max_calls, whitespace=8, preamble=bool(prose))
    either = grammar.tool_calls_or_text(TOOLS, envelope=chosen, max_calls=max_calls, whitespace=8,
                                        preamble=bool(prose))
    assert g.accepts(prose + text) == fits and either.accepts(prose + text) == fits
    if fits:
        assert parse_tool_calls(prose + text, envelope=chosen, preamble=bool(prose)) == [
            {"name": n, "arguments": a} for n, a in drawn]
    # A fence holds a list, and so does the bare envelope; a tag does not.
    assert not grammar.tool_calls(TOOLS, envelope="hermes", max_calls=None, whitespace=8).accepts(listed)
    bare = grammar.tool_calls(TOOLS, envelope=("hermes", "json"), max_calls=max_calls, whitespace=8)
    assert bare.accepts(listed) == fits
    if fits:
        assert parse_tool_calls(listed, envelope=("hermes", "json")) == [{"name": n, "arguments": a} for n, a in drawn]
    assert not g.accepts("```json\n[]\n```") and not bare.accepts("[]")  # a list holds at least one call


@settings(max_examples=60, deadline=None)
@given(drawn=calls, data=st.data())
def test_a_fence_may_hold_the_turns_calls_one_a_line(drawn, data):
    chosen = data.draw(st.sampled_from([("fenced",), ("hermes", "fenced", "json")]))
    max_calls = data.draw(st.sampled_from([1, 2, 3, None]))
    prose = data.draw(st.sampled_from(["", "Here you go:\n"]))
    text = prose + "```json\n" + "\n".join(_call(n, a) for n, a in drawn) + "\n```"
    fits = max_calls is None or len(drawn) <= max_calls
    g = grammar.tool_calls(TOOLS, envelope=chosen, max_calls=max_calls, preamble=bool(prose))
    either = grammar.tool_calls_or_text(TOOLS, envelope=chosen, max_calls=max_calls, preamble=bool(prose))
    assert g.accepts(text) == fits and either.accepts(text) == fits
    if fits:
        assert parse_tool_calls(text, envelope=chosen, preamble=bool(prose)) == [
            {"name": n, "arguments": a} for n, a in drawn]
    # Held to one list, a fence holds a list and nothing else; a tag holds one call.
    listed = grammar.tool_calls(TOOLS, envelope=chosen, max_calls=None, preamble=bool(prose), listed=True)
    assert not listed.accepts(text)
    tagged = "<tool_call>\n" + "\n".join(_call(n, a) for n, a in drawn) + "\n</tool_call>"
    assert grammar.tool_calls(TOOLS, envelope="hermes", max_calls=None).accepts(tagged) == (len(drawn) == 1)


@settings(max_examples=60, deadline=None)
@given(drawn=calls, data=st.data())
def test_listed_calls_are_one_list_in_whichever_envelope_opens_them(drawn, data):
    chosen = data.draw(st.sampled_from([("hermes", "fenced", "json"), ("hermes", "fenced"), ("fenced",), ("json",)]))
    envelope = data.draw(st.sampled_from(chosen))
    max_calls = data.draw(st.sampled_from([1, 2, 3, None]))
    indent = data.draw(st.sampled_from([None, 2]))
    prose = data.draw(st.sampled_from(["", "Here you go:\n"])) if envelope != "json" else ""
    listed = json.dumps([{"name": n, "arguments": a} for n, a in drawn], indent=indent,
                        separators=(",", ":") if indent is None else (",", ": "))
    text = prose + WRAP[envelope].format(listed)
    fits = max_calls is None or len(drawn) <= max_calls
    options = {"envelope": chosen, "max_calls": max_calls, "whitespace": 8, "listed": True}
    delimited = any(e != "json" for e in chosen)
    g = grammar.tool_calls(TOOLS, preamble=bool(prose), **options)
    either = grammar.tool_calls_or_text(TOOLS, preamble=delimited and bool(prose), **options)
    assert g.accepts(text) == fits and either.accepts(text) == fits
    if fits:
        assert parse_tool_calls(text, envelope=chosen, preamble=bool(prose)) == [
            {"name": n, "arguments": a} for n, a in drawn]
    # Listed, a call is never written alone, nor as several envelopes one after another.
    alone = prose + WRAP[envelope].format(_call(*drawn[0]))
    assert not g.accepts(alone) and not either.accepts(alone)
    assert grammar.tool_calls(TOOLS, preamble=bool(prose), **{**options, "listed": False}).accepts(alone)
    twice = WRAP[envelope].format(listed) + "\n" + WRAP[envelope].format(listed)
    assert not grammar.tool_calls(TOOLS, **{**options, "max_calls": None}).accepts(twice)


def test_python_calls_are_a_list_already():
    """`listed` changes nothing for the python envelope, whose calls are always one list."""
    for text in ('[add(a=1, b=2), add(a=3, b=4)]', 'add(a=1, b=2)'):
        assert grammar.tool_calls(TOOLS, envelope="python", max_calls=2, listed=True).accepts(text)


def test_text_never_opens_as_a_bare_list_of_calls():
    """Where the bare envelope may hold a list of calls, an answer that opens with `[` would be
    read as one: text may not open with it (inside the text it is free)."""
    for preamble in (False, True):
        either = grammar.tool_calls_or_text(TOOLS, envelope=("hermes", "fenced", "json"), preamble=preamble)
        assert not either.accepts("[1] is the answer")
        assert either.accepts("The answer is [1].")
        assert parse_tool_calls("The answer is [1].", envelope=("hermes", "fenced", "json"), preamble=preamble) is None
    assert grammar.tool_calls_or_text(TOOLS, envelope="hermes").accepts("[1] is the answer")


def test_whitespace_is_bounded_and_off_by_default():
    spaced = json.dumps({"name": "add", "arguments": {"a": 1, "b": 2}}, indent=2)
    assert not grammar.tool_calls(TOOLS).accepts(spaced)
    assert grammar.tool_calls(TOOLS, whitespace=5).accepts(spaced)  # a newline and four spaces
    assert not grammar.tool_calls(TOOLS, whitespace=2).accepts(spaced.replace("\n  ", "\n      "))


@settings(max_examples=80, deadline=None)
@given(text=st.text(alphabet="`json{<tool_call> x\n", min_size=1, max_size=14))
def test_text_is_exactly_what_opens_no_chosen_envelope(text):
    chosen = ("hermes", "fenced")
    g = grammar.tool_calls_or_text(TOOLS, envelope=chosen)
    stripped = text.lstrip(" \t\r\n")
    opens_a_call = any(stripped.startswith(o) for o in ("{", "<tool_call>", "```json"))
    assert g.accepts(text) == (bool(stripped) and not opens_a_call)


def test_unknown_envelopes_are_refused():
    with pytest.raises(grammar.CompileError, match="unknown envelope 'xml'"):
        grammar.tool_calls(TOOLS, envelope=("json", "xml"))
    with pytest.raises(grammar.CompileError, match="at least one envelope"):
        grammar.tool_calls(TOOLS, envelope=())


def test_errors_name_the_tool_and_place():
    bad = ToolSchema("bad", {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?=a)"}}})
    with pytest.raises(grammar.CompileError) as info:
        grammar.tool_calls([bad])
    assert "bad" in str(info.value) and "/bad/properties/x" in str(info.value)
    with pytest.raises(grammar.CompileError, match="unique"):
        grammar.tool_calls([ADD, ADD])
    with pytest.raises(grammar.CompileError, match="at least one"):
        grammar.tool_calls([])
    with pytest.raises(grammar.CompileError, match="object"):
        grammar.arguments({"type": "string"})


def test_tool_grammar_renders_well_formed_gbnf():
    text = grammar.tool_calls_or_text(TOOLS, envelope="hermes", max_calls=3).to_gbnf()
    assert grammar.gbnf_problem(text) is None


def test_either_accepts_a_sentence_of_any_part_and_keeps_what_each_dropped():
    calls = grammar.tool_calls([grammar.ToolSchema("tag", {"type": "object", "properties": {
        "labels": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}},
        "additionalProperties": False})], lenient=True)
    answer = grammar.from_json_schema({"type": "object", "properties": {"root": {"type": "integer"}},
                                       "required": ["root"], "additionalProperties": False})
    g = grammar.either(calls, answer)
    assert g.accepts('{"name":"tag","arguments":{"labels":["a"]}}')
    assert g.accepts('{"root":1}')
    assert not g.accepts('{"root":"x"}') and not g.accepts('{"name":"tag","arguments":{"root":1}}')
    assert [d.keyword for d in g.dropped] == ["uniqueItems"]
    with pytest.raises(grammar.CompileError):
        grammar.either()


# --- text before the first call (preamble) ----------------------------------------------------

OPENINGS = ("<tool_call>", "```json")
prose_text = st.text(alphabet="`json{<tool_call>} x.\n", min_size=1, max_size=24)


def _is_prose(text: str) -> bool:
    """Text a preamble may be: not blank, not starting like a bare call, holding no opening."""
    stripped = text.lstrip(" \t\r\n")
    return bool(stripped) and not stripped.startswith("{") and not any(o in text for o in OPENINGS)


@settings(max_examples=120, deadline=None)
@given(text=prose_text)
def test_a_preamble_answer_is_exactly_text_holding_no_opening(text):
    g = grammar.tool_calls_or_text(TOOLS, envelope=("hermes", "fenced", "json"), preamble=True)
    if _is_prose(text):
        assert g.accepts(text)
        assert parse_tool_calls(text, envelope=("hermes", "fenced", "json"), preamble=True) is None
    elif not any(o in text for o in OPENINGS):  # blank, or a bare object that is no call
        assert not g.accepts(text)


@settings(max_examples=80, deadline=None)
@given(prose=prose_text.filter(_is_prose), drawn=calls, data=st.data())
def test_calls_may_follow_a_preamble_and_parse_as_the_calls(prose, drawn, data):
    chosen = data.draw(st.sampled_from([("hermes", "fenced", "json"), ("fenced",), ("hermes", "json")]))
    delimited = [e for e in chosen if e != "json"]
    pieces = [WRAP[data.draw(st.sampled_from(delimited if i == 0 else chosen))].format(_call(*call))
              for i, call in enumerate(drawn)]
    text = prose + data.draw(st.sampled_from(["", "\n", "\n\n", " "])) + "\n".join(pieces)
    either = grammar.tool_calls_or_text(TOOLS, envelope=chosen, max_calls=3, preamble=True)
    only = grammar.tool_calls(TOOLS, envelope=chosen, max_calls=3, preamble=True)
    assert either.accepts(text) and only.accepts(text)
    expected = [{"name": n, "arguments": a} for n, a in drawn]
    assert parse_tool_calls(text, envelope=chosen, preamble=True) == expected
    assert not grammar.tool_calls(TOOLS, envelope=chosen, max_calls=3).accepts(text)  # off by default


def test_an_opening_in_the_text_must_begin_a_call():
    g = grammar.tool_calls_or_text(TOOLS, envelope="hermes", preamble=True)
    assert not g.accepts("I will call <tool_call> now.")
    assert g.accepts("See ```json\n{}\n```")  # only the chosen envelopes' openings begin calls
    assert g.accepts("See ```python\nprint(1)\n``` and <tool_ for tags.")
    fenced = grammar.tool_calls_or_text(TOOLS, envelope=("hermes", "fenced"), preamble=True)
    assert not fenced.accepts("See ```json\n{}\n```")


def test_a_preamble_alone_is_no_call():
    only = grammar.tool_calls(TOOLS, envelope=("hermes", "fenced"), preamble=True)
    assert not only.accepts("I will look that up.")
    assert only.accepts("I will look that up.\n<tool_call>\n" + _call("add", {"a": 1, "b": 2}) + "\n</tool_call>")


def test_a_preamble_needs_a_delimited_envelope():
    with pytest.raises(grammar.CompileError, match="preamble") as info:
        grammar.tool_calls_or_text(TOOLS, envelope="json", preamble=True)
    assert info.value.keyword == "preamble"


@pytest.mark.parametrize("preamble", [True, False])
@pytest.mark.parametrize("space", ["\x0b", "\x0c", "\u00a0"])
def test_text_opening_with_another_space_is_free_text_to_grammar_and_parser_alike(preamble, space):
    """A vertical tab or a no-break space is no blank around a call: the grammar reads what
    follows as free text, and so must the parser (not a call to run, nor a malformed one)."""
    chosen = ("hermes", "fenced", "json")
    g = grammar.tool_calls_or_text(TOOLS, envelope=chosen, max_calls=2, preamble=preamble, listed=False)
    for text in (space + "[{", space + "[" + _call("add", {"a": 1, "b": 2}) + "]"):
        assert g.accepts(text)
        assert parse_tool_calls(text, envelope=chosen, preamble=preamble) is None


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_walks_under_a_preamble_grammar_never_dead_end_and_parse(data):
    from runtimes.testing import synthetic_vocabulary

    chosen = ("hermes", "fenced", "json")
    listed = data.draw(st.booleans())
    g = grammar.tool_calls_or_text(TOOLS, envelope=chosen, max_calls=2, preamble=True, listed=listed)
    text = token_walk(g, synthetic_vocabulary(), lambda n: data.draw(st.integers(0, n - 1)), 60, 200)
    assert g.accepts(text)
    found = parse_tool_calls(text, envelope=chosen, preamble=True)
    assert found is None or all(c["name"] in {"add", "get_weather"} for c in found)

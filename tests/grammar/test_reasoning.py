"""A reasoning span before a grammar's sentence: the span ends exactly where its close first
appears (also for closes that overlap themselves), then the body follows; `split` reads it the
same way."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import grammar
from grammar import CompileError, ReasoningSpan, after_reasoning

BODY = grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                                 "additionalProperties": False})
DOC = '{"a":1}'

# Small alphabets, so random texts often hold (partial) closes, self-overlapping ones included.
closes = st.text(alphabet="ab<", min_size=1, max_size=4)
texts = st.text(alphabet="ab< x", max_size=12)


def first_close_split(text: str, span: ReasoningSpan) -> str | None:
    """What follows the span, by the definition: open, then text up to the first close."""
    if not text.startswith(span.open):
        return None
    end = text.find(span.close, len(span.open))
    return None if end < 0 else text[end + len(span.close):]


@given(closes, texts, st.sampled_from(["", "\n", " \n"]))
def test_the_span_ends_at_the_first_close(close: str, inside: str, blanks: str) -> None:
    span = ReasoningSpan("<t>", close)
    g = after_reasoning(BODY, span, required=True)
    text = span.open + inside + close + blanks + DOC
    rest = first_close_split(text, span)
    assert rest is not None
    expected = rest.lstrip(" \n") == DOC
    assert g.accepts(text) == expected
    assert (span.split(text)[1] == DOC) == expected


@given(closes, texts)
def test_any_text_is_accepted_exactly_when_its_first_close_is_followed_by_the_body(close: str, text: str) -> None:
    span = ReasoningSpan("<t>", close)
    g = after_reasoning(BODY, span, required=True)
    candidate = span.open + text
    rest = first_close_split(candidate, span)
    assert g.accepts(candidate) == (rest is not None and rest.lstrip(" \t\n\r") == DOC)


def test_the_span_is_required_unless_said_otherwise() -> None:
    optional = after_reasoning(BODY, required=False)
    required = after_reasoning(BODY)
    assert optional.accepts(DOC) and not required.accepts(DOC)
    for g in (optional, required):
        assert g.accepts("<think>Add one.</think>\n" + DOC)
        assert not g.accepts("<think>Add one." + DOC)  # never closed
        assert not g.accepts("<think>a</think>b</think>" + DOC)  # the first close ends it
    assert optional.reasoning == ReasoningSpan()


def test_blanks_after_the_close_are_bounded() -> None:
    """After a close the runtime wrote, a model may go on with blanks: a few, not its budget."""
    g = after_reasoning(BODY)
    assert g.accepts("<think>x</think>\n\n" + DOC) and not g.accepts("<think>x</think>" + " " * 5 + DOC)


def test_split() -> None:
    span = ReasoningSpan()
    assert span.split("<think>x</think>\n {}") == ("x", "{}")
    assert span.split("{}") == (None, "{}")
    assert span.split("<think>x") == (None, "<think>x")


def test_it_renders_as_gbnf_that_reads_back_the_same() -> None:
    g = after_reasoning(BODY, ReasoningSpan("<t>", "aab"), required=False)
    back = grammar.from_gbnf(g.to_gbnf())
    for text in ["<t>aaab" + DOC, "<t>aab" + DOC, "<t>aaab" + "x" + DOC, DOC, "<t>ab" + DOC]:
        assert back.accepts(text) == g.accepts(text)


@pytest.mark.parametrize("span", [dict(open="", close="x"), dict(close=""), dict(max_tokens=-1)])
def test_a_span_that_cannot_work_is_refused(span: dict) -> None:
    with pytest.raises(CompileError, match="reasoning"):
        ReasoningSpan(**span)


def test_tool_calls_after_reasoning() -> None:
    tools = [grammar.ToolSchema("add", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})]
    g = after_reasoning(grammar.tool_calls(tools))
    text = '<think>The user wants a sum.</think>\n{"name":"add","arguments":{"a":2}}'
    assert g.accepts(text)
    reasoning, rest = ReasoningSpan().split(text)
    assert reasoning == "The user wants a sum." and json.loads(rest)["arguments"] == {"a": 2}

"""Stored conversations: every message list a run takes is stored and loads back equal (any
role, content as text, parts or None, keys of its own holding JSON values); what JSON cannot
hold, and nesting past the bound agentkit reads, are `InvalidArgument`s naming the place, never
a raw `TypeError` or `RecursionError`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Agent, InvalidArgument, messages_from_json, messages_to_json
from agentkit._bounds import MAX_NESTING
from agentkit._loop.history import HISTORY_NESTING
from agentkit._inputs import check_prompt
from runtimes.testing import ScriptedRuntime

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
PART = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, TEXT),
    st.dictionaries(TEXT, JSON_VALUE, max_size=3),
)
CONTENT = st.one_of(TEXT, st.none(), st.lists(PART, max_size=3), st.just("absent"))
ROLE = st.one_of(st.sampled_from(["system", "developer", "user", "assistant", "tool"]), TEXT.filter(bool))
EXTRA = st.dictionaries(TEXT.filter(lambda k: k not in ("role", "content", "tool_calls", "tool_call_id", "name")),
                        JSON_VALUE, max_size=2)
CALL_PART = st.builds(
    lambda i, name, args: {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}},
    TEXT, TEXT, st.dictionaries(TEXT, JSON_VALUE, max_size=3),
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": draw(ROLE), **draw(EXTRA)}
    content = draw(CONTENT)
    if content != "absent":
        message["content"] = content
    if message["role"] == "assistant" and draw(st.booleans()):
        message["tool_calls"] = draw(st.lists(CALL_PART, max_size=2))
    if message["role"] == "tool":
        if draw(st.booleans()):
            message["tool_call_id"] = draw(TEXT)
        if draw(st.booleans()):
            message["name"] = draw(TEXT)
    return message


@given(st.lists(messages(), max_size=6))
@settings(max_examples=200, deadline=None)
def test_every_message_list_a_run_takes_loads_back_equal(history: list[dict[str, Any]]) -> None:
    check_prompt(history)  # a run takes it
    text = messages_to_json(history)
    assert messages_from_json(text) == history
    assert messages_from_json(text.encode("utf-8")) == history
    assert messages_to_json(messages_from_json(text)) == text


def test_a_run_with_parts_a_developer_message_and_no_content_is_stored() -> None:
    history: list[dict[str, Any]] = [
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "Paris.", "tags": ["a", {"b": 1}]},
    ]
    result = Agent([], ScriptedRuntime(["Il pleut."])).run_sync(history)
    assert result.messages[:4] == history
    assert messages_from_json(messages_to_json(result.messages)) == result.messages


@pytest.mark.parametrize("value, where, cause", [
    ({1, 2}, "messages[0]['tags']", "set"),
    ([object()], "messages[0]['tags'][0]", "object"),
    ({1: "a"}, "messages[0]['tags']", "key 1"),
    (float("nan"), "messages[0]['tags']", "nan"),
    ({"a": "\ud800"}, "messages[0]['tags']['a']", "surrogate"),
    (10 ** 5000, "messages[0]['tags']", "digits"),
], ids=["set", "object", "int key", "nan", "surrogate", "long int"])
def test_a_value_json_cannot_hold_is_named(value: Any, where: str, cause: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        messages_to_json([{"role": "user", "content": "hi", "tags": value}])
    assert info.value.argument == where and cause in info.value.reason


def _nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


@given(levels=st.integers(1, 3 * MAX_NESTING) | st.sampled_from([1_500, 100_000]))
@settings(max_examples=60, deadline=None)
def test_nesting_is_read_to_the_bound_and_refused_past_it(levels: int) -> None:
    """A message's values may nest `MAX_NESTING` levels (the list and the message around them):
    within, stored and loaded equal; past it, an `InvalidArgument` both ways."""
    text = '[{"role":"user","content":"x","deep":' + "[" * levels + "]" * levels + "}]"
    fits = levels <= MAX_NESTING
    if fits:
        loaded = messages_from_json(text)
        assert messages_from_json(messages_to_json(loaded)) == loaded
    else:
        with pytest.raises(InvalidArgument) as info:
            messages_from_json(text)
        assert info.value.argument == "text" and f"nests {levels + HISTORY_NESTING} levels" in info.value.reason
        if levels < 5_000:
            with pytest.raises(InvalidArgument) as stored:
                messages_to_json([{"role": "user", "content": "x", "deep": _nested(levels)}])
            assert stored.value.argument.startswith("messages[0]['deep'][0]")


@pytest.mark.parametrize("text, where", [
    ('[{"content": "x"}]', "text[0]"),
    ('[{"role": "", "content": "x"}]', "text[0]['role']"),
    ('[{"role": "tool", "content": "x", "tool_call_id": 3}]', "text[0]['tool_call_id']"),
    ('[{"role": "user", "content": {"a": 1}}]', "text[0]['content']"),
    ('[1]', "text[0]"),
    (b"\xff\xfe[", "text"),
])
def test_what_no_run_takes_is_named(text: str | bytes, where: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        messages_from_json(text)
    assert info.value.argument == where

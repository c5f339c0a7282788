"""Every `generate` and `stream` call checks its arguments first: a bad one is an
`InvalidRequest` naming it, on the local decode loop and the test runtimes alike, never an
error from a template, a tokenizer or numpy."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtimes import Generation, InvalidRequest, Runtime, RuntimeFailure
from runtimes.testing import RandomRuntime, ScriptedRuntime

BAD = [
    ({"messages": [{"content": "x"}]}, "messages[0].role"),
    ({"messages": ["x"]}, "messages[0]"),
    ({"messages": None}, "messages"),
    ({"messages": [{"role": "user", "content": 7}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "x", "name": "\ud800"}]}, "messages[0].name"),
    ({"messages": "\udc80"}, "messages"),
    ({"max_tokens": "5"}, "max_tokens"),
    ({"max_tokens": float("nan")}, "max_tokens"),
    ({"max_tokens": 2.5}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"seed": -1}, "seed"),
    ({"seed": 2**64}, "seed"),
    ({"seed": 1.0}, "seed"),
    ({"temperature": float("nan")}, "temperature"),
    ({"top_p": 0}, "top_p"),
    ({"top_p": 1.5}, "top_p"),
    ({"grammar": "root ::= x"}, "grammar"),
    ({"tools": [5]}, "tools"),
]


def runtimes_under_test() -> list[Runtime]:
    return [RandomRuntime(), ScriptedRuntime(["ok"])]


@pytest.mark.parametrize("streamed", [False, True], ids=["generate", "stream"])
@pytest.mark.parametrize(("options", "argument"), BAD, ids=[a for _, a in BAD])
def test_a_bad_argument_is_an_invalid_request_naming_it(options: dict[str, Any], argument: str, streamed: bool) -> None:
    for rt in runtimes_under_test():
        arguments = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, **options}
        messages = arguments.pop("messages")
        with pytest.raises(InvalidRequest) as info:
            if streamed:
                rt.stream(messages, **arguments)
            else:
                asyncio.run(rt.generate(messages, **arguments))
        assert info.value.argument == argument, rt.name
        assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


def test_the_largest_seed_and_a_message_without_content_are_accepted() -> None:
    rt = RandomRuntime()
    out = asyncio.run(rt.generate([{"role": "user", "content": None}], max_tokens=2, seed=2**64 - 1))
    assert isinstance(out, Generation)


JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=8),
    st.sampled_from(["\ud800", "a\udfffb", "\x00", "<|im_end|>"]),
)
# Counts that are ints stay small, so a valid budget ends soon.
COUNTS = st.one_of(st.integers(-3, 16), JUNK.filter(lambda v: isinstance(v, bool) or not isinstance(v, int)))
MESSAGES = st.one_of(
    JUNK,
    st.lists(st.one_of(JUNK, st.dictionaries(st.sampled_from(["role", "content", "name"]), JUNK, max_size=3)),
             max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(messages=MESSAGES, max_tokens=COUNTS, temperature=JUNK, seed=JUNK)
def test_random_arguments_give_a_generation_or_a_typed_failure(messages: Any, max_tokens: Any, temperature: Any,
                                                               seed: Any) -> None:
    rt = RandomRuntime()
    try:
        out = asyncio.run(rt.generate(messages, max_tokens=max_tokens, temperature=temperature, seed=seed))
    except RuntimeFailure:
        return
    assert isinstance(out, Generation)

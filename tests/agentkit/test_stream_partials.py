"""Partial values read incrementally: after every piece the reader holds exactly the partial
value of the text so far (against an oracle that reads each prefix whole), the values shown
are those changes (all of them while the value is small), the work is linear in the answer,
and nesting is held to the bound the whole answer's check applies, with the same error."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentkit import Agent, OutputValidationError, PartialOutput, astream_extract, extract, stream_extract
from agentkit._bounds import MAX_NESTING, value_depth
from agentkit._outputs.partial import COPY_PER_CHARACTER, NO_VALUE, Partials, PartialJSON, consistent
from runtimes import Generation, Usage
from runtimes.testing import ScriptedRuntime

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=24,
)
PIECES = st.lists(st.integers(1, 7), min_size=1, max_size=400)


# The oracle: each prefix read whole, recursively (the values here are shallow), by the rule the
# docs state: containers open so far, strings once closed, numbers once what follows ends them,
# literals once whole.
class _Cut(Exception):
    """The prefix ends inside a scalar."""


_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def oracle(text: str) -> Any:
    i = _blank(text, 0)
    if i == len(text):
        return NO_VALUE
    try:
        return _oracle_value(text, i)[0]
    except _Cut:
        return NO_VALUE


def _blank(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _oracle_value(text: str, i: int) -> tuple[Any, int | None]:
    """(value, offset after it, or None where the text ends inside it); `_Cut` for a cut scalar."""
    c = text[i]
    if c in "[{":
        closing, out = ("]", []) if c == "[" else ("}", {})
        i = _blank(text, i + 1)
        if i < len(text) and text[i] == closing:
            return out, i + 1
        while i < len(text):
            key = None
            if closing == "}":
                try:
                    key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
                except json.JSONDecodeError:
                    return out, None
                i = _blank(text, i)
                if i == len(text):
                    return out, None
                i = _blank(text, i + 1)  # past ':'
                if i == len(text):
                    return out, None
            try:
                value, end = _oracle_value(text, i)
            except _Cut:
                return out, None
            if key is None:
                out.append(value)
            else:
                out[key] = value
            if end is None:
                return out, None
            i = _blank(text, end)
            if i == len(text):
                return out, None
            if text[i] == closing:
                return out, i + 1
            i = _blank(text, i + 1)  # past ','
        return out, None
    if c == '"':
        try:
            return json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined,no-any-return]
        except json.JSONDecodeError:
            raise _Cut from None
    for word, literal in (("true", True), ("false", False), ("null", None)):
        if text.startswith(word, i):
            return literal, i + len(word)
        if word.startswith(text[i:]):
            raise _Cut
    found = _NUMBER.match(text, i)
    end = i if found is None else found.end()
    if end == len(text) or text[end] in "0123456789.eE+-":  # more of it may follow
        raise _Cut
    return json.loads(text[i:end]), end


def same(a: Any, b: Any) -> bool:
    return consistent(a, b) and consistent(b, a)


def cut(text: str, sizes: list[int]) -> Iterator[str]:
    at = 0
    for size in sizes:
        if at >= len(text):
            break
        yield text[at:at + size]
        at += size
    if at < len(text):
        yield text[at:]


@given(value=JSON, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans(), sizes=PIECES)
@settings(max_examples=300, deadline=None)
def test_after_each_piece_the_reader_holds_the_prefixs_partial_value(value: Any, indent: int | None,
                                                                   ascii_only: bool, sizes: list[int]) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    reader, read, taken = PartialJSON(), "", NO_VALUE
    for piece in cut(text, sizes):
        reader.feed(piece)
        read += piece
        expected = oracle(read)
        assert reader.changed == (expected is not NO_VALUE and (taken is NO_VALUE or not same(expected, taken)))
        got = reader.value()
        assert (got is NO_VALUE) if expected is NO_VALUE else same(got, expected), (read, got, expected)
        taken = got
    assert read == text


@given(value=JSON, sizes=PIECES)
@settings(max_examples=300, deadline=None)
def test_the_values_shown_are_the_changes_and_all_of_them_while_the_value_is_small(value: Any,
                                                                                  sizes: list[int]) -> None:
    text = json.dumps(value, separators=(",", ":"))
    partials, read, changes, shown = Partials(), "", [], []
    for piece in cut(text, sizes):
        read += piece
        expected = oracle(read)
        if expected is not NO_VALUE and not (changes and same(changes[-1], expected)):
            changes.append(expected)
        got = partials.add(piece)
        if got is not NO_VALUE:
            assert same(got, expected)  # what is shown is the prefix's partial value, and new
            assert not shown or not same(got, shown[-1])
            shown.append(got)
    assert all(any(same(s, c) for c in changes) for s in shown)
    if len(text) <= COPY_PER_CHARACTER // 2:  # a small value pays for a copy at every change
        assert len(shown) == len(changes) and all(same(s, c) for s, c in zip(shown, changes))


def test_values_shown_are_copies_that_later_pieces_leave_alone() -> None:
    partials, shown = Partials(), []
    for piece in '{"a":[1,', '2],"b":{"c":', '"d"}}':
        got = partials.add(piece)
        if got is not NO_VALUE:
            shown.append((got, json.dumps(got)))
    assert [json.loads(text) for _, text in shown] == [{"a": [1]}, {"a": [1, 2], "b": {}}, {"a": [1, 2], "b": {"c": "d"}}]
    assert all(json.dumps(got) == text for got, text in shown)


SHAPES = {
    "flat numbers": lambda n: json.dumps(list(range(n // 5)), separators=(",", ":")),
    "many keys": lambda n: json.dumps({f"k{i}": i for i in range(n // 10)}, separators=(",", ":")),
    "records": lambda n: json.dumps([{"name": "Ann", "tags": ["a", "b"], "ok": True}] * (n // 40)),
    "long string": lambda n: json.dumps({"s": "word\\\"é " * (n // 10)}),
    "deep lists": lambda n: json.dumps([[[[[[1, 2]] * 3] * 3] * 3] * 3] * (n // 300)),
    "nested to the bound": lambda n: "[" * MAX_NESTING + "1" + "]" * MAX_NESTING,
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("piece", [1, 4])
def test_the_work_of_reading_is_linear_in_the_answer(shape: str, piece: int) -> None:
    """Characters examined and entries copied into the values shown, per character of the
    answer, bounded by constants whatever the answer's size and shape."""
    for size in (2_000, 16_000):
        text = SHAPES[shape](size)
        partials = Partials()
        shown = sum(partials.add(text[i:i + piece]) is not NO_VALUE for i in range(0, len(text), piece))
        reader = partials.reader
        assert shown and reader.stack == [] and reader.root is not NO_VALUE  # read whole
        assert reader.examined <= 2 * len(text), (shape, size)
        assert reader.copied <= COPY_PER_CHARACTER * len(text), (shape, size)


def _calls_while_streaming(answer: str) -> int:
    """Python and C function calls made while `astream_extract` streams `answer`."""
    rt = ScriptedRuntime([Generation(answer, "stop", Usage(1, len(answer)))])

    async def consume() -> None:
        async for _ in astream_extract(list[dict[str, int]], "x", runtime=rt, max_tokens=100_000):
            pass

    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    loop = asyncio.new_event_loop()
    try:
        sys.setprofile(profile)
        loop.run_until_complete(consume())
    finally:
        sys.setprofile(None)
        loop.close()
    return count


def test_streaming_an_answer_four_times_as_long_costs_about_four_times_as_much() -> None:
    """Counted in function calls, not time: re-reading the whole answer at every piece made a
    four times longer answer cost about sixteen times as much."""
    def answer(records: int) -> str:
        return json.dumps([{"a": i, "b": -i} for i in range(records)], separators=(",", ":"))

    short, long = _calls_while_streaming(answer(100)), _calls_while_streaming(answer(400))
    assert long <= 6 * short, (short, long)


# Nesting: one bound for streamed and whole answers, with the same error.

class Node(BaseModel):
    children: list[Node]


def _nested(levels: int) -> str:
    return '{"children":[' * levels + "]}" * levels


def _script(text: str) -> ScriptedRuntime:
    """A runtime that sends `text` whatever the grammar (as a server that ignored it may)."""
    return ScriptedRuntime([Generation(text, "stop", Usage(1, len(text)))])


@pytest.mark.parametrize("levels", [33, 300, 600, 1_500])
def test_a_deep_answer_streamed_gives_the_whole_answers_error(levels: int) -> None:
    text = _nested(levels)
    with pytest.raises(OutputValidationError) as whole:
        extract(Node, "x", runtime=_script(text), max_tokens=10**6, max_retries=0)
    shown = []
    with pytest.raises(OutputValidationError) as streamed:
        for value in stream_extract(Node, "x", runtime=_script(text), max_tokens=10**6):
            shown.append(value)
    assert streamed.value.violations == whole.value.violations
    assert [(v.keyword, v.enforced_by) for v in streamed.value.violations] == [("bounds", "parse")]
    assert str(2 * levels) in streamed.value.violations[0].message
    assert shown and all(value_depth(v) <= MAX_NESTING for v in shown)


def test_an_answer_at_the_bound_streams_whole_and_one_past_it_stops_showing() -> None:
    at = '{"children":[' * (MAX_NESTING // 2) + "]}" * (MAX_NESTING // 2)
    values = list(stream_extract(Node, "x", runtime=_script(at), max_tokens=10**6))
    assert isinstance(values[-1], Node) and values[-2] == json.loads(at)
    past = "[" + at + "]"
    partials = Partials()
    for i in range(0, len(past), 4):
        partials.add(past[i:i + 4])
    assert not partials.readable and len(partials.reader.stack) == MAX_NESTING


def test_an_agents_deep_streamed_answer_ends_as_its_whole_answer_does() -> None:
    text = _nested(600)

    def run(stream: bool) -> BaseException:
        agent = Agent([], _script(text), output_type=Node, max_retries=0)
        with pytest.raises(Exception) as info:
            if stream:
                events = list(agent.run_stream_sync("x"))
                assert not events  # never reached
            else:
                agent.run_sync("x")
        return info.value

    whole, streamed = run(False), run(True)
    assert type(streamed) is type(whole) and not isinstance(streamed, RecursionError)
    assert str(streamed) == str(whole)


def test_partial_outputs_show_nothing_past_the_bound() -> None:
    events = []
    agent = Agent([], _script(_nested(600)), output_type=Node, max_retries=0)
    with pytest.raises(Exception):
        for event in agent.run_stream_sync("x"):
            events.append(event)
    partials = [e for e in events if isinstance(e, PartialOutput)]
    assert partials and all(not p.complete for p in partials)

"""`extract_iter(T, text)` / `aextract_iter`: each `T` of the list, validated, handed over as
soon as its JSON closes in the stream; a failing item named by its index; budgets as `extract`'s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationInfo, field_validator

from agentkit import (
    IncompleteOutput,
    ModelRequestFailed,
    OutputValidationError,
    aextract_iter,
    extract,
    extract_iter,
)
from runtimes import Generation, Runtime, RuntimeFailure, TextStream, Usage
from runtimes.testing import FunctionRuntime, ScriptedRuntime


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
    tags: list[str] = []

    @field_validator("age")
    @classmethod
    def below_the_context_limit(cls, age: int, info: ValidationInfo) -> int:
        if info.context is not None and age > info.context["oldest"]:
            raise ValueError(f"older than {info.context['oldest']}")
        return age


class PiecesRuntime(Runtime):
    """Streams the given pieces as they are (no grammar check), then finishes with `ending`:
    a finish reason, or an exception raised after the last piece."""

    name = "pieces"

    def __init__(self, pieces: list[str], ending: str | Exception = "grammar_complete"):
        self.pieces = pieces
        self.ending = ending

    async def _generate(self, request: Any) -> Generation:
        raise AssertionError("extract_iter streams")

    def _stream(self, request: Any) -> TextStream:
        async def produce(put: Callable[[str], None]) -> Generation:
            for piece in self.pieces:
                put(piece)
                await asyncio.sleep(0)
            if isinstance(self.ending, Exception):
                raise self.ending
            text = "".join(self.pieces)
            return Generation(text, self.ending, Usage(10, len(text.encode())))

        return TextStream(produce)


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in zip(points, points[1:]) if b > a]


PEOPLE = st.lists(
    st.builds(dict, name=st.text(max_size=6), age=st.integers(0, 120), tags=st.lists(st.text(max_size=3), max_size=2)),
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(people=PEOPLE, cuts=st.lists(st.integers(0, 400), max_size=12))
def test_the_items_are_the_whole_lists_however_the_answer_is_cut(people: list[dict[str, Any]], cuts: list[int]) -> None:
    text = json.dumps(people, ensure_ascii=False, separators=(",", ":"))
    items = list(extract_iter(Person, "x", runtime=PiecesRuntime(_split(text, cuts)), max_tokens=10_000, grounded=False))
    assert items == extract(list[Person], "x", runtime=ScriptedRuntime([text]), max_tokens=10_000, grounded=False)
    assert all(isinstance(item, Person) for item in items)


@settings(max_examples=40, deadline=None)
@given(people=PEOPLE.filter(bool), data=st.data())
def test_each_item_is_handed_over_when_it_closes_before_any_later_text(people: list[dict[str, Any]], data: Any) -> None:
    """The stream fails right after item i's closing brace: items 0..i still come first."""
    items = [json.dumps(p, ensure_ascii=False, separators=(",", ":")) for p in people]
    index = data.draw(st.integers(0, len(people) - 1))
    written = "[" + ",".join(items[: index + 1])  # up to item i's closing brace, and no further
    runtime = PiecesRuntime(_split(written, data.draw(st.lists(st.integers(0, 400), max_size=6))),
                            RuntimeFailure("the connection dropped"))
    got: list[Person] = []
    with pytest.raises(ModelRequestFailed, match="connection dropped"):
        for item in extract_iter(Person, "x", runtime=runtime, max_tokens=10_000):
            got.append(item)
    assert got == [Person(**p) for p in people[: index + 1]]


def test_a_number_item_closes_with_the_comma_after_it() -> None:
    runtime = PiecesRuntime(["[1", "2,", "3"], RuntimeFailure("cut"))
    got: list[int] = []
    with pytest.raises(ModelRequestFailed):
        for item in extract_iter(int, "x", runtime=runtime):
            got.append(item)
    assert got == [12]


def test_a_failing_item_is_named_by_its_index_after_the_items_before_it() -> None:
    answer = '[{"name":"Ann","age":31},{"name":"Bob","age":90},{"name":"Cy","age":5}]'
    got: list[Person] = []
    with pytest.raises(OutputValidationError) as raised:
        for item in extract_iter(Person, "x", runtime=ScriptedRuntime([answer]), validation_context={"oldest": 80},
                                 grounded=False):
            got.append(item)
    assert got == [Person(name="Ann", age=31)]
    [violation] = raised.value.violations
    assert violation.field == "[1].age" and "older than 80" in violation.message
    assert raised.value.text == '{"name": "Bob", "age": 90}'
    assert raised.value.messages[-1]["role"] == "assistant"
    assert raised.value.messages[-1]["content"].startswith('[{"name":"Ann","age":31},{"name":"Bob","age":90}')


def test_a_schema_violation_of_an_item_is_named_by_its_index() -> None:
    class Scored(BaseModel):
        tags: set[str]  # uniqueItems: checked after decoding

    with pytest.raises(OutputValidationError) as raised:
        list(extract_iter(Scored, "x", runtime=ScriptedRuntime(['[{"tags":["a"]},{"tags":["b","b"]}]']), grounded=False))
    assert [v.field for v in raised.value.violations] == ["[1].tags"]
    with pytest.raises(OutputValidationError) as whole:
        list(extract_iter(int, "x", runtime=PiecesRuntime(['[1,"two"]'])))
    assert [v.field for v in whole.value.violations] == ["[1]"]


def test_the_validation_context_reaches_every_item() -> None:
    answer = '[{"name":"Ann","age":31},{"name":"Bob","age":40}]'
    assert [p.name for p in extract_iter(Person, "x", runtime=ScriptedRuntime([answer]),
                                          validation_context={"oldest": 50}, grounded=False)] == ["Ann", "Bob"]


def test_a_budget_that_runs_out_gives_the_closed_items_then_incomplete_output() -> None:
    answer = '[{"name":"Ann","age":31},{"name":"Bob","age":40}]'
    got: list[Person] = []
    with pytest.raises(IncompleteOutput) as raised:
        for item in extract_iter(Person, "x", runtime=ScriptedRuntime([answer]), max_tokens=30):
            got.append(item)
    assert got == [Person(name="Ann", age=31)]
    assert raised.value.text == answer[:30]


def test_an_empty_list_gives_nothing_and_the_model_is_asked_for_a_list() -> None:
    runtime = ScriptedRuntime(["[]"])
    assert list(extract_iter(Person, "nobody here", runtime=runtime)) == []
    assert '[{"name": <string>' in runtime.calls[0].messages[0]["content"]


def test_an_answer_that_is_no_json_list_fails_as_extract_does() -> None:
    with pytest.raises(OutputValidationError) as raised:
        list(extract_iter(int, "x", runtime=PiecesRuntime(["[1,", "2}"])))
    assert raised.value.violations[0].keyword == "json"
    with pytest.raises(OutputValidationError):
        list(extract_iter(int, "x", runtime=PiecesRuntime(['{"a":1}'])))


async def test_the_async_twin_hands_over_the_same_items_from_a_function_runtime() -> None:
    def answer(messages: Any, info: Any) -> str:
        return '[{"name":"Ann","age":31},{"name":"Bob","age":40}]'

    got = [p async for p in aextract_iter(Person, "Ann is 31, Bob 40.", runtime=FunctionRuntime(answer))]
    assert got == [Person(name="Ann", age=31), Person(name="Bob", age=40)]


async def test_the_sync_spelling_inside_an_event_loop_names_the_async_one() -> None:
    with pytest.raises(RuntimeError, match="aextract_iter"):
        extract_iter(int, "x", runtime=ScriptedRuntime(["[1]"]))


def test_leaving_early_closes_the_stream() -> None:
    closed: list[bool] = []

    class Watched(PiecesRuntime):
        def _stream(self, request: Any) -> TextStream:
            stream = super()._stream(request)
            close = stream.aclose

            async def aclose() -> None:
                closed.append(True)
                await close()

            stream.aclose = aclose  # type: ignore[method-assign]
            return stream

    for item in extract_iter(int, "x", runtime=Watched(["[1,", "2,", "3]"])):
        assert item == 1
        break
    assert closed == [True]

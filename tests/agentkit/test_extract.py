"""extract(T, text): one constrained generation, validated into T, or a typed error."""

from __future__ import annotations

import dataclasses
import typing
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel

from agentkit import IncompleteOutput, OutputValidationError, aextract, extract
from runtimes.testing import RandomRuntime, ScriptedRuntime


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]
    email: str | None = None


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pet(typing.TypedDict):
    name: str
    legs: int


def _even(n: int) -> int:
    if n % 2:
        raise ValueError("must be even")
    return n


class Even(BaseModel):
    n: Annotated[int, AfterValidator(_even)]


def test_extract_a_model() -> None:
    rt = ScriptedRuntime(['{"name":"Ann","age":31,"tags":["chess"]}'])
    person = extract(Person, "Ann, 31, plays chess.", runtime=rt)
    assert person == Person(name="Ann", age=31, tags=["chess"])
    request = rt.calls[0]
    assert request.grammar is not None
    assert request.messages[-1] == {"role": "user", "content": "Ann, 31, plays chess."}
    assert '"age"' in request.messages[0]["content"]


@pytest.mark.parametrize(
    "output_type, text, expected",
    [
        (Point, '{"x":1,"y":2}', Point(1, 2)),
        (Pet, '{"name":"Rex","legs":4}', {"name": "Rex", "legs": 4}),
        (list[Point], '[{"x":1,"y":2},{"x":3,"y":4}]', [Point(1, 2), Point(3, 4)]),
        (list[int], "[1,2,3]", [1, 2, 3]),
    ],
)
async def test_aextract_dataclass_typeddict_and_lists(output_type: object, text: str, expected: object) -> None:
    assert await aextract(output_type, "…", runtime=ScriptedRuntime([text]), grounded=False) == expected


def test_too_small_a_budget_is_a_typed_error_never_a_half_object() -> None:
    rt = ScriptedRuntime(['{"name":"Ann","age":31,"tags":["chess"]}'])
    with pytest.raises(IncompleteOutput) as info:
        extract(Person, "Ann, 31.", runtime=rt, max_tokens=10)
    assert info.value.text == '{"name":"A'
    assert info.value.messages[-1]["role"] == "user"


def test_a_value_failing_a_check_after_decoding_names_the_field() -> None:
    with pytest.raises(OutputValidationError) as info:
        extract(Even, "three", runtime=ScriptedRuntime(['{"n":3}']), max_retries=0)
    [violation] = info.value.violations
    assert (violation.field, violation.enforced_by) == ("n", "validator")
    assert "must be even" in violation.message


async def test_extract_inside_a_running_loop_points_to_aextract() -> None:
    with pytest.raises(RuntimeError, match="aextract"):
        extract(Person, "x", runtime=ScriptedRuntime([]))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000), budget=st.integers(1, 120))
def test_random_models_give_a_whole_value_or_a_typed_error(seed: int, budget: int) -> None:
    try:
        point = extract(Point, "x", runtime=RandomRuntime(seed=seed), max_tokens=budget)
    except IncompleteOutput as error:
        assert error.messages
        return
    assert isinstance(point, Point) and isinstance(point.x, int) and isinstance(point.y, int)

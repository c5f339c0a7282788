"""The promise, checked with a random model: whatever it writes under a tool's grammar parses
and validates into the tool's typed arguments; only constraints the report lists as checked
after decoding can fail."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from typing import Annotated, Literal, Optional

import annotated_types
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import grammar
from agentkit import ToolArgumentsError, tool
from agentkit._errors import OutputValidationError
from agentkit._outputs.output import OutputSpec
from runtimes.testing import RandomRuntime


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Address(BaseModel):
    street: str
    number: Annotated[int, annotated_types.Ge(1), annotated_types.Le(999)]


@dataclasses.dataclass
class Window:
    start: datetime.date
    days: int = 1


@tool
def book(
    guest: str,
    level: Level,
    rooms: Literal[1, 2, 3],
    address: Address,
    window: Window,
    note: Optional[str] = None,
    ids: tuple[uuid.UUID, ...] = (),
    extras: dict[str, int] | None = None,
) -> None:
    """Book rooms."""


@tool
def tag(labels: set[str], score: float = 0.0) -> None:
    """Tag things."""


TOOLS = {t.name: t for t in (book, tag)}


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 1_000_000), budget=st.integers(8, 400))
def test_random_calls_always_validate_into_the_typed_arguments(seed: int, budget: int) -> None:
    g = grammar.tool_calls([t.tool_schema() for t in TOOLS.values()], max_calls=2, lenient=True)
    generation = RandomRuntime(seed=seed).generate_sync("call", grammar=g, max_tokens=budget)
    if generation.finish_reason == "length":  # unfinished: the agent raises IncompleteOutput here
        return
    calls = grammar.parse_tool_calls(generation.text)
    assert calls, generation.text
    for call in calls:
        t = TOOLS[call["name"]]
        try:
            args = t.validate(call["arguments"])
        except ToolArgumentsError as error:
            assert all(v.enforced_by == "validator" for v in error.violations), (generation.text, str(error))
            continue
        assert isinstance(args, t.args_type)


def test_some_random_calls_finish() -> None:
    """The property above is not vacuous: with room to spare, random calls do finish."""
    g = grammar.tool_calls([t.tool_schema() for t in TOOLS.values()], max_calls=2, lenient=True)
    finished = [
        RandomRuntime(seed=seed).generate_sync("call", grammar=g, max_tokens=400).finish_reason for seed in range(4)
    ]
    assert "grammar_complete" in finished


class Person(BaseModel):
    name: str
    age: Annotated[int, annotated_types.Ge(0)]
    tags: list[str]
    email: str | None = None


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 1_000_000), budget=st.integers(12, 300))
def test_random_outputs_always_validate_into_the_output_type(seed: int, budget: int) -> None:
    spec = OutputSpec(list[Person])
    generation = RandomRuntime(seed=seed).generate_sync("x", grammar=spec.grammar, max_tokens=budget)
    assert generation.finish_reason == "grammar_complete"  # "[]" fits in any budget
    try:
        people = spec.validate(generation.text)
    except OutputValidationError as error:
        assert all(v.enforced_by == "validator" for v in error.violations), generation.text
        return
    assert all(isinstance(p, Person) for p in people)

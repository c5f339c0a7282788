"""Every way an agent run stops is a `RunError` that keeps the messages so far: an output that
fails validation past its corrections included (`OutputRetriesExceeded`, an
`OutputValidationError` too); `extract`'s stays an `OutputValidationError`."""

from __future__ import annotations

from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel

from agentkit import (
    Agent,
    ModelRetry,
    OutputRetriesExceeded,
    OutputValidationError,
    RunError,
    extract,
)
from runtimes.testing import ScriptedRuntime


def positive(n: int) -> int:
    if n <= 0:
        raise ValueError("must be positive")
    return n


class City(BaseModel):
    name: str
    population: Annotated[int, AfterValidator(positive)]  # checked after decoding, not by the grammar


def test_an_output_that_never_validates_is_a_run_error_with_its_messages() -> None:
    rt = ScriptedRuntime(['{"name":"Oslo","population":0}'] * 2)
    with pytest.raises(RunError) as info:
        Agent([], rt, output_type=City, max_retries=1).run_sync("Oslo?")
    error = info.value
    assert isinstance(error, OutputValidationError) and isinstance(error, OutputRetriesExceeded)
    assert [m["role"] for m in error.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert error.usage is not None and error.usage.completion_tokens > 0
    assert error.violations[0].field == "population"
    assert [r.subject for r in error.retries] == ["output", "output"]


def test_an_output_validator_that_always_refuses_is_a_run_error() -> None:
    def never(value: str) -> str:
        raise ModelRetry("no")

    rt = ScriptedRuntime(["a", "b"])
    with pytest.raises(RunError) as info:
        Agent([], rt, output_validator=never, max_retries=1).run_sync("?")
    assert isinstance(info.value, OutputValidationError)
    assert info.value.messages[-1] == {"role": "assistant", "content": "b"}


def test_extract_keeps_its_own_error() -> None:
    rt = ScriptedRuntime(['{"name":"Oslo","population":0}'] * 2)
    with pytest.raises(OutputValidationError) as info:
        extract(City, "Oslo has no one.", runtime=rt, max_retries=1)
    assert not isinstance(info.value, RunError)


@settings(max_examples=20, deadline=None)
@given(retries=st.integers(0, 3), population=st.integers(-5, 0))
def test_however_many_corrections_the_run_error_holds_every_turn(retries: int, population: int) -> None:
    answer = f'{{"name":"Oslo","population":{population}}}'
    rt = ScriptedRuntime([answer] * (retries + 1))
    try:
        Agent([], rt, output_type=City, max_retries=retries).run_sync("Oslo?")
    except RunError as error:
        assert sum(m["role"] == "assistant" for m in error.messages) == retries + 1
        assert isinstance(error, OutputValidationError)
    else:
        raise AssertionError("the run should have stopped")

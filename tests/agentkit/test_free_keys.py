"""A dict argument with a minimum size: the grammar cannot tell its keys apart (`{"a":1,"a":2}`
parses to one member), so the minimum is checked after decoding, reported so, and every local
run still works."""

from __future__ import annotations

from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from agentkit import Agent, RunError, ToolArgumentsError, tool
from runtimes import GrammarIgnored
from runtimes.testing import RandomRuntime, ScriptedRuntime


@tool
def total(counts: Annotated[dict[str, int], Field(min_length=2)]) -> int:
    """Add up counts of two kinds or more."""
    return sum(counts.values())


def call(arguments: str) -> str:
    return f'{{"name":"total","arguments":{arguments}}}'


def test_the_minimum_size_is_checked_after_decoding() -> None:
    report = total.constraints["counts"]
    assert "minProperties" in report.after_decoding
    assert "minProperties" not in report.by_grammar
    assert ("counts", "minProperties") in total.constraints.after_decoding


def test_two_distinct_keys_run_and_a_repeated_key_goes_back_to_the_model() -> None:
    runtime = ScriptedRuntime([call('{"counts":{"a":1,"a":2}}'), call('{"counts":{"a":1,"b":2}}'), "3"])
    result = Agent([total], runtime, max_steps=4).run_sync("add them")
    first, second = result.tool_calls
    assert isinstance(first.error, ToolArgumentsError)
    assert [(v.field, v.keyword, v.enforced_by) for v in first.error.violations] == [
        ("counts", "minProperties", "validator")
    ]
    assert second.error is None and second.result == 3


def test_one_member_is_outside_the_grammar() -> None:
    # The grammar still asks for two members; only their keys' distinctness is left over.
    runtime = ScriptedRuntime([call('{"counts":{"a":1}}')])
    with pytest.raises(RunError) as info:
        Agent([total], runtime, max_steps=2).run_sync("add them")
    assert isinstance(info.value.__cause__, GrammarIgnored)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_random_models_end_in_a_result_or_a_typed_error(seed: int) -> None:
    agent = Agent([total], RandomRuntime(seed=seed), max_steps=3, max_tokens=64)
    try:
        result = agent.run_sync("add them")
    except RunError as error:
        assert error.messages[0] == {"role": "user", "content": "add them"}
        return
    for record in result.tool_calls:
        if record.error is None:
            assert len(record.arguments.counts) >= 2

"""A tool's own budget of corrections: `@tool(retries=N)` / `Tool(fn, retries=N)`, the agent's
`max_retries` where a tool gives none."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Agent, ModelRetry, Tool, ToolDefinitionError, ToolRetriesExceeded, tool
from runtimes.testing import ScriptedRuntime


def call(name: str, arguments: str) -> str:
    return f'{{"name":"{name}","arguments":{arguments}}}'


def picky(failures: int, **options: Any) -> Tool:
    """A tool that asks again `failures` times, then answers."""
    seen = []

    def lookup(key: str) -> str:
        """Look a key up."""
        seen.append(key)
        if len(seen) <= failures:
            raise ModelRetry("try another key")
        return "found"

    return tool(lookup, **options)


def script(attempts: int) -> ScriptedRuntime:
    return ScriptedRuntime([call("lookup", f'{{"key":"k{i}"}}') for i in range(attempts)] + ["Done."])


def test_a_tools_own_retries_win_over_the_agents() -> None:
    with pytest.raises(ToolRetriesExceeded) as info:
        Agent([picky(1, retries=0)], script(2), max_retries=5, grounded_arguments=False).run_sync("?")
    assert info.value.tool == "lookup"
    result = Agent([picky(3, retries=3)], script(4), max_retries=0, grounded_arguments=False).run_sync("?")
    assert result.output == "Done." and len(result.retries) == 3


def test_the_constructor_and_schema_tools_take_retries() -> None:
    def lookup(key: str) -> str:
        """Look a key up."""
        raise ModelRetry("no")

    assert Tool(lookup, retries=1).retries == 1
    assert tool(lookup).retries is None
    schema_tool = Tool.from_json_schema("lookup", {"type": "object"}, lambda arguments: "x", retries=2)
    assert schema_tool.retries == 2
    with pytest.raises(ToolRetriesExceeded):
        Agent([Tool(lookup, retries=1)], script(2), max_retries=9, grounded_arguments=False).run_sync("?")


@pytest.mark.parametrize("retries", [-1, 1.5, True, "2"])
def test_retries_that_are_no_count_are_refused(retries: Any) -> None:
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    with pytest.raises(ToolDefinitionError, match="retries"):
        tool(lookup, retries=retries)


@settings(max_examples=20, deadline=None)
@given(failures=st.integers(0, 4), retries=st.one_of(st.none(), st.integers(0, 4)), max_retries=st.integers(0, 4))
def test_a_tool_is_corrected_exactly_as_often_as_its_budget(failures: int, retries: int | None, max_retries: int) -> None:
    budget = max_retries if retries is None else retries
    agent = Agent([picky(failures, retries=retries)], script(failures + 1), max_retries=max_retries,
                  grounded_arguments=False)
    if failures <= budget:
        assert agent.run_sync("?").output == "Done."
    else:
        with pytest.raises(ToolRetriesExceeded) as info:
            agent.run_sync("?")
        assert sum(m["role"] == "tool" for m in info.value.messages) == budget + 1

"""`Tool(fn, ...)` builds what `@tool` builds; the constructor's keyword forms (a schema, and the
arguments class it comes with) still build schema tools."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from agentkit import Agent, RunContext, Tool, ToolDefinitionError, tool
from runtimes.testing import ScriptedRuntime


def forecast(city: str, days: Annotated[int, Field(ge=1, le=7)] = 1) -> str:
    """The forecast for a city.

    Args:
        city: The city's name.
        days: How many days ahead.
    """
    return f"{city}: sunny for {days} days"


async def lookup(query: str, /, ctx: RunContext[Any]) -> list[str]:
    """Search."""
    return [query]


def shout(_word: str, *, times: int = 2) -> str:
    return _word.upper() * times


FUNCTIONS = [forecast, shout]
OPTIONS = st.fixed_dictionaries({}, optional={
    "name": st.sampled_from(["renamed", "other_name"]),
    "description": st.sampled_from(["", "Said otherwise."]),
    "strict": st.booleans(),
    "timeout": st.sampled_from([None, 0.5, 3.0]),
    "idempotent": st.booleans(),
    "requires_approval": st.booleans(),
})


def _built(t: Tool) -> dict[str, Any]:
    return {
        "name": t.name, "description": t.description, "schema": t.schema, "strict": t.strict,
        "timeout": t.timeout, "idempotent": t.idempotent, "requires_approval": t.requires_approval,
        "context_param": t.context_param, "is_async": t.is_async, "grammar": t.grammar.to_gbnf(),
        "args_schema": t.args_type.model_json_schema() if t.args_type else None,
        "constraints": {f: (c.by_grammar, c.after_decoding) for f, c in t.constraints.items()},
    }


@given(fn=st.sampled_from(FUNCTIONS), options=OPTIONS)
def test_the_constructor_builds_what_the_decorator_builds(fn: Any, options: dict[str, Any]) -> None:
    try:
        decorated = tool(**options)(fn)
    except ToolDefinitionError as exc:  # strict refusals: the constructor refuses alike
        with pytest.raises(ToolDefinitionError) as raised:
            Tool(fn, **options)
        assert str(raised.value) == str(exc)
        return
    assert _built(Tool(fn, **options)) == _built(decorated)


def test_a_constructed_tool_validates_and_calls_as_a_decorated_one() -> None:
    t = Tool(forecast)
    assert t.name == "forecast" and t.description == "The forecast for a city."
    assert t.schema["properties"]["city"]["description"] == "The city's name."
    arguments = t.validate({"city": "Oslo", "days": 2})
    assert asyncio.run(t.call(arguments)) == "Oslo: sunny for 2 days"
    assert t("Paris") == "Paris: sunny for 1 days"  # the function itself, unvalidated


def test_a_constructed_tool_takes_its_context_and_positional_parameters() -> None:
    t = Tool(lookup)
    assert t.is_async and t.context_param == "ctx" and list(t.schema["properties"]) == ["query"]
    assert asyncio.run(t.call(t.validate({"query": "q"}))) == ["q"]
    renamed = Tool(shout)
    assert list(renamed.schema["properties"]) == ["_word", "times"]
    assert asyncio.run(renamed.call(renamed.validate({"_word": "hi", "times": 3}))) == "HIHIHI"


def test_an_agent_calls_a_constructed_tool() -> None:
    rt = ScriptedRuntime(['[{"name":"forecast","arguments":{"city":"Oslo"}}]', "Sunny."])
    result = Agent([Tool(forecast)], rt).run_sync("Weather in Oslo?")
    assert result.output == "Sunny."
    assert result.tool_calls[0].result == "Oslo: sunny for 1 days"


def test_a_function_the_decorator_refuses_is_refused_alike() -> None:
    def untyped(city, days: int) -> str:  # type: ignore[no-untyped-def]
        return city

    with pytest.raises(ToolDefinitionError, match="'city'") as raised:
        Tool(untyped)
    assert raised.value.parameter == "city"


def test_the_keyword_form_with_a_schema_builds_a_schema_tool() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 5}}, "required": ["q"]}
    t = Tool(name="search", description="Search.", fn=lambda arguments: arguments, schema=schema, args_type=None)
    assert t.args_type is None and t.name == "search"
    assert t.validate({"q": "abc"}) == {"q": "abc"}
    assert _built(t) == _built(Tool.from_json_schema("search", schema, lambda arguments: arguments, description="Search."))
    unnamed = Tool(forecast, schema=schema)
    assert unnamed.name == "forecast" and unnamed.description == "" and unnamed.args_type is None


def test_an_arguments_class_without_its_schema_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="args_type"):
        Tool(forecast, args_type=tool(forecast).args_type)

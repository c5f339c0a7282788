"""@tool: one typed arguments class, one schema, one grammar, one constraint report, built from
the signature, and none of them drifting from the others."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import json
import threading
import typing
import uuid
from typing import Annotated, Any, Literal, Optional

import annotated_types
import jsonschema
import pydantic
import pydantic_core
import pytest
import typing_extensions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from agentkit import RunContext, Tool, ToolArgumentsError, ToolDefinitionError, ToolTimeout, tool
from agentkit._tools.types import prepare


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    zip: Annotated[str, Field(min_length=5, max_length=5)]


@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0


class Pet(typing.TypedDict):
    name: str
    legs: int


class Note(typing_extensions.TypedDict, total=False):
    text: str


TYPES: list[Any] = [
    str,
    int,
    float,
    bool,
    type(None),
    Optional[int],
    int | str,
    Literal["a", "b", 3],
    Color,
    Annotated[int, annotated_types.Ge(0), annotated_types.Le(9)],
    Annotated[str, annotated_types.MaxLen(3)],
    list[int],
    tuple[int, str],
    tuple[bool, ...],
    set[str],
    frozenset[int],
    dict[str, float],
    Address,
    Point,
    Pet,
    Note,
    datetime.datetime,
    datetime.date,
    uuid.UUID,
    list[Address | None],
    dict[str, list[Pet]],
]


def _tool_of(tp: Any) -> Tool:
    def fn(value: tp, flag: bool = False) -> Any:  # type: ignore[valid-type]
        return value

    fn.__annotations__["value"] = tp
    return Tool.from_function(fn, name="probe")


@pytest.mark.parametrize("tp", TYPES, ids=repr)
def test_every_supported_type_builds_a_valid_schema(tp: Any) -> None:
    t = _tool_of(tp)
    jsonschema.Draft202012Validator.check_schema(t.schema)
    assert t.schema["type"] == "object"
    assert t.schema["additionalProperties"] is False
    assert t.schema["required"] == ["value"]
    assert issubclass(t.args_type, BaseModel)


@pytest.mark.parametrize("tp", TYPES, ids=repr)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_values_of_the_type_round_trip_through_schema_and_validator(tp: Any, data: st.DataObject) -> None:
    """Every value of the type, as JSON, satisfies the schema and validates back to itself."""
    t = _tool_of(tp)
    adapter = pydantic.TypeAdapter(prepare(tp))
    value = data.draw(_values(tp).filter(_valid(adapter)))
    as_json = adapter.dump_python(value, mode="json")
    arguments = {"value": as_json}
    assert jsonschema.Draft202012Validator(t.schema, format_checker=jsonschema.FormatChecker()).is_valid(arguments)
    parsed = t.validate(arguments)
    assert parsed.value == adapter.validate_python(as_json)


def _values(tp: Any) -> st.SearchStrategy[Any]:
    """Values of `tp`; datetimes carry a UTC offset, as JSON Schema's date-time format requires
    (pydantic writes a naive datetime without one)."""
    if tp is datetime.datetime:
        return st.datetimes(timezones=st.just(datetime.timezone.utc))
    return st.from_type(tp)


def _valid(adapter: pydantic.TypeAdapter[Any]) -> Any:
    def ok(value: Any) -> bool:
        try:
            dumped = adapter.dump_python(value, mode="json")
            json.dumps(dumped, allow_nan=False)  # JSON has no NaN or infinity
            adapter.validate_python(dumped)
        except (pydantic.ValidationError, pydantic_core.PydanticSerializationError, ValueError):
            return False
        return True

    return ok


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.floats(-2, 2, allow_nan=False) | st.text("ab-0", max_size=6),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["street", "zip", "x", "y", "name", "legs", "text"]), inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.parametrize("tp", TYPES, ids=repr)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_json)
def test_validator_accepts_exactly_what_the_schema_accepts(tp: Any, value: Any) -> None:
    """No drift: a value the schema (hence the grammar) allows always validates, and the
    validator never lets through what the schema rejects."""
    t = _tool_of(tp)
    arguments = {"value": value}
    expected = jsonschema.Draft202012Validator(t.schema, format_checker=jsonschema.FormatChecker()).is_valid(arguments)
    try:
        t.validate(arguments)
        accepted = True
    except ToolArgumentsError:
        accepted = False
    assert accepted == expected


def test_docstring_gives_descriptions_and_context_is_injected() -> None:
    @tool
    async def lookup(ctx: RunContext[dict[str, int]], city: str, days: int = 1) -> str:
        """Forecast for a city.

        Args:
            city: Name of the city.
            days: How many days ahead.
        """
        return f"{city}:{days}:{ctx.deps['k']}"

    assert lookup.description == "Forecast for a city."
    assert set(lookup.schema["properties"]) == {"city", "days"}
    assert lookup.schema["properties"]["city"]["description"] == "Name of the city."
    assert lookup.schema["required"] == ["city"]
    assert lookup.context_param == "ctx"
    args = lookup.validate({"city": "Oslo"})
    assert isinstance(args, lookup.args_type)
    assert asyncio.run(lookup.call(args, RunContext(deps={"k": 7}))) == "Oslo:1:7"


def test_annotated_field_description_wins_over_docstring() -> None:
    @tool
    def f(x: Annotated[int, Field(description="from Field", ge=1)]) -> int:
        """F.

        Args:
            x: from docstring
        """
        return x

    assert f.schema["properties"]["x"] == {"description": "from Field", "minimum": 1, "type": "integer"}


def test_to_openai_shape() -> None:
    @tool(name="add_numbers", description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    spec = add.to_openai()
    assert spec["type"] == "function"
    assert spec["function"]["name"] == "add_numbers"
    assert spec["function"]["description"] == "Add two integers."
    assert spec["function"]["parameters"] == add.schema
    assert add(2, 3) == 5


def test_sync_tools_run_in_a_worker_thread() -> None:
    @tool
    def where() -> int:
        """Thread id."""
        return threading.get_ident()

    assert asyncio.run(where.call(where.validate({}))) != threading.get_ident()


def test_a_hanging_tool_times_out() -> None:
    @tool(timeout=0.05)
    async def hang() -> None:
        """Never returns."""
        await asyncio.sleep(3600)

    with pytest.raises(ToolTimeout) as info:
        asyncio.run(hang.call(hang.validate({})))
    assert info.value.tool == "hang"


def test_parameter_names_pydantic_reserves_are_kept() -> None:
    @tool
    def f(schema: str, _hidden: int = 0, /) -> tuple[str, int]:
        """F."""
        return schema, _hidden

    assert set(f.schema["properties"]) == {"schema", "_hidden"}
    args = f.validate({"schema": "s", "_hidden": 2})
    assert asyncio.run(f.call(args)) == ("s", 2)


class Opaque:
    pass


@pytest.mark.parametrize(
    "make, parameter, words",
    [
        (lambda: tool(lambda x: x), "x", "no type annotation"),
        (lambda: _def("def f(x: complex): pass"), "x", "complex"),
        (lambda: _def("def f(x: dict[int, str]): pass"), "x", "keys"),
        (lambda: _def("def f(a: int, x: Opaque): pass"), "x", "no JSON Schema"),
        (lambda: _def("def f(x: typing.Callable[[int], int]): pass"), "x", "no JSON Schema"),
        (lambda: _def("def f(*rest: int): pass"), "rest", "*args"),
        (lambda: _def("def f(a: RunContext, b: RunContext): pass"), "b", "RunContext"),
    ],
)
def test_unsupported_types_are_refused_at_decoration_naming_the_parameter(make: Any, parameter: str, words: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        make()
    assert info.value.parameter == parameter
    assert words in str(info.value)
    assert f"parameter {parameter!r}" in str(info.value)


def _def(source: str) -> Tool:
    scope: dict[str, Any] = {"typing": typing, "Opaque": Opaque, "RunContext": RunContext}
    exec(source, scope)
    return tool(scope["f"])


def test_validation_errors_name_field_keyword_and_who_enforces_it() -> None:
    @tool
    def f(tags: set[str], n: Annotated[int, Field(ge=1)] = 1) -> None:
        """F."""

    with pytest.raises(ToolArgumentsError) as info:
        f.validate({"tags": ["a"], "n": 0, "extra": True})
    found = {(v.field, v.keyword, v.enforced_by) for v in info.value.violations}
    placed_n = "validator" if "minimum" in f.constraints["n"].after_decoding else "grammar"
    assert ("n", "minimum", placed_n) in found
    assert ("", "additionalProperties", "grammar") in found


def test_set_uniqueness_is_reported_and_checked_after_decoding() -> None:
    @tool
    def f(tags: set[str]) -> int:
        """F."""
        return len(tags)

    report = f.constraints["tags"]
    assert "type" in report.by_grammar
    assert "uniqueItems" in report.after_decoding
    assert ("tags", "uniqueItems") in f.constraints.after_decoding
    with pytest.raises(ToolArgumentsError) as info:
        f.validate({"tags": ["x", "x"]})
    [v] = info.value.violations
    assert (v.field, v.keyword, v.enforced_by) == ("tags", "uniqueItems", "validator")
    assert "checked after decoding" in str(info.value)
    assert f.validate({"tags": ["x", "y"]}).tags == {"x", "y"}


def test_strict_refuses_a_tool_the_grammar_cannot_fully_enforce() -> None:
    with pytest.raises(ToolDefinitionError) as info:

        @tool(strict=True)
        def f(tags: set[str]) -> None:
            """F."""

    assert info.value.keyword == "uniqueItems"
    assert info.value.pointer == "/properties/tags" or info.value.pointer.startswith("/properties/tags")

    @tool(strict=True)
    def g(tags: list[str]) -> None:
        """G."""

    assert g.constraints.after_decoding == []


def test_schema_tools_take_validated_dicts_and_inject_context() -> None:
    seen: list[Any] = []

    def handler(arguments: dict[str, Any], ctx: RunContext[str]) -> str:
        seen.append((arguments, ctx.deps))
        return "ok"

    t = Tool.from_json_schema(
        "search",
        {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
         "required": ["query"], "additionalProperties": False},
        handler,
        description="Search.",
    )
    assert t.args_type is None
    args = t.validate('{"query": "x", "limit": 2}')
    assert args == {"query": "x", "limit": 2}
    assert asyncio.run(t.call(args, RunContext(deps="d"))) == "ok"
    assert seen == [({"query": "x", "limit": 2}, "d")]
    with pytest.raises(ToolArgumentsError) as info:
        t.validate({"limit": 0})
    assert {(v.field, v.keyword) for v in info.value.violations} == {("query", "required"), ("limit", "minimum")}


def test_openai_and_mcp_entries() -> None:
    parameters = {"type": "object", "properties": {"a": {"type": "boolean"}}}
    spec = {"type": "function", "function": {"name": "f", "description": "D.", "parameters": parameters}}
    assert Tool.from_openai(spec, lambda a: a).to_openai()["function"]["description"] == "D."
    entry = {"name": "g", "description": "E.", "inputSchema": {"type": "object", "properties": {}}}
    assert Tool.from_mcp(entry, lambda a: a).name == "g"


def test_a_schema_the_grammar_cannot_compile_is_refused_with_keyword_and_place() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Tool.from_json_schema("bad", {"type": "string"}, lambda a: a)
    assert info.value.keyword == "type"
    assert info.value.pointer is not None


def test_a_dropped_keyword_nothing_can_check_is_refused() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    with pytest.raises(ToolDefinitionError) as info:
        Tool.from_json_schema("remote", schema, lambda a: a)
    assert (info.value.keyword, info.value.pointer) == ("$ref", "/properties/a")
    assert "cannot check it after decoding" in str(info.value)


def test_a_dropped_keyword_the_validator_knows_is_checked_after_decoding() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "unevaluatedProperties": False}
    t = Tool.from_json_schema("closed", schema, lambda a: a)
    assert t.constraints[""].after_decoding == ("unevaluatedProperties",)
    assert t.validate({"a": "x"}) == {"a": "x"}
    with pytest.raises(ToolArgumentsError) as info:
        t.validate({"a": "x", "b": 1})
    [v] = info.value.violations
    assert (v.field, v.keyword, v.enforced_by) == ("", "unevaluatedProperties", "validator")


def test_schema_tool_constraint_report_and_check_after_decoding() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(?=A)[A-Z]{3}$"}}, "required": ["code"]}
    t = Tool.from_json_schema("lookup", schema, lambda a: a)
    assert t.constraints["code"].after_decoding == ("pattern",)
    assert t.validate({"code": "ABC"}) == {"code": "ABC"}
    with pytest.raises(ToolArgumentsError) as info:
        t.validate({"code": "BCD"})
    [v] = info.value.violations
    assert (v.field, v.keyword, v.enforced_by) == ("code", "pattern", "validator")
    with pytest.raises(ToolDefinitionError):
        Tool.from_json_schema("lookup", schema, lambda a: a, strict=True)


def test_a_ref_that_points_nowhere_is_refused_at_definition() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    with pytest.raises(ToolDefinitionError) as info:
        Tool.from_json_schema("dangling", schema, lambda a: a)
    assert (info.value.keyword, info.value.pointer) == ("$ref", "/properties/a")
    assert "points nowhere" in str(info.value)

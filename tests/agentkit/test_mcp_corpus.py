"""Every real MCP tool definition (527, from LiveMCPBench's captured `tools/list` output) either
becomes a tool or is refused with the keyword and the place named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentkit import Tool, ToolArgumentsError, ToolDefinitionError


def _entries(corpus: Path) -> list[dict[str, Any]]:
    path = corpus / "mcp" / "livemcpbench" / "tools_flat.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _handler(arguments: dict[str, Any]) -> dict[str, Any]:
    return arguments


@pytest.fixture(scope="module")
def outcomes(corpus: Path) -> list[tuple[dict[str, Any], Tool | ToolDefinitionError]]:
    """Each entry with its tool, or the refusal (built once: compiling 527 grammars takes a while)."""
    out: list[tuple[dict[str, Any], Tool | ToolDefinitionError]] = []
    for entry in _entries(corpus):
        spec = {"name": entry["tool"], "description": entry["description"], "inputSchema": entry["inputSchema"]}
        try:
            out.append((entry, Tool.from_mcp(spec, _handler)))
        except ToolDefinitionError as error:
            out.append((entry, error))
    return out


def test_each_mcp_tool_compiles_or_is_refused_with_keyword_and_place(outcomes: list[tuple[dict[str, Any], Any]]) -> None:
    assert len(outcomes) == 527
    built = [t for _, t in outcomes if isinstance(t, Tool)]
    refused = [e for _, e in outcomes if not isinstance(e, Tool)]
    for entry, error in outcomes:
        if isinstance(error, ToolDefinitionError):
            assert error.keyword, f"{entry['tool']}: refusal names no keyword: {error}"
            assert error.pointer is not None, f"{entry['tool']}: refusal names no place: {error}"
            assert error.keyword in str(error) and f"#{error.pointer}" in str(error)
    assert len(built) + len(refused) == 527
    assert len(built) >= 500, [str(e) for e in refused]
    for t in built:
        spec = t.to_openai()["function"]
        assert spec["name"] and spec["parameters"] == t.schema
        for field in t.constraints.values():
            assert not set(field.by_grammar) & set(field.after_decoding)


def test_mcp_arguments_arrive_as_validated_dicts(outcomes: list[tuple[dict[str, Any], Any]]) -> None:
    """For tools whose arguments are all optional, `{}` validates; an unknown key never does
    where the schema closes the object."""
    checked = 0
    for entry, t in outcomes:
        schema = entry["inputSchema"]
        if not isinstance(t, Tool):
            continue
        if not schema.get("required") and schema.get("additionalProperties") is False:
            assert t.validate({}) == {}
            try:
                t.validate({"__not_a_parameter__": 1})
            except ToolArgumentsError as error:
                assert error.violations[0].keyword == "additionalProperties"
            else:
                raise AssertionError(f"{entry['tool']}: an unknown key validated")
            checked += 1
    assert checked > 10

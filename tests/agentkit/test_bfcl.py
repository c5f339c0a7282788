"""The BFCL benchmark's pieces: dialect conversion, answer parsing, and the AST rules, checked
on BFCL's own ground truth (the benchmark itself runs a model and is not part of the suite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import grammar
from bench.bfcl import (
    CATEGORIES,
    NO_CALL,
    ast_correct,
    build_tools,
    free_calls,
    load,
    run_item,
    standardize,
    structurally_valid,
    to_json_schema,
)


def _first_answers(ground_truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A call list made of the first acceptable value of every parameter (skipping `""`)."""
    calls = []
    for expected in ground_truth:
        [(name, params)] = expected.items()
        arguments = {}
        for param, answers in params.items():
            usable = [a for a in answers if a != ""]
            if usable:
                arguments[param] = _first(usable[0])
        calls.append({"name": name, "arguments": arguments})
    return calls


def _first(answer: Any) -> Any:
    if isinstance(answer, dict):
        usable = {k: [a for a in v if a != ""] for k, v in answer.items()}
        return {k: _first(v[0]) for k, v in usable.items() if v}
    if isinstance(answer, list):
        return [_first(a) for a in answer]
    return answer


@pytest.mark.parametrize("category", [c for c in CATEGORIES if c not in NO_CALL])
def test_converted_schemas_are_json_schema_and_ground_truth_scores_correct(corpus: Path, category: str) -> None:
    items, skipped = load(category, corpus / "bfcl", None)
    assert len(items) + len(skipped) == {"simple_python": 400, "multiple": 200, "parallel": 200}[category]
    assert len(skipped) <= len(items) // 20
    correct = 0
    for item in items:
        for t in item.tools.values():
            jsonschema.Draft202012Validator.check_schema(t.schema)
        calls = _first_answers(item.ground_truth)
        if ast_correct(calls, item.ground_truth, item.tools):
            correct += 1
            assert ast_correct(list(reversed(calls)), item.ground_truth, item.tools)
    assert correct >= 0.95 * len(items)


def test_ast_rules() -> None:
    [t] = build_tools([{
        "name": "area",
        "description": "Area.",
        "parameters": {"type": "dict", "properties": {
            "width": {"type": "float"}, "unit": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
        }, "required": ["width"]},
    }])
    tools = {"area": t}
    truth = [{"area": {"width": [2.0], "unit": ["Square Meters", ""], "tags": [["a-b", "C"], ""]}}]

    def verdict(arguments: dict[str, Any], name: str = "area") -> bool:
        return ast_correct([{"name": name, "arguments": arguments}], truth, tools)

    assert verdict({"width": 2})  # an int where a float is expected
    assert verdict({"width": 2.0, "unit": "square meters"})  # case and spaces ignored
    assert verdict({"width": 2.0, "tags": ["ab", "c"]})  # list items compared one by one
    assert not verdict({"unit": "square meters"})  # required parameter missing
    assert not verdict({"width": 2.0, "colour": "red"})  # unknown parameter
    assert not verdict({"width": 3.0})
    assert not verdict({"width": 2.0, "tags": ["ab"]})
    # BFCL compares with the "may be left out" answer "" still among the answers: an empty
    # string (after standardizing) matches it, and so does an empty list for a list parameter
    assert verdict({"width": 2.0, "unit": ""}) and verdict({"width": 2.0, "unit": " - "})
    assert verdict({"width": 2.0, "tags": []})
    assert not verdict({"width": 2.0, "unit": "feet"})
    assert not verdict({"width": 2.0}, name="volume")
    assert not ast_correct([], truth, tools)
    assert standardize("New-York, U.S.A_") == "newyorkusa"


def test_dialect_conversion() -> None:
    schema = to_json_schema({"type": "dict", "properties": {
        "point": {"type": "tuple", "items": {"type": "float"}},
        "meta": {"type": "dict", "properties": {"k": {"type": "any"}}, "optional": True},
    }, "required": ["point", "missing"]})
    assert schema == {
        "type": "object",
        "properties": {
            "point": {"type": "array", "items": {"type": "number"}},
            "meta": {"type": "object", "properties": {"k": {}}, "additionalProperties": False},
        },
        "required": ["point"],
        "additionalProperties": False,
    }


def test_free_answers_are_read_with_the_tools_parameter_order() -> None:
    [t] = build_tools([{"name": "f", "parameters": {"type": "dict", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]}}])
    assert free_calls("f(1, b=2)", {"f": t}) == [{"name": "f", "arguments": {"a": 1, "b": 2}}]
    assert free_calls('<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>', {"f": t}) == [
        {"name": "f", "arguments": {"a": 1}}
    ]


def test_structural_validity() -> None:
    parameters = {"type": "dict", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    [t] = build_tools([{"name": "f", "parameters": parameters}])
    tools = {"f": t}
    assert structurally_valid([{"name": "f", "arguments": {"a": 1}}], tools)
    assert not structurally_valid([{"name": "f", "arguments": {"a": "1"}}], tools)
    assert not structurally_valid([{"name": "g", "arguments": {}}], tools)
    assert not structurally_valid([], tools)
    assert free_calls("I cannot help with that.", tools) == []
    assert json.loads(json.dumps(t.to_openai()))["function"]["name"] == "f"


async def test_irrelevance_items_are_right_without_a_call_and_wrong_with_one(corpus: Path) -> None:
    from runtimes.testing import ScriptedRuntime

    items, skipped = load("irrelevance", corpus / "bfcl", 3)
    assert len(items) + len(skipped) == 3 and all(item.ground_truth == [] for item in items)
    item = items[0]
    [name] = item.tools
    schema = item.tools[name].schema
    arguments = {key: 1.5 for key in schema["required"]}
    call = json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"))
    text = "No tool here can answer that; the area is half of base times height."
    free, held = await run_item(item, ScriptedRuntime([text, text], tool_call_envelope="json"), "irrelevance", 128)
    assert (free.valid, free.correct, held.valid, held.correct) == (True, True, True, True)
    free, held = await run_item(item, ScriptedRuntime([call, call], tool_call_envelope="json"), "irrelevance", 128)
    assert (free.valid, free.correct, held.valid, held.correct) == (True, False, True, False)


def test_a_start_skips_the_first_items(corpus: Path) -> None:
    first, _ = load("parallel", corpus / "bfcl", 3)
    later, _ = load("parallel", corpus / "bfcl", 2, start=1)
    assert [item.id for item in later] == [item.id for item in first[1:]]
    rest, _ = load("parallel", corpus / "bfcl", None, start=198)
    assert [item.id for item in rest] == ["parallel_198", "parallel_199"]


def test_variants_parse_and_label_round_trip() -> None:
    from bench.bfcl import Variant

    for text in ("model", "hermes:12", "hermes,fenced,json:12+preamble", "fenced+preamble"):
        assert Variant.parse(text).label() == text
    assert Variant.parse("hermes,fenced+preamble") == Variant(("hermes", "fenced"), None, True)
    with pytest.raises(Exception, match="only \\+preamble"):
        Variant.parse("hermes+think")


async def test_a_preamble_variant_reads_the_call_after_the_text(corpus: Path) -> None:
    from bench.bfcl import Variant, run_variants
    from runtimes.testing import ScriptedRuntime

    [item], _ = load("irrelevance", corpus / "bfcl", 1)
    [name] = item.tools
    call = json.dumps({"name": name, "arguments": {k: 1.5 for k in item.tools[name].schema["required"]}},
                      separators=(",", ":"))
    text = f"I will use the tool.\n<tool_call>\n{call}\n</tool_call>"
    runtime = ScriptedRuntime([text, text], tool_call_envelope="hermes")
    free, [held] = await run_variants(item, runtime, "irrelevance", 128, [Variant(("hermes", "fenced"), None, True)])
    assert held.calls == [json.loads(call)] and not held.correct and free.calls == held.calls


def test_a_malformed_call_is_an_attempt_and_prose_is_not() -> None:
    from bench.bfcl import attempted_call

    assert attempted_call('```json\n{\n  "name": "f",\n  "arguments": {"v": 100, // m/s\n')
    assert attempted_call('{"name": "Cooking Recipes", "arguments": {}}')
    assert attempted_call("Let me call it.\n<tool_call>\n{broken")
    assert not attempted_call("No tool here can answer that; the area is half of base times height.")
    assert attempted_call("[find_critical_points]") and attempted_call("[f(c=3 * 10**8), f(c=1)]")
    assert attempted_call("```python\n[calculate_velocity(v=v)]\n```")
    assert not attempted_call("[1] The area is half of base times height.")


async def test_prompt_mode_asks_in_a_system_message_and_scores_a_python_list(corpus: Path) -> None:
    """BFCL's prompt mode: the function docs in a system message, no tools for the template;
    the right calls written as a Python list are right free and under the python envelope."""
    from bench.bfcl import Variant, run_variants
    from runtimes.testing import ScriptedRuntime

    [item], _ = load("parallel", corpus / "bfcl", 1)
    text = _python_list(item)
    runtime = ScriptedRuntime([text, text])
    free, [held] = await run_variants(item, runtime, "parallel", 256, [Variant.parse("python")], "python")
    assert (free.valid, free.correct, held.valid, held.correct) == (True, True, True, True)
    [system, *_] = runtime.calls[0].messages
    assert system["role"] == "system" and "[func_name1(params_name1=params_value1" in system["content"]
    assert json.dumps(item.functions[0]["name"]) in system["content"]
    assert runtime.calls[0].tools is None and runtime.calls[1].grammar is not None


async def test_think_asks_both_runs_to_reason_and_reads_the_answer_after_it(corpus: Path) -> None:
    from bench.bfcl import THINK_PROMPT, Variant, run_variants
    from runtimes.testing import ScriptedRuntime

    [item], _ = load("parallel", corpus / "bfcl", 1)
    text = "<think>Several calls, one list.</think>\n" + _python_list(item)
    runtime = ScriptedRuntime([text, text])
    free, [held] = await run_variants(item, runtime, "parallel", 256, [Variant.parse("python")], "python", think=64)
    assert (free.correct, held.correct) == (True, True)
    assert all(THINK_PROMPT in r.messages[0]["content"] for r in runtime.calls)
    g = runtime.calls[1].grammar
    assert g.reasoning == grammar.ReasoningSpan(max_tokens=64) and not g.accepts(text.split("\n", 1)[1])


def _python_list(item: Any) -> str:
    """An item's first right answer as a Python list of calls, arguments in declared order."""
    pieces = []
    for call in _first_answers(item.ground_truth):
        declared = list(item.tools[call["name"]].schema["properties"])
        args = ", ".join(f"{k}={json.dumps(call['arguments'][k])}" for k in declared if k in call["arguments"])
        pieces.append(f"{call['name']}({args})")
    return "[" + ", ".join(pieces) + "]"


async def test_the_default_run_is_one_turn_of_the_default_agent(corpus: Path) -> None:
    """`--prompt agent` (the default): both runs are one turn of `Agent(tools)`, sent what the
    agent sends (the template's tools, the default tool prompt's note) and held, on the
    constrained run, to the agent's turn grammar; a JSON list of the expected calls is right
    both ways, and nothing runs."""
    from agentkit._loop.agent import JSON_LIST_NOTE
    from bench.bfcl import agent_turn
    from runtimes.testing import ScriptedRuntime

    [item], _ = load("parallel", corpus / "bfcl", 1)
    calls = [{"name": name, "arguments": {k: v[0] for k, v in params.items() if v[0] != ""}}
             for expected in item.ground_truth for name, params in expected.items()]
    text = json.dumps(calls)
    runtime = ScriptedRuntime([text, text])
    free = await agent_turn(item, runtime, "parallel", 256, "json_list", free=True)
    held = await agent_turn(item, runtime, "parallel", 256, "json_list")
    assert (free.valid, free.correct, held.valid, held.correct) == (True, True, True, True)
    assert held.calls == calls
    sent = runtime.calls[1]
    assert sent.messages[0] == {"role": "system", "content": JSON_LIST_NOTE} and sent.tools is not None
    assert runtime.calls[0].grammar is None and sent.grammar is not None
    prose = "I can't tell without more details."
    [answered] = [await agent_turn(item, ScriptedRuntime([prose]), "parallel", 256, "json_list")]
    assert (answered.valid, answered.correct, answered.calls) == (False, False, [])


async def test_a_tool_note_is_sent_by_both_runs(corpus: Path) -> None:
    """`--tool-note FILE`: the wording tried goes to the free run and the held run alike, in
    place of the default note."""
    from bench.bfcl import agent_turn
    from runtimes.testing import ScriptedRuntime

    [item], _ = load("simple_python", corpus / "bfcl", 1)
    note = "Write the calls as one JSON list."
    runtime = ScriptedRuntime(["No.", "No."])
    await agent_turn(item, runtime, "simple_python", 64, "json_list", free=True, tool_note=note)
    await agent_turn(item, runtime, "simple_python", 64, "json_list", tool_note=note)
    assert [c.messages[0] for c in runtime.calls] == [{"role": "system", "content": note}] * 2


def test_a_tool_note_needs_the_list_mode(tmp_path: Path) -> None:
    from bench.bfcl import main

    note = tmp_path / "note.txt"
    note.write_text("Write the calls as one JSON list.")
    with pytest.raises(SystemExit):
        main(["--tool-prompt", "python", "--tool-note", str(note)])

"""The agent task set: every task is solvable with its tools, each call of a solution takes what
earlier results (or the question) gave it, answers are checked loosely but not blindly, and the
three ways of running a task (grammar, free decoding, llama-cpp-python's loop) report the same
things. A scripted model stands in for a real one: nothing is downloaded."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.agent_tasks import FreeDecoding, run_agent, run_llama_cpp_python, task_agent
from bench.agent_world import TASKS, TOOLS, Task
from runtimes.testing import ScriptedRuntime

BY_NAME = {t.name: t for t in TOOLS}


def solve(task: Task) -> list[Any]:
    """The results of the task's solution, call by call."""
    return [asyncio.run(BY_NAME[name].call(BY_NAME[name].validate(arguments))) for name, arguments in task.solution]


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_each_solution_finds_the_expected_facts(task: Task) -> None:
    results = solve(task)
    assert task.check(" ".join(json.dumps(r) for r in results))
    assert len(task.solution) >= 2, "a task needs more than one call"


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_each_call_takes_its_keys_from_the_question_or_earlier_results(task: Task) -> None:
    seen = task.question.lower()
    for (name, arguments), result in zip(task.solution, solve(task), strict=True):
        for key, value in arguments.items():
            if isinstance(value, str) or (isinstance(value, int) and key.endswith("_id")):
                assert str(value).lower() in seen, f"{task.id}: {name}({key}={value!r}) comes from nowhere"
        seen += " " + json.dumps(result).lower()


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_no_tool_description_gives_away_a_key_the_question_lacks(task: Task) -> None:
    docs = json.dumps([t.to_openai() for t in TOOLS]).lower()
    for name, arguments in task.solution:
        for value in arguments.values():
            if isinstance(value, str) and value.lower() not in task.question.lower():
                assert value.lower() not in docs, f"{task.id}: {name} gets {value!r} from a tool's description"


def test_task_ids_are_unique_and_there_are_about_twenty() -> None:
    assert len({t.id for t in TASKS}) == len(TASKS) >= 20


@given(st.sampled_from(TASKS), st.sampled_from(["{}", "{:,}", "{:.2f}", "about {:.3f}"]))
def test_check_reads_numbers_however_written(task: Task, form: str) -> None:
    facts = [form.format(f) if isinstance(f, float | int) else str(f).upper() for f in task.expect]
    assert task.check("The answer: " + " and ".join(facts) + ".")


@given(st.sampled_from([t for t in TASKS if any(isinstance(f, float | int) for f in t.expect)]),
       st.sampled_from([1.0, -1.0, 0.5]))
def test_check_rejects_a_wrong_number(task: Task, shift: float) -> None:
    facts = [f"{f + shift}" if isinstance(f, float | int) else str(f) for f in task.expect]
    assert not task.check("The answer: " + " and ".join(facts) + ".")


def test_check_rejects_an_answer_missing_a_fact() -> None:
    task = next(t for t in TASKS if len(t.expect) == 2)
    assert not task.check(f"It is {task.expect[0]}.")


def test_a_scripted_model_solves_a_task_through_the_agent() -> None:
    task = next(t for t in TASKS if t.id == "order_total")
    model = ScriptedRuntime([
        '{"name":"get_order","arguments":{"order_id":"B-2210"}}',
        '{"name":"multiply","arguments":{"a":3,"b":17.25}}',
        "The order costs 51.75 USD.",
    ])
    outcome = asyncio.run(run_agent(task, task_agent(model, 8, 256), "constrained"))
    assert (outcome.success, outcome.found, outcome.steps, outcome.error) == (True, True, 3, None)
    assert outcome.calls == ['get_order({"order_id": "B-2210"})', 'multiply({"a": 3, "b": 17.25})']


def test_a_task_that_hits_the_step_limit_fails_with_its_turns_kept() -> None:
    task = TASKS[0]
    model = ScriptedRuntime(['{"name":"get_user","arguments":{"user_id":17}}'] * 2)
    outcome = asyncio.run(run_agent(task, task_agent(model, 2, 256), "constrained"))
    assert not outcome.success and not outcome.found and outcome.steps == 2
    assert outcome.error.startswith("StepLimitExceeded")


def test_facts_found_by_the_calls_count_apart_from_the_answer() -> None:
    task = next(t for t in TASKS if t.id == "warmer_city")
    model = ScriptedRuntime(['{"name":"get_weather","arguments":{"city":"Oslo"}}',
                             '{"name":"get_weather","arguments":{"city":"Cairo"}}', "Oslo is warmer."])
    outcome = asyncio.run(run_agent(task, task_agent(model, 8, 256), "constrained"))
    assert (outcome.success, outcome.found) == (False, True)
    erring = ScriptedRuntime(['{"name":"get_weather","arguments":{"city":"city is warmer"}}', "Cairo."])
    outcome = asyncio.run(run_agent(task, task_agent(erring, 8, 256), "constrained"))
    assert (outcome.success, outcome.found) == (True, False)  # an error listing the known cities finds nothing


@pytest.mark.parametrize("written", [
    '```json\n{"name": "get_order", "arguments": {"order_id": "B-2210"}}\n```',
    'I will look it up: get_order(order_id="B-2210")',
    '[{"name": "get_order", "parameters": {"order_id": "B-2210"}}]',
])
def test_free_decoding_hands_on_calls_however_written(written: str) -> None:
    inner = ScriptedRuntime([written, "It costs 51.75."], tool_call_envelope="hermes")
    free = FreeDecoding(inner, TOOLS)
    task = next(t for t in TASKS if t.id == "order_total")
    outcome = asyncio.run(run_agent(task, task_agent(free, 8, 256), "free"))
    assert outcome.calls == ['get_order({"order_id": "B-2210"})'] and outcome.success
    assert all(request.grammar is None for request in inner.calls)


@pytest.mark.parametrize("tool_prompt", ["json_list", "template", "python"])
def test_free_decoding_hands_on_calls_in_the_envelope_the_agent_reads(tool_prompt: str) -> None:
    inner = ScriptedRuntime(['```json\n{"name": "get_order", "arguments": {"order_id": "B-2210"}}\n```',
                             "It costs 51.75."], tool_call_envelope="hermes")
    free = FreeDecoding(inner, TOOLS, tool_prompt)
    task = next(t for t in TASKS if t.id == "order_total")
    outcome = asyncio.run(run_agent(task, task_agent(free, 8, 256, tool_prompt=tool_prompt), "free"))
    assert outcome.calls == ['get_order({"order_id": "B-2210"})'] and outcome.success
    assert (inner.calls[0].tools is None) == (tool_prompt == "python")


def test_free_decoding_keeps_text_without_calls() -> None:
    free = FreeDecoding(ScriptedRuntime([]), TOOLS)
    assert free.as_calls("It is sunny in Lyon.") == "It is sunny in Lyon."


class FakeLlama:
    """llama-cpp-python's `create_chat_completion`, answering from a script of messages."""

    def __init__(self, messages: list[dict[str, Any]]):
        self.script = list(messages)
        self.seen: list[list[dict[str, Any]]] = []

    def create_chat_completion(self, *, messages: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
        assert options["tool_choice"] == "auto" and options["tools"]
        self.seen.append([dict(m) for m in messages])
        return {"choices": [{"message": self.script.pop(0)}], "usage": {"completion_tokens": 7}}


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def test_the_llama_cpp_python_loop_feeds_results_and_errors_back() -> None:
    task = next(t for t in TASKS if t.id == "order_total")
    llm = FakeLlama([
        _call("get_order", '{"order_id": "Z-1"}'),
        _call("get_order", '{"order_id": "B-2210"}'),
        _call("multiply", '{"a": 3, "b": 17.25}'),
        {"role": "assistant", "content": "51.75 USD"},
    ])
    outcome = run_llama_cpp_python(task, llm, max_steps=8, max_tokens=64)
    assert (outcome.success, outcome.found, outcome.steps, outcome.completion_tokens) == (True, True, 4, 28)
    last = llm.seen[-1]
    assert last[0]["role"] == "system" and last[-1] == {"role": "user", "content": "functions.multiply returned: 51.75"}
    assert "no order 'Z-1'" in last[3]["content"]


def test_the_llama_cpp_python_loop_stops_at_the_step_limit() -> None:
    llm = FakeLlama([_call("get_user", '{"user_id": 17}')] * 2)
    outcome = run_llama_cpp_python(TASKS[0], llm, max_steps=2, max_tokens=64)
    assert not outcome.success and outcome.error.startswith("StepLimitExceeded")

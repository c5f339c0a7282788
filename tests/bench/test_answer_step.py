"""The answer-step benchmark: the conversation a routed run would hold for each request (its
needed calls, their true results), asked the routed way with and without the answered
example, and scored by the right-answers rule. A function of the messages stands in for the
model."""

from __future__ import annotations

import asyncio

from agentkit._loop.results import ANSWERED_EXAMPLE
from bench import answer_step
from bench.agent_values import select
from bench.values_world import REQUESTS
from runtimes.testing import FunctionRuntime, RequestInfo

WITH_CALLS = [r for r in REQUESTS if r.calls]


def states_the_last_result_after_an_example(messages: list[dict], info: RequestInfo) -> str:
    """A model that states the last result it was given where it was shown an answered
    example, and explains a formula where it was not."""
    if ANSWERED_EXAMPLE[1] not in messages:
        return "To find it, use a formula."
    context = messages[-1]["content"]
    last_call = context.split("\nQuestion:")[0].splitlines()[-1]
    return "The answer is " + last_call.split(" = ", 1)[1]


def test_each_request_is_asked_with_its_calls_results_as_context():
    for request in WITH_CALLS:
        messages = asyncio.run(answer_step.conversation(request))
        assert messages[0] == {"role": "user", "content": request.text}
        assert [m["role"] for m in messages[1:]] == ["assistant", "tool"] * len(request.calls)
        routed = answer_step.asked(messages, answer_step.WAYS[1])
        assert routed[: len(ANSWERED_EXAMPLE)] == list(ANSWERED_EXAMPLE)
        context = routed[-1]["content"]
        assert context.startswith("Context: ") and context.endswith(f"Question: {request.text}")
        assert context.count(" = ") >= len(request.calls)
        assert answer_step.asked(messages, answer_step.WAYS[0]) == routed[len(ANSWERED_EXAMPLE):]


def test_the_rule_counts_stated_results_right_and_formulas_wrong():
    requests = [r for r in select("all", None) if r.calls]
    right = asyncio.run(answer_step.measure(FunctionRuntime(states_the_last_result_after_an_example), requests, False))
    assert right == {answer_step.WAYS[0]: 0, answer_step.WAYS[1]: len(requests)}

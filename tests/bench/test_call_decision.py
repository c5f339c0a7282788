"""`bench.call_decision`: the agent's own first request is what is probed, the margin is read
from the two first tokens' scores, and the sweep counts the requests each threshold calls on."""

from __future__ import annotations

import asyncio
import math

from hypothesis import given
from hypothesis import strategies as st

from bench.call_decision import FirstStep, first_steps, report, sweep
from bench.values_world import KINDS, REQUESTS
from runtimes import Generation, TokenScore, Usage
from runtimes.testing import ScriptedRuntime


def scored(text: str, logprob: float) -> Generation:
    return Generation(text, "stop", Usage(1, 1), token_scores=[TokenScore(text.encode(), logprob)])


def test_each_request_is_probed_on_the_request_the_agent_builds_held_to_calls_then_free():
    requests = [r for r in REQUESTS if r.split == "tune"][:3]
    script = []
    for i, _ in enumerate(requests):
        script += [scored('{"', -1.0 - i), scored("The", -0.5)]
    runtime = ScriptedRuntime(script)
    steps = asyncio.run(first_steps(runtime, requests))
    assert [s.request for s in steps] == [r.id for r in requests]
    assert [round(s.margin, 2) for s in steps] == [-0.5, -1.5, -2.5]
    held, free = runtime.calls[0], runtime.calls[1]
    assert held.messages == free.messages and requests[0].text in str(held.messages)
    assert held.grammar is not None and free.grammar is None and held.scores and free.scores
    assert held.tools and held.tools == free.tools  # the tools the agent shows the model


steps_strategy = st.lists(st.tuples(st.sampled_from(KINDS), st.floats(-20, 0)), max_size=20).map(
    lambda rows: [FirstStep(f"r{i}", kind, TokenScore(b"{", m), TokenScore(b"x", 0.0)) for i, (kind, m) in enumerate(rows)])


@given(steps_strategy)
def test_a_higher_threshold_never_calls_on_more_requests_and_the_last_calls_on_none(steps):
    found = sweep(steps)
    assert found[-1].at == math.inf and all(k == 0 for k, _ in found[-1].calls.values())
    for lower, higher in zip(found, found[1:]):
        assert lower.at < higher.at
        assert all(lower.calls[kind][0] >= higher.calls[kind][0] for kind in KINDS)
    for t in found:
        assert all(t.calls[kind] == (sum(s.margin >= t.at for s in steps if s.kind == kind),
                                     sum(s.kind == kind for s in steps)) for kind in KINDS)
    assert "never" in report(steps)

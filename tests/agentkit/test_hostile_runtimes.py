"""What a runtime hands back, read as a hostile runtime would write it: token scores are an extra,
never a failure (issue #65: a `TokenScore` logprob of 1000 raised a raw `OverflowError` out of
`extract(..., confidence=True)`)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentkit import Agent, Extraction, extract, tool
from runtimes import Generation, TokenScore, Usage
from runtimes.testing import ScriptedRuntime


class Price(BaseModel):
    amount: float
    currency: str


TEXT = '{"amount":9.99,"currency":"USD"}'
PIECES = [b'{"amount":', b"9", b".", b"99", b',"currency":"', b"USD", b'"}']


def scored(logprobs: list[object], masses: list[object] | None = None) -> Generation:
    masses = masses if masses is not None else [0.0] * len(PIECES)
    scores = [TokenScore(p, lp, m) for p, lp, m in zip(PIECES, logprobs, masses)]  # type: ignore[arg-type]
    return Generation(TEXT, "grammar_complete", Usage(10, len(PIECES)), token_scores=scores)


def test_a_logprob_of_1000_gives_no_confidence_and_says_why():
    logprobs = [-0.01, 1000, -0.01, -0.1, -0.01, -1.6, -0.02]
    got = extract(Price, "9.99 USD", runtime=ScriptedRuntime([scored(logprobs)]), confidence=True)
    assert isinstance(got, Extraction) and got.value == Price(amount=9.99, currency="USD")
    assert got.fields is None and "token 1's logprob 1000 is not a log-probability" in got.missing
    assert got.doubtful() == []


def test_a_logprob_below_a_floats_range_is_probability_zero():
    logprobs = [-0.01, -(10**400), -0.01, -0.1, -0.01, -1.6, -0.02]
    got = extract(Price, "9.99 USD", runtime=ScriptedRuntime([scored(logprobs)]), confidence=True)
    assert got.fields["/amount"].probability == 0.0 and got.fields["/currency"].probability > 0
    assert got.doubtful(0.5) == ["/amount", "/currency"]


HOSTILE_NUMBERS = st.one_of(
    st.floats(),  # NaN and both infinities among them
    st.integers(-(10**500), 10**500),
    st.sampled_from([1000, 10**400, -(10**400), 1e-300, True, "−1", None, -0.0]),
)


@settings(max_examples=200, deadline=None)
@given(logprobs=st.lists(HOSTILE_NUMBERS, min_size=len(PIECES), max_size=len(PIECES)),
       masses=st.lists(st.none() | HOSTILE_NUMBERS, min_size=len(PIECES), max_size=len(PIECES)))
def test_any_numbers_in_token_scores_give_a_value_and_sound_confidences_or_none(logprobs, masses):
    got = extract(Price, "9.99 USD", runtime=ScriptedRuntime([scored(logprobs, masses)]), confidence=True)
    assert got.value == Price(amount=9.99, currency="USD")
    if got.fields is None:
        assert got.missing
        return
    for confidence in got.fields.values():
        assert 0.0 <= confidence.min_token_probability <= 1.0 and 0.0 <= confidence.probability <= 1.0
        assert confidence.masked_mass is None or 0.0 <= confidence.masked_mass <= 1.0


@tool
def convert(amount: float) -> str:
    """Convert an amount."""
    return "ok"


def test_an_agent_with_confidence_reads_hostile_call_scores_as_none():
    call = '{"name":"convert","arguments":{"amount":9.99}}'
    pieces = [call[:30].encode(), call[30:].encode()]
    turn = Generation(call, "grammar_complete", Usage(10, 2),
                      token_scores=[TokenScore(pieces[0], math.nan, 0.0), TokenScore(pieces[1], 1000.0, 0.0)])
    agent = Agent([convert], ScriptedRuntime([turn, "done"]), model_settings={"confidence": True})
    result = agent.run_sync("Convert 9.99.")
    assert [r.call.arguments for r in result.tool_calls] == [{"amount": 9.99}]
    assert result.tool_calls[0].confidence is None

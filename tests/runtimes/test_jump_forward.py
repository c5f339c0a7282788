"""Jump-forward: tokens the grammar forces are taken without a model pass and read with the
next one. The output must be exactly what token-by-token decoding gives (greedy, and seeded
sampling too, since a forced token draws no random number), in fewer forward passes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from runtimes import Usage
from runtimes.testing import RandomRuntime

PREFIX = "You read the text and answer with one record of what it says, as JSON. " * 3
RECORD = grammar.from_regex('\\{"id":(0|[1-9][0-9]{0,5}),"name":"[a-z]{1,30}","ok":(true|false)\\}')

# Regex pieces, some of which spell the synthetic vocabulary's multi-byte tokens ('"name":',
# 'true', '","'), so forced runs span whole tokens and token boundaries alike.
ATOMS = st.sampled_from([
    '"name":', '"id":', 'true', 'false', 'null', '","', '\\{"', '"\\}', ',', ':', 'x', 'ab',
    '[a-c]', '[0-9]', '[0-9]{1,3}', '(ab|cd)', '(true|false)', 'é', '日本', '[a-z]{2,4}',
])


def _regexes() -> st.SearchStrategy[str]:
    return st.recursive(
        ATOMS,
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=5).map("".join),
            st.lists(inner, min_size=2, max_size=3).map(lambda parts: "(" + "|".join(parts) + ")"),
            inner.map(lambda part: f"({part})?"),
            st.tuples(inner, st.integers(0, 2), st.integers(1, 3)).map(lambda t: f"({t[0]}){{{t[1]},{t[1] + t[2]}}}"),
        ),
        max_leaves=10,
    )


def _chosen(generation) -> tuple:
    return (generation.text, generation.finish_reason, generation.token_ids, generation.steered_from,
            generation.usage.prompt_tokens, generation.usage.completion_tokens)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_regexes(), prompt=st.text(alphabet="abc xyz", max_size=12), seed=st.integers(0, 5),
       max_tokens=st.integers(1, 40), temperature=st.sampled_from([0.0, 0.0, 1.0]))
def test_jumping_forward_chooses_exactly_what_token_by_token_decoding_chooses(pattern, prompt, seed, max_tokens, temperature):
    g = grammar.from_regex(pattern)
    stepwise = RandomRuntime(seed=seed, jump_forward=False)
    jumping = RandomRuntime(seed=seed, jump_forward=True)
    options = dict(grammar=g, max_tokens=max_tokens, temperature=temperature, seed=seed)
    expected = stepwise.generate_sync(PREFIX + prompt, **options)
    got = jumping.generate_sync(PREFIX + prompt, **options)
    assert _chosen(got) == _chosen(expected)
    assert expected.usage.forward_passes == expected.usage.completion_tokens == stepwise.forward_calls
    assert got.usage.forward_passes == jumping.forward_calls <= expected.usage.forward_passes
    assert got.usage.drafted_tokens == got.usage.accepted_tokens == 0


def test_a_grammar_of_literals_is_written_in_fewer_passes_than_tokens():
    stepwise = RandomRuntime(seed=4, jump_forward=False).generate_sync(PREFIX, grammar=RECORD, max_tokens=60)
    jumping = RandomRuntime(seed=4).generate_sync(PREFIX, grammar=RECORD, max_tokens=60)
    assert jumping.token_ids == stepwise.token_ids and jumping.finish_reason == "grammar_complete"
    # '{"id":' ... ',"name":"' ... '","ok":' are forced: every token of them is jumped over.
    assert jumping.usage.forward_passes <= stepwise.usage.forward_passes - 4


def test_a_document_of_forced_tokens_takes_one_pass():
    # No multi-byte token of the synthetic vocabulary holds these letters: each is the only
    # token allowed in its place. (A forced string is not always forced tokens: '{"name":' may
    # be written '{"' 'name' '":' or byte by byte, and the model chooses.)
    g = grammar.from_regex("qzkjqzkj")
    generation = RandomRuntime(seed=1).generate_sync("x", grammar=g, max_tokens=30)
    assert generation.text == "qzkjqzkj" and generation.finish_reason == "grammar_complete"
    assert generation.usage.forward_passes == 1 and generation.usage.completion_tokens == 8


def test_jump_forward_never_overruns_the_budget():
    g = grammar.from_regex('\\{"name":"ab","id":true\\}')
    generation = RandomRuntime(seed=1).generate_sync("x", grammar=g, max_tokens=3)
    assert generation.finish_reason == "length"
    assert generation.usage.completion_tokens == len(generation.token_ids) == 3


def test_usage_sums_passes_and_guesses():
    total = Usage(3, 4, forward_passes=2, drafted_tokens=5, accepted_tokens=3) + Usage(1, 2, forward_passes=2)
    assert total == Usage(4, 6, forward_passes=4, drafted_tokens=5, accepted_tokens=3)
    assert total.acceptance_rate == 0.6 and Usage(1, 1).acceptance_rate is None


@pytest.mark.model
async def test_the_default_model_writes_the_same_document_with_and_without_jumping(default_runtime):
    g = grammar.from_json_schema({
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"},
                       "city": {"enum": ["Paris", "Lyon", "Nice"]}},
        "required": ["name", "age", "city"],
        "additionalProperties": False,
    })
    messages = [{"role": "user", "content": "Ana Lopez, 34, lives in Lyon. Her record as JSON."}]
    assert default_runtime.jump_forward
    try:
        default_runtime.jump_forward = False
        stepwise = await default_runtime.generate(messages, grammar=g, max_tokens=80)
    finally:
        default_runtime.jump_forward = True
    jumping = await default_runtime.generate(messages, grammar=g, max_tokens=80)
    assert jumping.token_ids == stepwise.token_ids and jumping.text == stepwise.text
    assert jumping.finish_reason == stepwise.finish_reason == "grammar_complete"
    assert not stepwise.steered
    assert stepwise.usage.forward_passes == stepwise.usage.completion_tokens
    assert jumping.usage.forward_passes < jumping.usage.completion_tokens

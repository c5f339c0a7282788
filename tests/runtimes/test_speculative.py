"""Speculative decoding with a drafter: guesses checked by the model, several per pass.

Greedy output must be exactly plain constrained greedy's; sampled output must follow plain
masked sampling's distribution (the acceptance rule for a point-mass drafter)."""

from __future__ import annotations

import asyncio
import collections
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from runtimes import InvalidRequest, LocalRuntime, RuntimeFailure
from runtimes._batch import Feed
from runtimes._drafting import PromptLookup
from runtimes.testing import RandomRuntime
from runtime_cases import CONTACT_SCHEMA, CONTACT_TEXTS, contact_chat

RECORD = grammar.from_regex('\\{"id":(0|[1-9][0-9]{0,5}),"name":"[a-z]{1,30}","ok":(true|false)\\}')


class CopyingRuntime(RandomRuntime):
    """Random logits with a pull towards copying: the token that followed the latest earlier
    occurrence of the last token gets `pull` added, so guesses from the prompt are often right
    and sometimes wrong (the noise), as with a real model extracting from its input."""

    def __init__(self, *args, pull: float = 7.0, **kwargs):
        self.pull = pull
        super().__init__(*args, **kwargs)

    def _logits(self, tokens, prefix_hash):
        row = super()._logits(tokens, prefix_hash)
        last = tokens[-1]
        for j in range(len(tokens) - 2, -1, -1):
            if tokens[j] == last:
                row[tokens[j + 1]] += self.pull
                break
        return row


def _chosen(generation) -> tuple:
    return (generation.text, generation.finish_reason, generation.token_ids, generation.steered_from,
            generation.usage.prompt_tokens, generation.usage.completion_tokens)


def test_prompt_lookup_proposes_what_followed_the_longest_latest_match():
    lookup = PromptLookup(max_ngram=3)
    assert lookup.propose([1, 2, 3, 9, 9, 1, 2, 3, 7, 5, 2, 3], 3) == [7, 5, 2]  # "2 3" last seen before 7
    assert lookup.propose([4, 1, 2, 8, 1, 2], 5) == [8, 1, 2]
    assert lookup.propose([1, 2, 3], 4) == []  # 3 never came before
    assert lookup.propose([5, 6, 5], 0) == []


TEXTS = st.lists(st.sampled_from(['{"id":', '"name":"', 'abc', 'id', 'true', 'false', '","ok":', '}', '12', '0', 'xy']),
                 min_size=1, max_size=12).map("".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, seed=st.integers(0, 9), max_tokens=st.integers(1, 50), draft_tokens=st.integers(1, 8),
       jump_forward=st.booleans())
def test_greedy_with_guesses_is_plain_greedy(text, seed, max_tokens, draft_tokens, jump_forward):
    prompt = "Copy the record: " + text + " and again: " + text
    plain = CopyingRuntime(seed=seed, jump_forward=False).generate_sync(prompt, grammar=RECORD, max_tokens=max_tokens)
    runtime = CopyingRuntime(seed=seed, jump_forward=jump_forward, draft="prompt", draft_tokens=draft_tokens)
    got = runtime.generate_sync(prompt, grammar=RECORD, max_tokens=max_tokens)
    assert _chosen(got) == _chosen(plain)
    usage = got.usage
    assert usage.forward_passes == runtime.forward_calls <= plain.usage.forward_passes
    assert 0 <= usage.accepted_tokens <= usage.drafted_tokens


def test_guesses_are_taken_and_turned_down_and_save_passes():
    prompt = 'Copy: {"id":120,"name":"abcabc","ok":true} ' * 2
    plain = CopyingRuntime(seed=2, jump_forward=False).generate_sync(prompt, grammar=RECORD, max_tokens=60)
    got = CopyingRuntime(seed=2, draft="prompt").generate_sync(prompt, grammar=RECORD, max_tokens=60)
    assert _chosen(got) == _chosen(plain)
    assert 0 < got.usage.accepted_tokens < got.usage.drafted_tokens  # both verdicts happened
    assert got.usage.forward_passes < plain.usage.forward_passes


def test_free_decoding_with_guesses_is_free_greedy():
    prompt = "abc abd abc abd abc"
    plain = CopyingRuntime(seed=5).generate_sync(prompt, max_tokens=40)
    got = CopyingRuntime(seed=5, draft="prompt").generate_sync(prompt, max_tokens=40)
    assert _chosen(got) == _chosen(plain) and got.usage.drafted_tokens > 0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(TEXTS, min_size=2, max_size=5), max_batch=st.integers(2, 4), batch_tokens=st.integers(8, 64),
       seed=st.integers(0, 3))
def test_guesses_inside_the_batching_scheduler_change_nothing(texts, max_batch, batch_tokens, seed):
    async def answers(runtime):
        return await asyncio.gather(*(runtime.generate("Copy: " + t + " " + t, grammar=RECORD, max_tokens=50, seed=i)
                                      for i, t in enumerate(texts)))

    alone = asyncio.run(answers(CopyingRuntime(seed=seed, jump_forward=False)))
    batched = asyncio.run(answers(CopyingRuntime(seed=seed, draft="prompt", max_batch=max_batch,
                                                 batch_tokens=max(batch_tokens, max_batch), prefill_chunk=16)))
    assert [_chosen(g) for g in batched] == [_chosen(g) for g in alone]


def test_drafting_needs_a_cache_that_can_drop_its_last_tokens():
    class Whole(LocalRuntime):
        name = "whole"

        def _prompt_ids(self, messages, tools):
            return [1]

    with pytest.raises(RuntimeFailure, match="cannot"):
        Whole().draft = "prompt"
    with pytest.raises(InvalidRequest, match="draft"):
        RandomRuntime(draft="a draft model of my own")


# --- sampling: the acceptance rule keeps the distribution ----------------------------------

LANGUAGE = grammar.from_regex("[ab]{1,3}")
SAMPLE_PROMPT = "ab ba abb bab aab"
SAMPLES = 1500


def _exact_distribution(runtime: RandomRuntime, g: grammar.Grammar, prompt: str) -> dict[str, float]:
    """Plain masked sampling's distribution over whole answers, by walking every path: the
    test model's logits are a function of the tokens read, so each step's masked softmax is known."""
    compiled = runtime.compiled(g)
    eos = next(iter(runtime.vocabulary.eos_ids))
    start = runtime._prompt_ids(prompt, None)
    found: dict[str, float] = collections.defaultdict(float)

    def walk(tokens: list[int], matcher: grammar.Matcher, p: float) -> None:
        if matcher.is_terminated():
            found[bytes(b for t in tokens for b in runtime.vocabulary.token_bytes(t)).decode()] += p
            return
        runtime.begin_slot(0, 0)
        ((row,),) = runtime.read_batch([Feed(0, 0, start + tokens, 1)])
        ids = matcher.next_token_mask().allowed_ids()
        weights = np.exp(row[ids].astype(np.float64) - row[ids].max())
        for token, weight in zip(ids.tolist(), weights / weights.sum(), strict=True):
            if token == eos:
                found[bytes(b for t in tokens for b in runtime.vocabulary.token_bytes(t)).decode()] += p * weight
                continue
            fork = matcher.fork()
            assert fork.accept_token(token)
            walk(tokens + [token], fork, p * weight)

    walk([], grammar.Matcher(compiled, stop_when_complete=True), 1.0)
    return dict(found)


def _chi_square_limit(df: int, z: float = 3.09) -> float:
    """The chi-square statistic a sample exceeds with probability about 0.001 (Wilson-Hilferty)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def test_sampling_with_guesses_follows_plain_masked_sampling():
    exact = _exact_distribution(RandomRuntime(seed=11, scale=1.5), LANGUAGE, SAMPLE_PROMPT)
    assert len(exact) == 14 and math.isclose(sum(exact.values()), 1.0)
    runtime = RandomRuntime(seed=11, scale=1.5, draft="prompt", max_batch=8)

    async def samples():
        return await asyncio.gather(*(runtime.generate(SAMPLE_PROMPT, grammar=LANGUAGE, temperature=1.0, seed=i)
                                      for i in range(SAMPLES)))

    got = asyncio.run(samples())
    drafted = sum(g.usage.drafted_tokens for g in got)
    accepted = sum(g.usage.accepted_tokens for g in got)
    assert 0 < accepted < drafted  # the rule both took and turned down guesses
    counts = collections.Counter(g.text for g in got)
    assert set(counts) <= set(exact)
    statistic = sum((counts[text] - SAMPLES * p) ** 2 / (SAMPLES * p) for text, p in exact.items())
    assert statistic < _chi_square_limit(len(exact) - 1), (statistic, counts, exact)


def test_the_chi_square_check_sees_a_rule_that_always_takes_the_guess():
    # The same check on a sampler that takes every guess as it comes (no acceptance rule)
    # must fail: the statistic above is able to tell the distributions apart.
    exact = _exact_distribution(RandomRuntime(seed=11, scale=1.5), LANGUAGE, SAMPLE_PROMPT)
    runtime = RandomRuntime(seed=11, scale=1.5, draft="prompt", max_batch=8)
    from runtimes import _sampling

    original = _sampling.Sampler.verify
    _sampling.Sampler.verify = lambda self, logits, mask, draft: draft
    try:
        async def samples():
            return await asyncio.gather(*(runtime.generate(SAMPLE_PROMPT, grammar=LANGUAGE, temperature=1.0, seed=i)
                                          for i in range(SAMPLES)))

        got = asyncio.run(samples())
    finally:
        _sampling.Sampler.verify = original
    counts = collections.Counter(g.text for g in got)
    statistic = sum((counts[text] - SAMPLES * p) ** 2 / (SAMPLES * p) for text, p in exact.items())
    assert statistic > _chi_square_limit(len(exact) - 1)


@pytest.mark.model
async def test_the_default_model_with_prompt_lookup_writes_plain_greedy_output(default_runtime):
    g = grammar.from_json_schema(CONTACT_SCHEMA)
    messages = contact_chat(CONTACT_TEXTS[0])
    plain = await default_runtime.generate(messages, grammar=g, max_tokens=80)
    try:
        default_runtime.draft = "prompt"
        drafted = await default_runtime.generate(messages, grammar=g, max_tokens=80)
    finally:
        default_runtime.draft = None
    assert drafted.token_ids == plain.token_ids and drafted.text == plain.text
    assert drafted.finish_reason == plain.finish_reason == "grammar_complete" and not plain.steered
    assert drafted.usage.accepted_tokens > 0
    assert drafted.usage.forward_passes < plain.usage.forward_passes

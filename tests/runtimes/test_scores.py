"""Token scores (`generate(..., scores=True)`): each written token's log-probability under the
model's whole distribution and the mass the grammar's mask removed, checked against the same
quantities recomputed independently by teacher forcing the answer through the test model."""

from __future__ import annotations

import asyncio
import math
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from runtimes import InvalidRequest, RuntimeFailure, TokenScore
from runtimes.testing import RandomRuntime, ScriptedRuntime, render_plain

from test_jump_forward import _regexes

PROMPT = "Answer with one record. " * 2


def _teacher_forced(rt: RandomRuntime, prompt: str, answer: list[int], g: grammar.Grammar | None) -> list[tuple[float, float]]:
    """Per answer token: (logprob under the row before it, mass a fresh matcher's mask removes there)."""
    tokens = rt._tokenizer.encode(render_plain(prompt, None))
    hashes = []
    for token in tokens:
        hashes.append(zlib.crc32(token.to_bytes(8, "little", signed=True), hashes[-1] if hashes else 0))
    matcher = grammar.Matcher(grammar.compile(g, rt.vocabulary)) if g is not None else None
    expected = []
    for token in answer:
        row = rt._logits(tokens, hashes[-1]).astype(np.float64)
        probs = np.exp(row - row.max())
        probs /= probs.sum()
        masked = 0.0
        if matcher is not None:
            allowed = matcher.next_token_mask().allowed_ids()
            masked = 1.0 - float(probs[allowed].sum())
            assert matcher.accept_token(token)
        expected.append((math.log(probs[token]), masked))
        tokens.append(token)
        hashes.append(zlib.crc32(token.to_bytes(8, "little", signed=True), hashes[-1]))
    return expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_regexes(), seed=st.integers(0, 5), max_tokens=st.integers(1, 30),
       temperature=st.sampled_from([0.0, 1.0]), draft=st.sampled_from([None, "prompt"]))
def test_scores_are_the_models_probabilities_and_the_masks_removed_mass(pattern, seed, max_tokens, temperature, draft):
    g = grammar.from_regex(pattern)
    rt = RandomRuntime(seed=seed, draft=draft)
    # heal=False: the teacher forcing below reads the whole prompt (a healed one loses its last token).
    options = dict(grammar=g, max_tokens=max_tokens, temperature=temperature, seed=seed, heal=False)
    scored = rt.generate_sync(PROMPT, scores=True, **options)
    plain = RandomRuntime(seed=seed, draft=draft).generate_sync(PROMPT, **options)
    assert plain.token_scores is None
    assert (scored.text, scored.token_ids) == (plain.text, plain.token_ids)  # scoring changes no choice
    assert len(scored.token_scores) == len(scored.token_ids)
    assert b"".join(s.bytes for s in scored.token_scores).decode("utf-8", "replace") == scored.text
    expected = _teacher_forced(rt, PROMPT, scored.token_ids, g)
    for score, (logprob, masked) in zip(scored.token_scores, expected):
        assert score.logprob == pytest.approx(logprob, abs=1e-6)
        assert score.masked_mass == pytest.approx(masked, abs=1e-6)
        assert 0.0 <= score.masked_mass <= 1.0 and score.logprob <= 0.0


def test_free_decoding_scores_remove_no_mass():
    rt = RandomRuntime(seed=3)
    generation = rt.generate_sync(PROMPT, max_tokens=12, scores=True, heal=False)
    assert len(generation.token_scores) == len(generation.token_ids) > 0
    assert all(s.masked_mass == 0.0 for s in generation.token_scores)
    expected = _teacher_forced(rt, PROMPT, generation.token_ids, None)
    assert [s.logprob for s in generation.token_scores] == pytest.approx([e[0] for e in expected], abs=1e-6)


def test_a_scored_generation_reads_a_pass_per_token():
    g = grammar.from_regex('\\{"name":"[a-z]{1,8}","ok":(true|false)\\}')
    jumping = RandomRuntime(seed=1).generate_sync(PROMPT, grammar=g, max_tokens=40, heal=False)
    scored = RandomRuntime(seed=1).generate_sync(PROMPT, grammar=g, max_tokens=40, scores=True, heal=False)
    assert scored.text == jumping.text
    assert jumping.usage.forward_passes < scored.usage.forward_passes == scored.usage.completion_tokens
    assert all(isinstance(s, TokenScore) for s in scored.token_scores)


def test_scores_must_be_a_bool():
    with pytest.raises(InvalidRequest, match="scores"):
        RandomRuntime().generate_sync(PROMPT, scores="yes")


def test_a_healed_generations_scores_spell_its_text():
    g = grammar.from_regex('[a-z]{1,8}\\{"ok":(true|false)\\}')
    generation = RandomRuntime(seed=4).generate_sync("Answer with one rec", grammar=g, max_tokens=30, scores=True)
    assert generation.healed and len(generation.token_scores) == len(generation.token_ids)
    assert b"".join(s.bytes for s in generation.token_scores) == generation.text.encode()
    assert all(s.logprob <= 0.0 and 0.0 <= s.masked_mass <= 1.0 for s in generation.token_scores)


# --- `Runtime.score`: a given text's tokens read after a prompt ------------------------------

_TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXTS, seed=st.integers(0, 5), max_batch=st.sampled_from([1, 4]), draft=st.sampled_from([None, "prompt"]))
def test_a_scored_continuation_is_the_models_probability_of_each_of_its_tokens(text, seed, max_batch, draft):
    rt = RandomRuntime(seed=seed, max_batch=max_batch, draft=draft)
    scored = asyncio.run(rt.score(PROMPT, text))
    ids = rt._tokenizer.encode(text)
    expected = _teacher_forced(rt, PROMPT, ids, None)
    assert scored.text == text and len(scored.token_scores) == len(ids)
    assert b"".join(s.bytes for s in scored.token_scores) == b"".join(rt.vocabulary.token_bytes(i) for i in ids)
    assert [s.logprob for s in scored.token_scores] == pytest.approx([e[0] for e in expected], abs=1e-6)
    assert scored.logprob == pytest.approx(sum(e[0] for e in expected), abs=1e-5)
    assert all(s.masked_mass == 0.0 for s in scored.token_scores)
    assert scored.usage.completion_tokens == scored.usage.forward_passes == len(ids)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(_TEXTS, min_size=2, max_size=6), seed=st.integers(0, 3))
def test_continuations_scored_together_score_as_alone(texts, seed):
    together = RandomRuntime(seed=seed, max_batch=4, cache_cells=4096)

    async def all_at_once():
        return await asyncio.gather(*(together.score(PROMPT, t) for t in texts))

    batched = asyncio.run(all_at_once())
    alone = [asyncio.run(RandomRuntime(seed=seed).score(PROMPT, t)) for t in texts]
    for b, a in zip(batched, alone):
        assert [s.logprob for s in b.token_scores] == pytest.approx([s.logprob for s in a.token_scores], abs=1e-6)


@pytest.mark.parametrize("continuation", ["", None, 3, "\ud800"])
def test_a_continuation_no_model_could_read_is_refused(continuation):
    with pytest.raises(InvalidRequest, match="continuation"):
        asyncio.run(RandomRuntime().score(PROMPT, continuation))


def test_a_prompt_no_model_could_read_is_refused():
    with pytest.raises(InvalidRequest, match="prompt"):
        asyncio.run(RandomRuntime().score([{"role": ""}], "yes"))


def test_a_continuation_past_the_context_window_is_a_runtime_failure():
    rt = RandomRuntime()
    rt.context_length = 40
    with pytest.raises(RuntimeFailure, match="context window"):
        asyncio.run(rt.score(PROMPT, "x" * 60))


def test_a_runtime_that_cannot_read_a_continuation_says_so():
    rt = ScriptedRuntime(["unused"])
    assert not rt.scores_continuations and RandomRuntime().scores_continuations
    with pytest.raises(RuntimeFailure, match="cannot score"):
        asyncio.run(rt.score(PROMPT, "yes"))


def test_a_closed_runtime_scores_nothing():
    rt = RandomRuntime()
    asyncio.run(rt.aclose())
    with pytest.raises(RuntimeFailure, match="closed"):
        asyncio.run(rt.score(PROMPT, "yes"))

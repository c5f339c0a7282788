"""A draft model (`LlamaCpp(path, draft=PATH)`): its guesses are greedy, allowed by the grammar and
a function of the context alone, and greedy output with them is plain constrained greedy's.

The default model drafts for itself here (the same vocabulary, so most guesses are taken); the
evaluation models (Qwen2.5-Coder 0.5B for 1.5B) are measured in `bench.speculative`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import grammar
from runtimes import InvalidRequest, LlamaCpp
from runtimes._draft_model import DraftModel
from runtime_cases import CONTACT_SCHEMA, CONTACT_TEXTS, contact_chat

pytestmark = pytest.mark.model

CONTACT = grammar.from_json_schema(CONTACT_SCHEMA)


@pytest.fixture(scope="module")
def runtime(smollm2_gguf: Path):
    rt = LlamaCpp(smollm2_gguf, max_batch=3, n_ctx=1024)
    yield rt
    asyncio.run(rt.aclose())


async def test_greedy_output_with_a_draft_model_is_plain_greedy_output(runtime, smollm2_gguf):
    plain = [await runtime.generate(contact_chat(t), grammar=CONTACT, max_tokens=80) for t in CONTACT_TEXTS]
    runtime.draft = smollm2_gguf
    try:
        drafted = [await runtime.generate(contact_chat(t), grammar=CONTACT, max_tokens=80) for t in CONTACT_TEXTS]
    finally:
        runtime.draft = None
    for p, d in zip(plain, drafted, strict=True):
        assert d.token_ids == p.token_ids and d.text == p.text
        assert d.finish_reason == "grammar_complete"
        assert 0 < d.usage.accepted_tokens <= d.usage.drafted_tokens
        assert d.usage.forward_passes < p.usage.forward_passes


async def test_calls_decoding_together_each_draft_from_a_slot_of_their_own(runtime, smollm2_gguf):
    runtime.draft = smollm2_gguf
    drafter = runtime._drafter
    before = drafter.read
    try:
        got = await asyncio.gather(*(runtime.generate(contact_chat(t), grammar=CONTACT, max_tokens=80)
                                     for t in CONTACT_TEXTS))
    finally:
        runtime.draft = None
    for g in got:
        assert CONTACT.accepts(g.text)
        assert g.usage.accepted_tokens > 0
    # Each call's prompt is read by the draft model once, then only its new tokens: no call
    # takes another's slot and reads its prompt again.
    prompts = sum(g.usage.prompt_tokens for g in got)
    answers = sum(g.usage.completion_tokens + g.usage.drafted_tokens for g in got)
    assert drafter.read - before <= prompts + answers


def test_guesses_are_allowed_by_the_grammar_and_a_function_of_the_context(runtime, smollm2_gguf):
    digits = grammar.from_regex("[0-9]{1,12}")
    compiled = runtime.compiled(digits)
    model = DraftModel(runtime._lib, smollm2_gguf, vocabulary=runtime.vocabulary, positions=512, slots=2,
                       batch_tokens=256, n_threads=2)
    try:
        poem = runtime._prompt_ids(contact_chat("Write a short poem about the sea."), None)
        other = runtime._prompt_ids(contact_chat(CONTACT_TEXTS[0]), None)
        guesses = model.propose(poem, 8, grammar.Matcher(compiled))
        assert guesses and b"".join(runtime.vocabulary.token_bytes(t) for t in guesses).isdigit()
        check = grammar.Matcher(compiled)
        assert all(check.accept_token(t) for t in guesses)
        free = model.propose(poem, 8)  # without a grammar the model writes words, not digits
        assert free != guesses
        model.propose(other, 8)
        model.propose(other + free[:3], 8)
        assert model.propose(poem, 8, grammar.Matcher(compiled)) == guesses
        assert model.propose(poem, 8) == free
    finally:
        model.close()


def test_a_draft_model_must_share_the_vocabulary(runtime, smollm2_gguf, tmp_path):
    other = grammar.Vocabulary.from_tokens([b"a", b"b", b"</s>"], eos_ids=[2])
    with pytest.raises(InvalidRequest, match="another vocabulary"):
        DraftModel(runtime._lib, smollm2_gguf, vocabulary=other, positions=64, slots=1, batch_tokens=64,
                   n_threads=1)
    with pytest.raises(InvalidRequest, match="no draft model file"):
        runtime.draft = tmp_path / "missing.gguf"
    (tmp_path / "text.gguf").write_text("not a model")
    with pytest.raises(InvalidRequest, match="not a GGUF model file") as caught:
        runtime.draft = tmp_path / "text.gguf"
    assert caught.value.argument == "draft" and isinstance(caught.value.__cause__, grammar.GGUFError)
    assert runtime.draft is None


def test_a_draft_model_is_loaded_once_per_path(runtime, smollm2_gguf):
    runtime.draft = smollm2_gguf
    first = runtime._drafter
    runtime.draft = "prompt"
    runtime.draft = str(smollm2_gguf)
    try:
        assert runtime._drafter is first and runtime.draft == str(smollm2_gguf)
    finally:
        runtime.draft = None

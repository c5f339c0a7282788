"""Token healing: the prompt is backed up over its last token and the answer opens with that
token's bytes; the text handed back continues the caller's prompt and keeps to the grammar."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammar
from runtimes import InvalidRequest, OpenAICompatible
from runtimes.testing import GreedyTokenizer, RandomRuntime, render_plain

from test_jump_forward import _regexes

PROMPTS = st.text(alphabet="abcxyz é日,.:\"{}0123456789", min_size=1, max_size=20)


def _healed_bytes(rt: RandomRuntime, prompt: str) -> bytes:
    ids = GreedyTokenizer(rt.vocabulary).encode(render_plain(prompt, None))
    return rt.vocabulary.token_bytes(ids[-1]) if len(ids) > 1 else b""


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=PROMPTS, pattern=st.none() | _regexes(), seed=st.integers(0, 5), max_tokens=st.integers(1, 25),
       temperature=st.sampled_from([0.0, 1.0]))
def test_the_answer_opens_with_the_healed_bytes_and_keeps_to_the_grammar(prompt, pattern, seed, max_tokens, temperature):
    g = grammar.from_regex(pattern) if pattern is not None else None
    rt = RandomRuntime(seed=seed)
    got = rt.generate_sync(prompt, grammar=g, max_tokens=max_tokens, temperature=temperature, seed=seed, heal=True)
    written = rt.vocabulary.decode(got.token_ids)
    healed = _healed_bytes(rt, prompt)
    assert got.healed == healed
    text = got.text.encode("utf-8")
    if written.startswith(healed):
        assert written[len(healed):].decode("utf-8", "replace") == got.text  # free text may cut a character
    else:  # the budget ran out while the healed bytes were still being written
        assert healed.startswith(written) and got.text == "" and got.finish_reason in ("length", "grammar_complete")
    if g is not None and got.finish_reason == "grammar_complete":
        assert g.accepts(got.text)
    elif g is not None:
        matcher = grammar.Matcher(grammar.compile(g, rt.vocabulary))
        assert matcher.accept_bytes(text)  # a prefix of a sentence, cut by the budget


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompt=PROMPTS, pattern=_regexes(), seed=st.integers(0, 5), draft=st.sampled_from([None, "prompt"]))
def test_healing_composes_with_jump_forward_and_drafting(prompt, pattern, seed, draft):
    g = grammar.from_regex(pattern)
    options = dict(grammar=g, max_tokens=20, heal=True)
    plain = RandomRuntime(seed=seed, jump_forward=False).generate_sync(prompt, **options)
    fast = RandomRuntime(seed=seed, jump_forward=True, draft=draft).generate_sync(prompt, **options)
    assert (fast.text, fast.token_ids, fast.finish_reason) == (plain.text, plain.token_ids, plain.finish_reason)


@pytest.mark.parametrize("prompt, healed", [("Say a wor", True), ("Say a word ", True), ("Say:", False),
                                            ("Say:\n", False), ("x_", True), ("Zahl 7", True), ("{", False)])
def test_by_default_a_raw_prompt_ending_in_a_word_character_or_a_space_is_healed(prompt, healed):
    default = RandomRuntime(seed=2).generate_sync(prompt, max_tokens=6)
    chosen = RandomRuntime(seed=2).generate_sync(prompt, max_tokens=6, heal=healed)
    assert (default.text, default.token_ids) == (chosen.text, chosen.token_ids)


def test_a_chat_is_never_healed_by_default():
    chat = [{"role": "user", "content": "Say a wor"}]
    assert RandomRuntime(seed=2).generate_sync(chat, max_tokens=6).token_ids == \
        RandomRuntime(seed=2).generate_sync(chat, max_tokens=6, heal=False).token_ids


def test_heal_is_checked():
    with pytest.raises(InvalidRequest, match="heal.*raw string"):
        RandomRuntime().generate_sync([{"role": "user", "content": "hi"}], heal=True)
    with pytest.raises(InvalidRequest, match="heal"):
        RandomRuntime().generate_sync("hi", heal="yes")
    with pytest.raises(InvalidRequest, match="heal.*server"):
        asyncio.run(OpenAICompatible("http://127.0.0.1:9", model="m", max_retries=0).generate("hi", heal=True))

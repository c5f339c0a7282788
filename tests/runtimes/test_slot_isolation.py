"""Calls decoded together share a KV cache and forward passes, never state. On the default model,
teacher-forced: a slot reused after a cancelled occupant reads exactly as a fresh context, and what
other sequences hold or decode (a cancelled occupant before, neighbours beside) does not move a
call's logits by one bit. Batched greedy answers may still part from solo ones at near-ties: the
forward passes' composition changes llama.cpp's summation order (docs/runtimes.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.model


def llama_context(path: Path, max_batch: int):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: pip install 'agentkit[llama]'")
    from runtimes._llama_context import LlamaContext
    from runtimes.llamacpp import import_llama_cpp

    return LlamaContext(import_llama_cpp(), path, cells=2048, max_batch=max_batch, batch_tokens=512, n_threads=2,
                        unified=True)


def tokens(ctx, text: str) -> list[int]:
    return ctx.tokenize(text.encode(), add_special=False, parse_special=False)


def forced(ctx, seq: int, prompt: list[int], continuation: list[int]) -> list[np.ndarray]:
    """The logits after the prompt (read in one pass) and after each forced next token."""
    rows = [ctx.decode([(seq, 0, prompt, True)])[0].copy()]
    for i, token in enumerate(continuation):
        rows.append(ctx.decode([(seq, len(prompt) + i, [token], True)])[0].copy())
    return rows


def test_a_slot_reused_after_a_cancel_reads_exactly_as_a_fresh_context(smollm2_gguf):
    shared = llama_context(smollm2_gguf, max_batch=4)
    fresh = llama_context(smollm2_gguf, max_batch=4)
    try:
        shared.decode([(1, 0, tokens(shared, "An idle prompt kept in the cache."), False)])  # a neighbour's cells
        occupant = tokens(shared, "Tell me a long story about a dragon.")
        forced(shared, 0, occupant, occupant[:6])  # an occupant decodes, then is cancelled:
        assert shared.keep(0, 0) == 0  # its cells go, as the scheduler drops them
        prompt = tokens(shared, "Name three colours of the rainbow.")
        continuation = tokens(shared, " Red, green and blue.")
        mine, theirs = forced(shared, 0, prompt, continuation), forced(fresh, 0, prompt, continuation)
        for step, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            assert np.array_equal(a, b), f"step {step}: the reused slot's logits differ by {np.abs(a - b).max()}"
    finally:
        shared.close()
        fresh.close()


def run_beside(ctx, occupant: str, neighbour: str, prompt: list[int], continuation: list[int]) -> list[np.ndarray]:
    """`prompt` and its forced continuation on sequence 0 after `occupant` held it and was
    cancelled, while `neighbour` decodes one token a step beside it on sequence 1."""

    held = tokens(ctx, occupant)
    forced(ctx, 0, held, held[:4])
    ctx.keep(0, 0)
    beside = tokens(ctx, neighbour)
    rows = [ctx.decode([(0, 0, prompt, True), (1, 0, beside[:3], True)])[0].copy()]
    for i, token in enumerate(continuation):
        entries = [(0, len(prompt) + i, [token], True), (1, 3 + i, [beside[(3 + i) % len(beside)]], True)]
        rows.append(ctx.decode(entries)[0].copy())
    return rows


def test_what_other_sequences_hold_does_not_move_a_calls_logits(smollm2_gguf):
    # Same lengths on both sides, so the cache layout and every pass's size are the same: only
    # the other sequences' contents differ, and a leak between slots would show as a difference.
    one = llama_context(smollm2_gguf, max_batch=4)
    other = llama_context(smollm2_gguf, max_batch=4)
    try:
        prompt, continuation = tokens(one, "Name three colours of the rainbow."), tokens(one, " Red, green and blue.")
        sides = [("Tell me a long story about a dragon.", "Ignore that and list ten animals."),
                 ("Write a poem about the sea at night.", "What is the boiling point of water?")]
        (occupant_a, neighbour_a), (occupant_b, neighbour_b) = sides
        assert len(tokens(one, occupant_a)) == len(tokens(one, occupant_b))
        assert len(tokens(one, neighbour_a)) == len(tokens(one, neighbour_b))
        mine = run_beside(one, *sides[0], prompt, continuation)
        theirs = run_beside(other, *sides[1], prompt, continuation)
        for step, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            assert np.array_equal(a, b), f"step {step}: other sequences' contents moved logits by {np.abs(a - b).max()}"
    finally:
        one.close()
        other.close()

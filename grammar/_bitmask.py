"""Packed token bitmasks: int32 words, ceil(V/32) per row, bit i of word j = token 32*j + i.

The layout XGrammar, llguidance and MLC-LLM's `apply_bitmask_inplace` use, so rows filled here
can be handed to them unchanged.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def allocate_token_bitmask(batch: int, vocab_size: int) -> np.ndarray:
    """A (batch, ceil(vocab_size/32)) int32 bitmask with every token allowed."""
    return np.full((batch, -(-vocab_size // 32)), -1, dtype=np.int32)


def unpack_bitmask(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """The boolean allowed-vector(s) of a packed bitmask (one row or a batch)."""
    rows = np.atleast_2d(bitmask)
    bits = np.unpackbits(rows.astype("<i4").view(np.uint8), axis=-1, bitorder="little")
    bits = bits[:, :vocab_size].astype(bool)
    return bits[0] if bitmask.ndim == 1 else bits


def apply_token_bitmask(logits: np.ndarray, bitmask: np.ndarray) -> None:
    """Set, in place, every logit whose bit is clear to -inf (one row or a batch of rows)."""
    vocab_size = logits.shape[-1]
    allowed = unpack_bitmask(bitmask, vocab_size)
    if logits.ndim == 1:
        if allowed.ndim == 2:
            allowed = allowed[0]
        logits[~allowed] = -np.inf
    else:
        logits[~allowed[: logits.shape[0]]] = -np.inf


def fill_next_token_bitmasks(matchers: Sequence, bitmask: np.ndarray) -> None:
    """Fill row i of `bitmask` with matcher i's next-token mask: B sequences, one call."""
    for i, matcher in enumerate(matchers):
        matcher.fill_next_token_bitmask(bitmask, i)

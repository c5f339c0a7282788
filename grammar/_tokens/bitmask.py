"""Packed token bitmasks: int32 words, ceil(V/32) per row, bit i of word j = token 32*j + i.

The layout XGrammar, llguidance and MLC-LLM's `apply_bitmask_inplace` use, so rows filled here
can be handed to them unchanged.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def words_per_row(vocab_size: int) -> int:
    return -(-vocab_size // 32)


_INT32 = np.dtype(np.int32)


def bitmask_row(bitmask: np.ndarray, index: int, vocab_size: int) -> np.ndarray:
    """Row `index` of a batch bitmask, or a one-row bitmask itself (index 0), checked to be a
    row masks can be written into for `vocab_size` tokens; a ValueError says what was expected.
    Attribute checks only, as few as the usual call needs: decoding calls this at every step,
    right after a forward pass has left every cache cold, where each read costs a microsecond."""
    if type(bitmask) is np.ndarray and bitmask.dtype is _INT32 and type(index) is int:
        shape = bitmask.shape
        flags = bitmask.flags
        # A contiguous array's rows are contiguous: one flags read covers every row.
        if shape and flags.c_contiguous and flags.writeable and shape[-1] == -(-vocab_size // 32):
            if len(shape) == 2 and 0 <= index < shape[0]:
                return bitmask[index]
            if len(shape) == 1 and index == 0:
                return bitmask
    return _checked_row(bitmask, index, vocab_size)


def _checked_row(bitmask: np.ndarray, index: int, vocab_size: int) -> np.ndarray:
    """`bitmask_row`'s checks one by one, each with its message."""
    if not isinstance(bitmask, np.ndarray) or bitmask.dtype != np.int32:
        raise ValueError(
            f"the bitmask must be an int32 numpy array (see allocate_token_bitmask), not {_described(bitmask)}"
        )
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise ValueError(f"the bitmask row index must be an integer, not {type(index).__name__}")
    if bitmask.ndim == 1:
        if index != 0:
            raise ValueError(f"a one-row bitmask has only row 0, not row {index}")
        row = bitmask
    elif bitmask.ndim == 2:
        if not 0 <= index < bitmask.shape[0]:
            raise ValueError(f"row {index} is outside the bitmask's rows 0..{bitmask.shape[0] - 1}")
        row = bitmask[index]
    else:
        raise ValueError(
            f"the bitmask must be one row or a batch of rows (1 or 2 dimensions), not shape {bitmask.shape}"
        )
    words = words_per_row(vocab_size)
    if row.shape[0] != words:
        raise ValueError(f"a bitmask row for {vocab_size} tokens has {words} int32 words, not {row.shape[0]}")
    if not row.flags.c_contiguous or not row.flags.writeable:
        raise ValueError("bitmask rows must be C-contiguous and writable (see allocate_token_bitmask)")
    return row


def _described(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype}"
    return type(value).__name__


def allocate_token_bitmask(batch: int, vocab_size: int) -> np.ndarray:
    """A (batch, ceil(vocab_size/32)) int32 bitmask with every token allowed."""
    return np.full((batch, words_per_row(vocab_size)), -1, dtype=np.int32)


def unpack_bitmask(bitmask: np.ndarray, vocab_size: int) -> np.ndarray:
    """The boolean allowed-vector(s) of a packed bitmask (one row or a batch)."""
    rows = np.atleast_2d(bitmask)
    bits = np.unpackbits(rows.astype("<i4").view(np.uint8), axis=-1, bitorder="little")
    bits = bits[:, :vocab_size].astype(bool)
    return bits[0] if bitmask.ndim == 1 else bits


def apply_token_bitmask(logits: np.ndarray, bitmask: np.ndarray) -> None:
    """Set, in place, every logit whose bit is clear to -inf (one row or a batch of rows)."""
    _check_logits(logits, bitmask)
    vocab_size = logits.shape[-1]
    allowed = unpack_bitmask(bitmask, vocab_size)
    if logits.ndim == 1:
        if allowed.ndim == 2:
            allowed = allowed[0]
        logits[~allowed] = -np.inf
    else:
        logits[~allowed[: logits.shape[0]]] = -np.inf


def _check_logits(logits: np.ndarray, bitmask: np.ndarray) -> None:
    """A ValueError unless `bitmask` can mask `logits`: a float row or batch of rows, and an
    int32 mask of one row per logits row (or more) of ceil(width/32) words."""
    if not (isinstance(logits, np.ndarray) and np.issubdtype(logits.dtype, np.floating) and logits.ndim in (1, 2)):
        raise ValueError(f"logits must be a float numpy array, one row or a batch of rows, not {_described(logits)}")
    if not isinstance(bitmask, np.ndarray) or bitmask.dtype != np.int32 or bitmask.ndim not in (1, 2):
        raise ValueError(f"the bitmask must be an int32 numpy array of 1 or 2 dimensions, not {_described(bitmask)}")
    words = words_per_row(logits.shape[-1])
    if bitmask.shape[-1] != words:
        raise ValueError(
            f"logits {logits.shape[-1]} wide need bitmask rows of {words} int32 words, not {bitmask.shape[-1]}"
        )
    if logits.ndim == 2 and (bitmask.ndim != 2 or bitmask.shape[0] < logits.shape[0]):
        raise ValueError(
            f"{logits.shape[0]} rows of logits need a bitmask of at least as many rows, not shape {bitmask.shape}"
        )


def fill_next_token_bitmasks(matchers: Sequence, bitmask: np.ndarray) -> None:
    """Fill row i of `bitmask` with matcher i's next-token mask: B sequences, one call."""
    for i, matcher in enumerate(matchers):
        matcher.fill_next_token_bitmask(bitmask, i)

"""What the batching scheduler and the models it drives agree on: a step's `Feed`s, and
`BatchModel`, the face of a local model the scheduler sees (`LocalRuntime` is one; its
subclasses implement the hooks). Below both, so neither imports the other."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class Feed:
    """Tokens to append to one slot's sequence in a step, at positions `start`, `start + 1`, ...;
    `logits`: after how many of the last tokens the logits are wanted (0: none; 1: after the
    last only; more where guesses are checked, one row after each)."""

    slot: int
    start: int
    tokens: list[int]
    logits: int


class BatchModel(Protocol):
    """A model that decodes up to `max_batch` sequences (slots) per forward pass, at most
    `batch_tokens` tokens a pass of which `prefill_chunk` may be one prompt's, in a cache of
    `cache_cells` cells all slots share (None: each slot has its own)."""

    name: str
    closed: bool
    max_batch: int
    batch_tokens: int | None
    prefill_chunk: int | None
    cache_cells: int | None
    model_lock: threading.Lock  # held around every call below

    def begin_slot(self, slot: int, keep: int) -> int:
        """Drop what `slot`'s cache holds past its first `keep` tokens; how many it kept (also
        how a step's rejected guesses leave the cache)."""

    def begin_slot_from(self, source: int, slot: int, length: int) -> bool:
        """Start `slot` from the first `length` cached tokens of `source`'s; False if it can't."""

    def read_batch(self, feeds: list[Feed]) -> list[Any]:
        """One forward pass over every feed; per feed, its `logits` rows in position order (an
        empty list where it wants none), valid until the next read."""


def common_prefix(held: list[int], tokens: list[int]) -> int:
    """How many leading tokens `held` (what a slot's cache holds) shares with `tokens`."""
    n = min(len(held), len(tokens))
    if n <= 0:
        return 0
    differ = np.flatnonzero(np.asarray(held[:n], dtype=np.int64) != np.asarray(tokens[:n], dtype=np.int64))
    return int(differ[0]) if differ.size else n

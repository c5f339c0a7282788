"""A draft model for speculative decoding (`LlamaCpp(path, draft=DRAFT_PATH)`): a smaller GGUF
model with the same vocabulary guesses the next tokens greedily, and the target checks them all
in one forward pass (`Sequence` verifies, as for prompt lookup).

Each guess is chosen under a fork of the request's grammar matcher, so every guess is one the
grammar allows, and tokens the grammar forces are taken without a draft pass (read with the
next one). The guesses are a function of the context (greedy), so the acceptance rule for a
drafter that guesses one token for certain applies at any temperature.

The draft model keeps one KV cache slot per call decoding at once. A proposal goes to the slot
already holding its context (the same call's last proposal, less the guesses the target
refused), so only what is new is read; a new call takes the slot used least recently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from grammar import GGUFError, Matcher, Vocabulary

from ._batch import common_prefix
from ._errors import InvalidRequest, RuntimeUnavailable
from ._llama_context import LlamaContext
from ._llamacpp_check import ensure_long_prompts_run

class DraftModel:
    """Greedy guesses of a small llama.cpp model, masked by the grammar (a `Drafter`).

    `positions` is the most a call's context plus its guesses may hold (the target's `n_ctx`);
    `slots` the calls that keep a cache of their own (the target's `max_batch`).
    """

    guided = True  # `propose` takes a fork of the grammar's matcher

    def __init__(self, lib: Any, path: str | Path, *, vocabulary: Vocabulary, positions: int, slots: int,
                 batch_tokens: int, n_threads: int):
        self.path = Path(path)
        if not self.path.is_file():
            raise InvalidRequest("draft", f"no draft model file at {self.path}")
        try:
            spelled = Vocabulary.from_gguf(self.path)
        except GGUFError as exc:
            raise InvalidRequest("draft", f"{self.path} is not a GGUF model file llama.cpp can load: {exc}") from exc
        if spelled != vocabulary:
            raise InvalidRequest(
                "draft", f"{self.path.name} has another vocabulary than the model's: a draft model must "
                "spell every token id the same way (a smaller model of the same family)"
            )
        ensure_long_prompts_run(self.path)
        self._context = LlamaContext(lib, self.path, cells=positions * slots, max_batch=slots,
                                     batch_tokens=batch_tokens, n_threads=n_threads, unified=False)
        if not self._context.keeps_partial:
            self._context.close()
            raise RuntimeUnavailable(f"draft model {self.path.name}: its cache cannot drop refused guesses "
                                     "(a recurrent model)")
        self.positions = positions
        self._batch = batch_tokens
        self._eos = frozenset(vocabulary.eos_ids)
        self._held: list[list[int]] = [[] for _ in range(slots)]  # the tokens each slot's cache holds
        self._used = [0] * slots  # when each slot last served, for the least recently used
        self._clock = 0
        self._most_guesses = 0  # the largest proposal asked for: see `_slot_for`
        self.passes = 0  # draft forward passes and the tokens they read, for benchmarks and tests
        self.read = 0

    def propose(self, context: list[int], limit: int, matcher: Matcher | None = None) -> list[int]:
        """Up to `limit` greedy guesses to follow `context`, each allowed by `matcher` (a fork at
        the end of `context`, advanced over the guesses) where one is given."""
        if limit < 1 or not context or len(context) + limit > self.positions:
            return []
        self._most_guesses = max(self._most_guesses, limit)
        slot, row = self._read_context(context)
        guesses: list[int] = []
        unread: list[int] = []  # guesses the draft model has not read yet
        while len(guesses) < limit:
            mask = matcher.next_token_mask() if matcher is not None else None
            if mask is not None and mask.count == 0:
                break
            if mask is not None and mask.count == 1:
                token = int(mask.allowed_ids()[0])  # forced: no pass needed to choose it
            else:
                if unread:
                    row = self._read(slot, unread)
                    unread = []
                token = mask.argmax(row) if mask is not None else int(np.argmax(row))
            if token in self._eos or (matcher is not None and not matcher.accept_token(token)):
                break
            guesses.append(token)
            unread.append(token)
        return guesses

    def _read_context(self, context: list[int]) -> tuple[int, np.ndarray]:
        """A slot holding `context`, and the logits after its last token."""
        slot, common = self._slot_for(context)
        keep = self._context.keep(slot, min(common, len(context) - 1))  # the last token is read again: its row
        del self._held[slot][keep:]
        self._clock += 1
        self._used[slot] = self._clock
        rest = context[keep:]
        for start in range(0, len(rest), self._batch):
            row = self._read(slot, rest[start : start + self._batch])
        return slot, row

    def _slot_for(self, context: list[int]) -> tuple[int, int]:
        """The slot this context continues (its own call's), else the least recently used;
        with how many of the context's first tokens it holds. A call's own slot holds past the
        context only guesses the target refused, at most a proposal's worth; a slot that holds
        more past the tokens it shares with the context is another call's."""
        shared = [common_prefix(held, context) for held in self._held]
        best, best_common = -1, 0
        for slot, (held, common) in enumerate(zip(self._held, shared)):
            if len(held) - common <= self._most_guesses and common > best_common:
                best, best_common = slot, common
        if best >= 0:
            return best, best_common
        slot = int(np.argmin(self._used))
        return slot, shared[slot]

    def _read(self, slot: int, tokens: list[int]) -> np.ndarray:
        """Read `tokens` after what the slot holds; the logits after the last."""
        held = self._held[slot]
        (rows,) = self._context.decode([(slot, len(held), tokens, 1)])
        held.extend(tokens)
        self.passes += 1
        self.read += len(tokens)
        return rows[0]

    def close(self) -> None:
        self._context.close()

    def __repr__(self) -> str:
        return f"DraftModel({str(self.path)!r})"


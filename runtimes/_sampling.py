"""Choosing the next token from a logits row and, when constrained, the grammar's token mask.

Where the mask allows few tokens, selection looks at those logits only (a gather of `count`
values), so a constrained step costs O(allowed) instead of O(vocabulary).
"""

from __future__ import annotations

import numpy as np

from grammar import TokenMask

from .checks import GREEDY_BELOW

# Above this many allowed ids, masking the row in place and sampling over it is cheaper than a
# gather into a fresh array.
SPARSE_SAMPLING_LIMIT = 4096
# Candidates sorted first when cutting to top_p (more are taken only if their mass falls short).
NUCLEUS_START = 64


class Sampler:
    """Greedy (temperature 0, or below `GREEDY_BELOW`) or seeded temperature / nucleus (top_p) sampling."""

    def __init__(self, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = None):
        self.temperature = temperature
        self.top_p = top_p
        self.rng = np.random.default_rng(seed)

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW

    def select(self, logits: np.ndarray, mask: TokenMask | None = None) -> int:
        """The next token id. `logits` is a scratch row: it may be overwritten.

        Where the mask allows one token there is no choice, and no random number is drawn: a
        seeded sampled answer is the same whether forced tokens are taken here or jumped over."""
        if mask is not None and mask.count == 1:
            return int(mask.allowed_ids()[0])
        if mask is None:
            if self.greedy:
                return int(np.argmax(logits))
            return int(self._sample(logits))
        if self.greedy:
            return int(mask.argmax(logits))
        if mask.count <= SPARSE_SAMPLING_LIMIT:
            ids = mask.allowed_ids()
            return int(ids[self._sample(logits[ids])])
        mask.apply(logits)
        return int(self._sample(logits))

    def verify(self, logits: np.ndarray, mask: TokenMask | None, draft: int) -> int:
        """The next token, given a drafter's guess `draft` (a point mass: a drafter whose guess
        is a function of the context). Greedy: the same choice as `select`. Sampling: the
        speculative acceptance rule, so the token follows `select`'s distribution p exactly:
        `draft` with probability p(draft), else a draw from p without `draft`, renormalised.
        `logits` is a scratch row: it may be overwritten."""
        if self.greedy or (mask is not None and mask.count == 1):
            return self.select(logits, mask)
        ids: np.ndarray | None = None
        values = logits
        if mask is not None:
            if mask.count <= SPARSE_SAMPLING_LIMIT:
                ids = mask.allowed_ids()
                values = logits[ids]
            else:
                mask.apply(logits)
        kept, probs = self._distribution(values)
        at = np.flatnonzero((kept if ids is None else ids[kept]) == draft)
        total = probs.sum()
        if at.size and self.rng.random() * total < probs[at[0]]:
            return draft
        if at.size:
            probs[at[0]] = 0.0
        index = int(kept[self._draw(np.cumsum(probs))])
        return index if ids is None else int(ids[index])

    def _distribution(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The indices into `values` that `_sample` may draw (all, or the top_p nucleus) and
        their unnormalised probabilities."""
        scaled = values.astype(np.float64) / self.temperature
        scaled -= scaled.max()
        probs = np.exp(scaled)
        if self.top_p < 1.0:
            kept = self._nucleus(probs)
            return kept, probs[kept]
        return np.arange(values.size), probs

    def _sample(self, values: np.ndarray) -> int:
        """An index into `values` drawn from softmax(values / temperature), cut to top_p."""
        scaled = values.astype(np.float64) / self.temperature
        scaled -= scaled.max()
        probs = np.exp(scaled)
        if self.top_p < 1.0:
            kept = self._nucleus(probs)
            return int(kept[self._draw(np.cumsum(probs[kept]))])
        return self._draw(np.cumsum(probs))

    def _nucleus(self, probs: np.ndarray) -> np.ndarray:
        """The most probable indices whose mass reaches top_p, most probable first.

        Sorts only the top k (k grown as needed), not the whole vocabulary: the nucleus is
        usually a few dozen tokens."""
        target = self.top_p * probs.sum()
        k = min(NUCLEUS_START, probs.size)
        while True:
            top = np.argpartition(-probs, k - 1)[:k] if k < probs.size else np.arange(probs.size)
            order = top[np.argsort(-probs[top], kind="stable")]
            cumulative = np.cumsum(probs[order])
            if cumulative[-1] >= target or k == probs.size:
                return order[: int(np.searchsorted(cumulative, target)) + 1]
            k = min(k * 8, probs.size)

    def _draw(self, cumulative: np.ndarray) -> int:
        point = self.rng.random() * cumulative[-1]
        return min(int(np.searchsorted(cumulative, point, side="right")), len(cumulative) - 1)


class ForcedTokens(Sampler):
    """The "choice" of a sequence that reads a given text (`Runtime.score`): its next token,
    whatever the row says, so each of the text's tokens is scored against the row before it."""

    def __init__(self, tokens: list[int]):
        super().__init__()
        self._tokens = iter(tokens)

    def select(self, logits: np.ndarray, mask: TokenMask | None = None) -> int:
        return next(self._tokens)

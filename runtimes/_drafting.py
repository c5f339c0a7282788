"""Drafters for speculative decoding: cheap guesses at the next tokens, which the model then
checks all in one forward pass (`Sequence` verifies them; the scheduler feeds them).

`PromptLookup` guesses by n-gram match: where the last few tokens of the context (the prompt
and the answer so far) occurred before, the tokens that followed them then are proposed now.
An extraction copies names, dates and addresses from its prompt, so its answer is full of such
spans. The guess is a function of the context alone (a point mass, for the acceptance rule at
temperature > 0).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ._errors import InvalidRequest


class Drafter(Protocol):
    """Proposes up to `limit` tokens to follow `context`; deterministic in `context`.

    A drafter with `guided = True` (the draft model, `_draft_model.DraftModel`) is called as
    `propose(context, limit, matcher)` with a fork of the grammar's matcher at the end of
    `context` (None without a grammar), to choose only guesses the grammar allows.
    """

    def propose(self, context: list[int], limit: int) -> list[int]:
        ...


class PromptLookup:
    """Prompt lookup decoding: the tokens that followed the latest earlier occurrence of the
    context's last `n` tokens, for `n` from `max_ngram` down to `min_ngram` (longest match first)."""

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        if not 1 <= min_ngram <= max_ngram:
            raise InvalidRequest("draft", f"PromptLookup needs 1 <= min_ngram <= max_ngram, got {min_ngram}, {max_ngram}")
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def propose(self, context: list[int], limit: int) -> list[int]:
        length = len(context)
        if limit < 1 or length < 2:
            return []
        tokens = np.asarray(context, dtype=np.int64)
        for n in range(min(self.max_ngram, length - 1), self.min_ngram - 1, -1):
            tail = tokens[length - n :]
            # Candidate ends of an earlier occurrence: positions n-1 .. length-2 holding the last token.
            ends = np.flatnonzero(tokens[n - 1 : length - 1] == tail[-1]) + (n - 1)
            for end in ends[::-1]:  # the latest occurrence first: the freshest context
                if n == 1 or np.array_equal(tokens[end - n + 1 : end + 1], tail):
                    return [int(t) for t in tokens[end + 1 : end + 1 + limit]]
        return []

    def __repr__(self) -> str:
        return f"PromptLookup(max_ngram={self.max_ngram}, min_ngram={self.min_ngram})"


def drafter_for(draft: object) -> Drafter | None:
    """The drafter a runtime's `draft` option names: None (no drafting), "prompt" (prompt
    lookup), or a `Drafter` given as it is."""
    if draft is None:
        return None
    if draft == "prompt":
        return PromptLookup()
    if hasattr(draft, "propose"):
        return draft
    raise InvalidRequest("draft", f"must be None, 'prompt' or a drafter with propose(context, limit), not {draft!r}")

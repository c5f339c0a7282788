"""One generation's token-by-token state, advanced one model step at a time.

A `Sequence` does not call the model: the scheduler feeds it each step's logits and reads the
token it chose, so many sequences can share one forward pass. It owns what is per request: the
matcher, the sampler, the budget and its steering, cancellation, the text decoder and the
caller's future.
"""

from __future__ import annotations

import codecs
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from grammar import Matcher, ReasoningSpan, Vocabulary

from ._errors import RuntimeFailure
from ._protocol import FinishReason, Generation, Usage
from ._sampling import Sampler
from ._span_budget import SpanBudget

logger = logging.getLogger("runtimes")

# How a runtime turns a logits row into the row to select from and the mask still to apply.
MaskLogits = Callable[[Any, Matcher], "tuple[np.ndarray, TokenMask | None]"]
HostLogits = Callable[[Any], np.ndarray]


class Sequence:
    """A request admitted for decoding: its prompt, budget and everything chosen so far."""

    def __init__(
        self,
        name: str,
        vocabulary: Vocabulary,
        prompt: list[int],
        budget: int,
        matcher: Matcher | None,
        sampler: Sampler,
        sink: Callable[[str], None] | None,
        cancel: threading.Event,
        host: HostLogits,
        masked: MaskLogits,
        reasoning: ReasoningSpan | None = None,
    ):
        self.name = name
        self.vocabulary = vocabulary
        self.prompt = prompt
        self.budget = budget
        self.matcher = matcher
        self.sampler = sampler
        self.sink = sink
        self.cancel = cancel
        self._host = host
        self._masked = masked
        self.future: concurrent.futures.Future[Generation] = concurrent.futures.Future()
        self.steered_from: int | None = None  # where tokens began to be chosen for the budget
        self.token_ids: list[int] = []
        self.generated = 0  # tokens chosen, an end-of-sequence token included
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pieces: list[str] = []
        # A reasoning span's token budget, kept where a grammar opens with one that has a budget.
        self._span = (SpanBudget(reasoning) if matcher is not None and reasoning is not None
                      and reasoning.max_tokens is not None else None)

    @property
    def done(self) -> bool:
        return self.future.done()

    def advance(self, logits: Any) -> int | None:
        """Choose from this step's logits; the token to read next, or None once finished."""
        if self.cancel.is_set():
            self.finish("cancelled")
            return None
        token = self._choose(logits, self.budget - self.generated)
        self.generated += 1
        if token in self.vocabulary.eos_ids:
            self.finish("grammar_complete" if self.matcher is not None else "stop")
            return None
        self._emit(token)
        if self.matcher is not None and self.matcher.is_terminated():
            self.finish("grammar_complete")
            return None
        if self.generated == self.budget:
            complete = self.matcher is not None and self.matcher.is_complete()
            self.finish("grammar_complete" if complete else "length")
            return None
        return token

    def _choose(self, logits: Any, remaining: int) -> int:
        """The next token; under a grammar, one after which the document can still be closed
        within the `remaining - 1` tokens left.

        The model's choice stands wherever a completion that fits is certain; elsewhere the
        choice is the model's favourite among the tokens that keep one certain. A generation
        whose first state can be completed within its budget so always ends whole.
        """
        matcher = self.matcher
        if matcher is None:
            return self.sampler.select(self._host(logits))
        if self._span is not None and self._span.spent:
            token = matcher.token_spelling(self._span.close_left())
            if token is not None:  # else no token spells it here: the grammar decides, as ever
                if not matcher.accept_token(token):
                    raise RuntimeFailure(f"the matcher refused token {token}, which spells the reasoning span's close")
                return token
        row, mask = self._masked(logits, matcher)
        token = self.sampler.select(row, mask)
        if not matcher.accept_token(token):
            raise RuntimeFailure(f"the matcher refused token {token}, which its own mask allowed")
        if matcher.is_complete() or matcher.can_complete_within(remaining - 1):
            return token
        matcher.rollback(1)
        if self.steered_from is None:
            self.steered_from = sum(len(p) for p in self._pieces)
            logger.info(
                "%s: budget steering took over with %d tokens left, after %d characters; "
                "the rest closes the document within the budget",
                self.name, remaining, self.steered_from,
            )
        ids = matcher.completion_token_ids(within=remaining)
        token = int(ids[int(np.argmax(row[ids]))])
        if not matcher.accept_token(token):
            raise RuntimeFailure(f"the matcher refused its own completion token {token}")
        return token

    def _emit(self, token: int) -> None:
        self.token_ids.append(token)
        piece = self._text.decode(self.vocabulary.token_bytes(token))
        if self._span is not None:
            self._span.read(piece)
        if piece:
            self._pieces.append(piece)
            if self.sink is not None:
                self.sink(piece)

    def finish(self, reason: FinishReason) -> None:
        """End the generation: flush the decoder and hand the caller its `Generation`."""
        tail = self._text.decode(b"", final=True)
        if tail:
            self._pieces.append(tail)
            if self.sink is not None:
                self.sink(tail)
        usage = Usage(len(self.prompt), self.generated)
        generation = Generation("".join(self._pieces), reason, usage, self.token_ids, self.steered_from)
        if not self.future.done():
            self.future.set_result(generation)

    def fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)

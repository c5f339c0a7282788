"""One generation's token-by-token state, advanced one model step at a time.

A `Sequence` does not call the model: the scheduler feeds it each step's logits and reads the
tokens it chose, so many sequences can share one forward pass. It owns what is per request: the
matcher, the sampler, the budget and its steering, cancellation, the text decoder and the
caller's future.

A step may carry more than one token. Jump-forward: where the grammar allows exactly one next
token, it is taken without asking the model (no choice exists), and so on while that holds;
the model reads all of them in the next pass. Drafting: a drafter guesses tokens after those,
each checked against a fork of the matcher so every guess is grammar-valid; the model reads
them in the same pass, with logits after each, and `advance` then chooses at each position as
it would have step by step, keeping the guesses up to the first one its choice differs from
(greedy: identical output; sampling: the speculative acceptance rule, same distribution).

Scores (`scores=True`): each token chosen from a logits row is scored against that whole row
(its log-probability, and the mass the grammar's mask removed). A forced token taken without a
pass has no row, so a scored sequence does not jump forward.

Healing (`healing`: the bytes of the prompt's last token, backed up over): until the answer has
written them, each token is chosen among those that spell them (see `_healing`), and only what
lies past them reaches the text and the grammar; no jump or guess is made meanwhile.
"""

from __future__ import annotations

import codecs
import concurrent.futures
import logging
import threading
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import numpy as np

from grammar import Matcher, ReasoningSpan, TokenMask, Vocabulary

from ._asap import Walk
from ._drafting import Drafter
from ._healing import Healer
from ._errors import RuntimeFailure
from ._protocol import FinishReason, Generation, TokenScore, Usage
from ._sampling import Sampler
from ._span_budget import SpanBudget

logger = logging.getLogger("runtimes")

# How a runtime turns a logits row into the row to select from and the mask still to apply.
MaskLogits = Callable[[Any, Matcher], "tuple[np.ndarray, TokenMask | None]"]
HostLogits = Callable[[Any], np.ndarray]


@dataclass(frozen=True)
class Step:
    """What a sequence wants read next: `tokens`, of which the last `drafted` are guesses (the
    logits after each are wanted, and after the last certain one); `rejected`: how many of the
    tokens read in the step just taken were guesses the model turned down (the cache must
    drop them)."""

    tokens: list[int]
    drafted: int = 0
    rejected: int = 0


class Sequence:
    """A request admitted for decoding: its prompt, budget and everything chosen so far.

    `jump_forward`: take grammar-forced tokens without a model pass. `drafter`: guess tokens
    for the model to verify. `step_tokens`: the most tokens one step may carry (None: no limit).
    `scores`: keep a `TokenScore` per token written.
    """

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
        *,
        jump_forward: bool = False,
        drafter: Drafter | None = None,
        draft_limit: int = 8,
        step_tokens: int | None = None,
        scores: bool = False,
        healing: bytes = b"",
        asap: Walk | None = None,
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
        # A scored or grammar-aligned sequence reads a row at every step (a forced token has none).
        self.jump_forward = jump_forward and matcher is not None and not scores and asap is None
        self._asap = asap
        self.scores: list[TokenScore] | None = [] if scores else None
        self._scored: tuple[np.ndarray, float, float] | None = None  # the last row's (row, log-sum, masked mass)
        self._healer = Healer(vocabulary, healing) if healing else None
        self.healed = healing
        self._written: bytes | None = None  # a healing token's bytes past the healed ones, for `_emit`
        self.drafter = drafter
        self.draft_limit = draft_limit
        self.step_tokens = step_tokens
        self.future: concurrent.futures.Future[Generation] = concurrent.futures.Future()
        self.steered_from: int | None = None  # where tokens began to be chosen for the budget
        self.token_ids: list[int] = []
        self.generated = 0  # tokens chosen, an end-of-sequence token included
        self.forward_passes = 0  # steps whose logits chose tokens
        self.drafted = 0  # guesses read by the model
        self.accepted = 0  # guesses the model's choice confirmed
        self._drafts: list[int] = []  # the guesses in the step being read
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pieces: list[str] = []
        # A reasoning span's token budget, kept where a grammar opens with one that has a budget.
        self._span = (SpanBudget(reasoning) if matcher is not None and reasoning is not None
                      and reasoning.max_tokens is not None else None)

    @property
    def done(self) -> bool:
        return self.future.done()

    def advance(self, rows: list[Any]) -> Step | None:
        """Choose from this step's logits rows (one after the last certain token read, then one
        after each guess); what to read next, or None once finished."""
        if self.cancel.is_set():
            self.finish("cancelled")
            return None
        self.forward_passes += 1
        drafts, self._drafts = self._drafts, []
        if len(rows) != len(drafts) + 1:
            raise RuntimeFailure(f"{self.name}: a step brought {len(rows)} logits rows for {len(drafts)} guesses")
        self.drafted += len(drafts)
        tokens: list[int] = []
        rejected = 0
        for i, row in enumerate(rows):
            draft = drafts[i] if i < len(drafts) else None
            token = self._next(row, draft)
            if token is None:
                return None
            if token != draft:  # the last row (no guess after it) always ends here
                tokens, rejected = [token], len(drafts) - i
                break
            self.accepted += 1
        if not self._forced(tokens):
            return None
        self._drafts = self._guess(tokens)
        return Step(tokens + self._drafts, len(self._drafts), rejected)

    def _next(self, logits: Any, draft: int | None) -> int | None:
        """One token chosen from `logits` (checked against `draft` where there is one) and
        taken; None once the sequence has finished."""
        token = self._choose(logits, self.budget - self.generated, draft)
        return token if self._took(token) else None

    def _took(self, token: int) -> bool:
        """Count and write out a chosen token; False once that finished the sequence."""
        self.generated += 1
        if token in self.vocabulary.eos_ids:
            self.finish("grammar_complete" if self.matcher is not None else "stop")
            return False
        self._emit(token)
        if self.matcher is not None and self.matcher.is_terminated():
            self.finish("grammar_complete")
            return False
        if self.generated == self.budget:
            if self._asap is not None:
                self._asap.left = True  # cut by the budget: whether the model would end here is unknown
            complete = self.matcher is not None and self.matcher.is_complete()
            self.finish("grammar_complete" if complete else "length")
            return False
        return True

    def _room(self, tokens: list[int]) -> int:
        """How many more tokens this step may carry after `tokens`."""
        room = self.budget - self.generated
        if self.step_tokens is not None:
            room = min(room, self.step_tokens - len(tokens))
        return room

    def _forced(self, tokens: list[int]) -> bool:
        """Jump-forward: append to `tokens` each next token the grammar forces (the only one
        its mask allows), taken as a step would take it; False once that finished the sequence."""
        matcher = self.matcher
        if not self.jump_forward or matcher is None or self._healer is not None:
            return True
        while self._room(tokens) > 0:
            if self._span is not None and self._span.spent:
                return True  # the span's close is written by `_choose`: leave it to a model step
            mask = matcher.next_token_mask()
            if mask.count != 1:
                return True
            token = int(mask.allowed_ids()[0])
            self._settle(token, None, self.budget - self.generated)
            if not self._took(token):
                return False
            tokens.append(token)
        return True

    def _guess(self, tokens: list[int]) -> list[int]:
        """The drafter's guesses to follow `tokens` (already taken), each allowed by a fork of
        the matcher, forced tokens between them filled in; never an end-of-sequence token."""
        if self.drafter is None or self._healer is not None or self._asap is not None:
            return []
        limit = min(self.draft_limit, self._room(tokens))
        if limit <= 0:
            return []
        fork = self.matcher.fork() if self.matcher is not None else None
        context = self.prompt + self.token_ids
        guesses: list[int] = []
        proposal: list[int] = []
        while len(guesses) < limit:
            forced = None
            if fork is not None and self.jump_forward:
                mask = fork.next_token_mask()
                if mask.count == 1:
                    forced = int(mask.allowed_ids()[0])
            if forced is not None:
                token = forced
                proposal = proposal[1:] if proposal and proposal[0] == forced else []
            else:
                if not proposal:
                    proposal = self._propose(context + guesses, limit - len(guesses), fork)
                    if not proposal:
                        break
                token, proposal = proposal[0], proposal[1:]
            if token in self.vocabulary.eos_ids or (fork is not None and not fork.accept_token(token)):
                break
            guesses.append(token)
        return guesses

    def _propose(self, context: list[int], limit: int, fork: Matcher | None) -> list[int]:
        """The drafter's proposal; a guided drafter chooses under a fork of the matcher of its
        own (the one given here checks what it proposes)."""
        if getattr(self.drafter, "guided", False):
            return self.drafter.propose(context, limit, fork.fork() if fork is not None else None)
        return self.drafter.propose(context, limit)

    def _choose(self, logits: Any, remaining: int, draft: int | None = None) -> int:
        """The next token; under a grammar, one after which the document can still be closed
        within the `remaining - 1` tokens left. With a `draft`, the sampler's check of that
        guess (greedy: the same choice; sampling: the acceptance rule) stands for its choice.

        The model's choice stands wherever a completion that fits is certain; elsewhere the
        choice is the model's favourite among the tokens that keep one certain. A generation
        whose first state can be completed within its budget so always ends whole.
        """
        matcher = self.matcher
        if self._healer is not None:
            return self._heal(logits, draft)
        if self.scores is not None:
            self._measure(logits)
        if matcher is None:
            row = self._host(logits)
            return self.sampler.select(row) if draft is None else self.sampler.verify(row, None, draft)
        if self._span is not None and self._span.spent:
            token = matcher.token_spelling(self._span.close_left())
            if token is not None:  # else no token spells it here: the grammar decides, as ever
                if not matcher.accept_token(token):
                    raise RuntimeFailure(f"the matcher refused token {token}, which spells the reasoning span's close")
                if self._asap is not None:
                    self._asap.left = True  # not the model's choice: no estimate below it
                return token
        raw = np.array(self._host(logits), dtype=np.float64) if self._asap is not None else None
        row, mask = self._masked(logits, matcher)
        if self._asap is not None:
            self._asap.reweight(raw, (mask if mask is not None else matcher.next_token_mask()).allowed_ids(), row)
        token = self.sampler.select(row, mask) if draft is None else self.sampler.verify(row, mask, draft)
        token = self._settle(token, row, remaining)
        if self._asap is not None:
            self._asap.took(token)
        return token

    def _heal(self, logits: Any, draft: int | None) -> int:
        """A token while the healed bytes are still to be written: one of the healer's
        candidates, chosen as any step chooses; what it writes past them enters the grammar."""
        healer = self._healer
        assert healer is not None
        ids = healer.candidates(self.matcher, self.budget - self.generated)
        if self.scores is not None:
            self._measure(logits, ids)
        row = self._host(logits)
        held = np.full(row.shape, -np.inf, dtype=row.dtype)
        held[ids] = row[ids]
        if self._asap is not None:  # the healing steps are steps of the answer's tree too
            self._asap.reweight(np.array(row, dtype=np.float64), ids, held)
        token = self.sampler.select(held) if draft is None else self.sampler.verify(held, None, draft)
        if self._asap is not None:
            self._asap.took(token)
        self._written = healer.take(token)
        if healer.done:
            self._healer = None
        if self._written and self.matcher is not None and not self.matcher.accept_bytes(self._written):
            raise RuntimeFailure(f"the matcher refused {self._written!r}, which the healer checked against it")
        return token

    def _measure(self, logits: Any, allowed: np.ndarray | None = None) -> None:
        """Keep what scoring the token chosen from `logits` needs: the whole row (a copy, as
        selection may overwrite it), its log-sum-exp, and the share of its mass the grammar's
        mask (or the `allowed` ids) removes."""
        row = np.array(self._host(logits), dtype=np.float64)
        top = float(row.max())
        total = float(np.exp(row - top).sum())
        masked = 0.0
        if allowed is not None:
            masked = 1.0 - float(np.exp(row[allowed] - top).sum()) / total
        elif self.matcher is not None:
            kept = row.copy()
            self.matcher.next_token_mask().apply(kept)
            masked = 1.0 - float(np.exp(kept - top).sum()) / total
        self._scored = (row, top + float(np.log(total)), min(1.0, max(0.0, masked)))

    def _settle(self, token: int, row: np.ndarray | None, remaining: int) -> int:
        """Take `token` into the matcher, or, where the document could then not be closed within
        the budget, the best token (by `row`; the only one where `row` is None) that keeps it so."""
        matcher = self.matcher
        if matcher is None:
            raise RuntimeFailure(f"{self.name}: a token was settled against a grammar this sequence does not have")
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
        token = int(ids[0]) if row is None else int(ids[int(np.argmax(row[ids]))])
        if not matcher.accept_token(token):
            raise RuntimeFailure(f"the matcher refused its own completion token {token}")
        return token

    def _emit(self, token: int) -> None:
        self.token_ids.append(token)
        data = self.vocabulary.token_bytes(token) if self._written is None else self._written
        self._written = None
        if self.scores is not None:
            if self._scored is None:
                raise RuntimeFailure(f"{self.name}: token {token} was written without a logits row to score it by")
            row, log_total, masked = self._scored
            self.scores.append(TokenScore(data, float(row[token]) - log_total, masked))
            self._scored = None
        piece = self._text.decode(data)
        if self._span is not None:
            self._span.read(piece)
        if piece:
            self._pieces.append(piece)
            if self.sink is not None:
                self.sink(piece)

    def finish(self, reason: FinishReason) -> None:
        """End the generation: flush the decoder and hand the caller its `Generation`."""
        if self._asap is not None and reason == "grammar_complete":
            self._asap.finished()
        tail = self._text.decode(b"", final=True)
        if tail:
            self._pieces.append(tail)
            if self.sink is not None:
                self.sink(tail)
        usage = Usage(len(self.prompt), self.generated, forward_passes=self.forward_passes,
                      drafted_tokens=self.drafted, accepted_tokens=self.accepted)
        generation = Generation("".join(self._pieces), reason, usage, self.token_ids, self.steered_from, self.scores,
                                self.healed)
        if not self.future.done():
            self.future.set_result(generation)

    def fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)

"""The decode loop shared by runtimes that own their tokens (llama.cpp, MLC-LLM, test models).

A subclass supplies the model: `_prompt_ids` (render and tokenize) and either the batched
hooks `begin_slot`/`begin_slot_from`/`read_batch` (many sequences per forward pass, `max_batch` > 1) or the
single-sequence `prefill` and `forward`. This class supplies everything around it: the
grammar compiled for the model's vocabulary (cached), a `grammar.Matcher` per generation
consulted at every step, sampling, steering so the document closes within the token budget, the
scheduler thread that keeps the event loop free and batches concurrent calls, cancellation and
streaming.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

import grammar as grammar_
from grammar import CompiledGrammar, Grammar, Matcher, TokenMask, Vocabulary

from ._drafting import Drafter, drafter_for
from ._errors import InvalidRequest, RuntimeFailure
from .checks import check_messages, check_text
from ._asap import Trees, Walk
from ._healing import back_up, heals
from ._protocol import ContinuationScore, Generation, Messages, Request, Runtime, TextStream
from ._sampling import ForcedTokens, Sampler
from ._batch import Feed
from ._scheduler import Scheduler
from ._sequence import Sequence

logger = logging.getLogger("runtimes")


class LocalRuntime(Runtime):
    """A runtime whose model runs in this process and whose vocabulary is known."""

    vocabulary: Vocabulary
    context_length: int | None = None  # positions the model can hold (prompt + answer); None: no limit
    closed: bool = False
    # Batching (see `_scheduler`): sequences decoded together; the most tokens one `read_batch` takes;
    # the most prompt tokens read in a step while other sequences decode; the cells of the cache
    # all sequences share (None: each sequence has room for `context_length` of its own).
    max_batch: int = 1
    batch_tokens: int | None = None
    prefill_chunk: int | None = None
    cache_cells: int | None = None
    # Jump-forward (see `_sequence`): tokens the grammar forces are taken without a model step
    # and read with the next one. Exact (the same output as token by token); on by default.
    jump_forward: bool = True
    # Whether `begin_slot` can drop a sequence's last tokens (a drafter's rejected guesses).
    keeps_partial_cache: bool = False
    # The most guesses a step carries, where a drafter runs.
    draft_tokens: int = 8

    def __init__(self, seed: int | None = None) -> None:
        # Calls without a seed draw one from here: a run of calls is reproducible, calls differ.
        self._seeds = np.random.default_rng(seed)
        self.model_lock = threading.Lock()  # the model's state: the scheduler's, or a benchmark's
        self._scheduler_: Scheduler | None = None
        self._released = False
        self._draft: object = None
        self._drafter: Drafter | None = None
        self._asap = Trees()  # grammar-aligned sampling's estimates, per request

    @property
    def draft(self) -> object:
        """The drafter of speculative decoding: None (none), "prompt" (prompt lookup: n-gram
        matches against the prompt and the answer so far), a draft model's path where the
        runtime can load one (`LlamaCpp`), or an object with `propose(context, limit)`. Its
        guesses are checked by the model, several per forward pass; greedy output is the same
        as without, sampled output has the same distribution. Set it between calls; a model
        whose cache cannot drop its last tokens cannot draft."""
        return self._draft

    @draft.setter
    def draft(self, value: object) -> None:
        drafter = self._drafter_for(value)
        if drafter is not None and not self.keeps_partial_cache:
            raise RuntimeFailure(
                f"{self.name}: draft={value!r} needs a model whose cache can drop a sequence's last "
                "tokens (rejected guesses); this one cannot"
            )
        self._draft, self._drafter = value, drafter

    @property
    def scores_continuations(self) -> bool:  # type: ignore[override]
        """`Runtime.scores_continuations`: where the model can tokenize a continuation."""
        return type(self)._text_ids is not LocalRuntime._text_ids

    def _drafter_for(self, value: object) -> Drafter | None:
        """The drafter a `draft` setting names (a runtime that can load a draft model from a
        path widens this)."""
        return drafter_for(value)

    @property
    def _scheduler(self) -> Scheduler:
        if self._scheduler_ is None:  # created on first use: `max_batch` is known by then
            if self.max_batch > 1 and type(self).read_batch is LocalRuntime.read_batch:
                raise RuntimeFailure(
                    f"{self.name}: max_batch={self.max_batch} needs a model that reads several sequences "
                    "per step (read_batch, begin_slot); this one implements only prefill and forward"
                )
            self._scheduler_ = Scheduler(self)
        return self._scheduler_

    # --- what a model supplies (called in the scheduler thread, model lock held) --------------

    @abstractmethod
    def _prompt_ids(self, messages: Messages, tools: list[dict[str, Any]] | None) -> list[int]:
        """The token ids of the rendered prompt (chat template, or raw text for a string).

        Called outside the model lock, possibly while the model decodes other sequences."""

    def begin_slot(self, slot: int, keep: int) -> int:
        """A new sequence starts in `slot`: drop what its cache holds past the first `keep`
        tokens; how many it kept (0 for a model that cannot keep part of a sequence)."""
        return 0

    def begin_slot_from(self, source: int, slot: int, length: int) -> bool:
        """A new sequence starts in `slot` from the first `length` cached tokens of `source`'s;
        False where the model cannot share cache cells between sequences."""
        return False

    def read_batch(self, feeds: list[Feed]) -> list[list[Any]]:
        """Append each feed's tokens to its slot's sequence, all in one forward pass; per feed,
        its `logits` rows (the logits after each of its last `feed.logits` tokens; an empty
        list where it wants none), valid until the next read.

        This default serves single-sequence models (`max_batch` 1) through `prefill` and
        `forward`: a sequence's first read is its whole prompt, and later tokens are read one
        `forward` each (correct, but no faster for tokens taken several at a time)."""
        (feed,) = feeds
        if feed.start == 0:
            return [[self.prefill(feed.tokens)] if feed.logits else []]
        rows = [self.forward(token) for token in feed.tokens]
        return [rows[len(rows) - feed.logits :] if feed.logits else []]

    def prefill(self, prompt_ids: list[int]) -> Any:
        """Read the prompt anew; the logits (width `vocabulary.size`) for the first answer token."""
        raise NotImplementedError(f"{type(self).__name__} implements neither read_batch nor prefill")

    def forward(self, token_id: int) -> Any:
        """Append one token; the logits for the token after it."""
        raise NotImplementedError(f"{type(self).__name__} implements neither read_batch nor forward")

    def _host_logits(self, logits: Any) -> np.ndarray:
        """The logits as a numpy row the loop may overwrite (models that return numpy: as is)."""
        return logits

    def _masked_logits(self, logits: Any, matcher: Matcher) -> tuple[np.ndarray, TokenMask | None]:
        """The row to select from and the mask still to apply to it (None: already applied).

        By default the sparse `TokenMask` is handed to the sampler, which then looks at the
        allowed logits only; a model may instead apply the packed bitmask where its logits are.
        """
        return self._host_logits(logits), matcher.next_token_mask()

    # --- public calls -------------------------------------------------------------------------

    def compiled(self, g: Grammar) -> CompiledGrammar:
        """`g` compiled for this runtime's vocabulary (`grammar.compile`'s cache: once per
        grammar and vocabulary, also when concurrent calls bring the same new schema)."""
        return grammar_.compile(g, self.vocabulary)

    async def _generate(self, request: Request) -> Generation:
        return await self._run(request, None)

    async def score(self, prompt: Messages, continuation: str) -> ContinuationScore:
        """`Runtime.score`: `continuation`'s tokens (as plain text: no control token) read
        after the prompt's, each scored against the row before it, batched with other calls."""
        check_messages(prompt, "prompt")
        if not isinstance(continuation, str) or not continuation:
            raise InvalidRequest("continuation", f"must be a non-empty string, not {continuation!r:.40}")
        check_text("continuation", continuation)
        if self.closed:
            raise RuntimeFailure(f"{self.name}: this runtime is closed")
        cancel = threading.Event()
        sequence = await asyncio.to_thread(self._reading, prompt, continuation, cancel)
        generation = await self._submit(sequence, cancel)
        if generation.token_scores is None or len(generation.token_scores) != sequence.budget:
            raise RuntimeFailure(f"{self.name}: scoring read {generation.usage.completion_tokens} of the "
                                 f"{sequence.budget} tokens of the continuation")
        return ContinuationScore(continuation, generation.token_scores, generation.usage)

    def _reading(self, prompt: Messages, continuation: str, cancel: threading.Event) -> Sequence:
        """A sequence that reads `continuation` after `prompt` and scores each token (off the event loop)."""
        prompt_ids = self._prompt_ids(prompt, None)
        if not prompt_ids:
            raise InvalidRequest("prompt", f"{self.name}: the prompt is empty (no tokens to read); give it some text")
        ids = self._text_ids(continuation)
        if any(token in self.vocabulary.eos_ids for token in ids):
            raise InvalidRequest("continuation", f"{self.name}: it reads as an end-of-sequence token")
        if self._budget(len(prompt_ids), len(ids)) < len(ids):
            raise RuntimeFailure(f"{self.name}: the prompt ({len(prompt_ids)} tokens) and the continuation "
                                 f"({len(ids)} tokens) do not fit the context window ({self.context_length})")
        return Sequence(self.name, self.vocabulary, prompt_ids, len(ids), None, ForcedTokens(ids), None, cancel,
                        self._host_logits, self._masked_logits, scores=True)

    def _text_ids(self, text: str) -> list[int]:
        """`text`'s token ids as plain text (no control token), as they would follow a prompt."""
        raise RuntimeFailure(f"{self.name}: this runtime cannot tokenize a continuation to score it")

    def _stream(self, request: Request) -> TextStream:

        async def produce(put: Callable[[str], None]) -> Generation:
            loop = asyncio.get_running_loop()
            return await self._run(request, lambda piece: loop.call_soon_threadsafe(put, piece))

        return TextStream(produce)

    async def aclose(self) -> None:
        """Free the model once the generations already asked for are over; later calls fail."""
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self.closed = True  # new calls are refused from here on
        if self._scheduler_ is not None:
            self._scheduler_.wait_idle()
        with self.model_lock:
            if not self._released:
                self._released = True
                self._release()

    def _release(self) -> None:
        """Free what the model holds (called once, model lock held)."""

    def forget_caches(self) -> None:
        """Forget what every slot's cache holds, once the calls already made are over: for a
        caller that drove the model itself (`read_batch` under `model_lock`, a benchmark), after
        which what the slots hold is unknown, or one that wants the next call to read its whole
        prompt. Not while calls are being made."""
        self._scheduler.wait_idle()
        self._scheduler.forget_caches()

    def generate_sync(self, messages: Messages, **options: Any) -> Generation:
        """`generate` for code without an event loop (scripts, benchmarks)."""
        return asyncio.run(self.generate(messages, **options))

    # --- the scheduler -------------------------------------------------------------------------

    async def _run(self, request: Request, sink: Callable[[str], None] | None) -> Generation:
        if self.closed:
            raise RuntimeFailure(f"{self.name}: this runtime is closed")
        cancel = threading.Event()
        seed = self._call_seed(request.seed)  # drawn in call order, on the caller's thread
        sequence = await asyncio.to_thread(self._sequence, request, seed, sink, cancel)
        return await self._submit(sequence, cancel)

    async def _submit(self, sequence: Sequence, cancel: threading.Event) -> Generation:
        """Decode `sequence` among the others; cancelling the caller retires it before its next step."""
        self._scheduler.submit(sequence)
        done = asyncio.wrap_future(sequence.future)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            cancel.set()  # the scheduler sees it before the sequence's next step and retires it
            while not done.done():
                try:
                    await asyncio.wait({done})
                except asyncio.CancelledError:
                    continue
            if not done.cancelled():
                done.exception()
            raise

    def _sequence(self, request: Request, seed: int, sink: Callable[[str], None] | None,
                  cancel: threading.Event) -> Sequence:
        """The request made ready to decode (off the event loop): grammar compiled, prompt tokenized."""
        compiled = self.compiled(request.grammar) if request.grammar is not None else None
        prompt = self._prompt_ids(request.messages, request.tools)
        if not prompt:  # the model needs a token read before it can give the first answer token's logits
            raise InvalidRequest("messages", f"{self.name}: the prompt is empty (no tokens to read); give it some text")
        healing = b""
        if heals(request.messages, request.heal):
            prompt, healing = back_up(prompt, self.vocabulary)
        return Sequence(
            self.name,
            self.vocabulary,
            prompt,
            self._budget(len(prompt), request.max_tokens + (1 if healing else 0)),  # the healed token is the prompt's
            Matcher(compiled, stop_when_complete=True) if compiled is not None else None,
            Sampler(request.temperature, request.top_p, seed),
            sink,
            cancel,
            self._host_logits,
            self._masked_logits,
            request.grammar.reasoning if request.grammar is not None else None,
            jump_forward=self.jump_forward,
            drafter=self._drafter,
            draft_limit=self.draft_tokens,
            step_tokens=self._step_tokens(),
            scores=request.scores,
            healing=healing,
            asap=Walk(self._asap.get((compiled, tuple(prompt), request.temperature)), request.temperature)
            if request.sampling == "asap" else None,
        )

    def _step_tokens(self) -> int | None:
        """The most tokens one sequence's step may carry: a share of a pass that leaves half
        of it to the prompts of newcomers."""
        if self.batch_tokens is None:
            return None
        return max(1, self.batch_tokens // (2 * self.max_batch))

    def _call_seed(self, seed: int | None) -> int:
        return int(self._seeds.integers(2**63)) if seed is None else seed

    def _budget(self, prompt_length: int, max_tokens: int) -> int:
        if self.context_length is None:
            return max_tokens
        room = self.context_length - prompt_length
        if room < 1:
            raise RuntimeFailure(
                f"{self.name}: the prompt ({prompt_length} tokens) fills the context window "
                f"({self.context_length} tokens); shorten it or use a larger context window"
            )
        return min(max_tokens, room)

"""The decode loop shared by runtimes that own their tokens (llama.cpp, MLC-LLM, test models).

A subclass supplies the model: `_prompt_ids` (render and tokenize), `_prefill` and `_forward`
(logits for the next token). This class supplies everything around it: the grammar compiled
for the model's vocabulary (cached), a `grammar.Matcher` consulted at every step, sampling,
steering so the document closes within the token budget, the worker thread that
keeps the event loop free, one generation at a time per model, cancellation and streaming.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import threading
import weakref
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

import grammar as grammar_
from grammar import CompiledGrammar, Grammar, Matcher, TokenMask, Vocabulary

from ._errors import RuntimeFailure
from ._protocol import FinishReason, Generation, Messages, Request, Runtime, TextStream, Usage
from ._sampling import Sampler

logger = logging.getLogger("runtimes")


class LocalRuntime(Runtime):
    """A runtime whose model runs in this process and whose vocabulary is known."""

    vocabulary: Vocabulary
    context_length: int | None = None  # positions the model can hold (prompt + answer); None: no limit
    closed: bool = False

    def __init__(self, seed: int | None = None) -> None:
        # Calls without a seed draw one from here: a run of calls is reproducible, calls differ.
        self._seeds = np.random.default_rng(seed)
        self._compiled: weakref.WeakKeyDictionary[Grammar, CompiledGrammar] = weakref.WeakKeyDictionary()
        self._model_lock = threading.Lock()  # the model's state belongs to one generation at a time
        self._queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    # --- what a model supplies (called in the worker thread, model lock held) ----------------

    @abstractmethod
    def _prompt_ids(self, messages: Messages, tools: list[dict[str, Any]] | None) -> list[int]:
        """The token ids of the rendered prompt (chat template, or raw text for a string)."""

    @abstractmethod
    def _prefill(self, prompt_ids: list[int]) -> Any:
        """Read the prompt; the logits (width `vocabulary.size`) for the first answer token."""

    @abstractmethod
    def _forward(self, token_id: int) -> Any:
        """Append one token; the logits for the token after it."""

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
        """`g` compiled for this runtime's vocabulary, once per grammar."""
        found = self._compiled.get(g)
        if found is None:
            found = self._compiled[g] = grammar_.compile(g, self.vocabulary)
        return found

    async def _generate(self, request: Request) -> Generation:
        return await self._run(request, None)

    def _stream(self, request: Request) -> TextStream:

        async def produce(put: Callable[[str], None]) -> Generation:
            loop = asyncio.get_running_loop()
            return await self._run(request, lambda piece: loop.call_soon_threadsafe(put, piece))

        return TextStream(produce)

    async def aclose(self) -> None:
        """Free the model once the generation in progress (if any) is over; later calls fail."""
        async with self._queue():
            await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._model_lock:
            if not self.closed:
                self.closed = True
                self._release()

    def _release(self) -> None:
        """Free what the model holds (called once, model lock held)."""

    def generate_sync(self, messages: Messages, **options: Any) -> Generation:
        """`generate` for code without an event loop (scripts, benchmarks)."""
        return asyncio.run(self.generate(messages, **options))

    # --- the worker ---------------------------------------------------------------------------

    def _queue(self) -> asyncio.Lock:
        """Callers on one event loop queue here, so waiting never ties up a worker thread."""
        loop = asyncio.get_running_loop()
        lock = self._queues.get(loop)
        if lock is None:
            lock = self._queues[loop] = asyncio.Lock()
        return lock

    async def _run(self, request: Request, sink: Callable[[str], None] | None) -> Generation:
        cancel = threading.Event()
        async with self._queue():
            worker = asyncio.ensure_future(asyncio.to_thread(self._decode, request, cancel, sink))
            try:
                return await asyncio.shield(worker)
            except asyncio.CancelledError:
                cancel.set()  # the worker sees it before its next step and returns
                while not worker.done():
                    try:
                        await asyncio.wait({worker})
                    except asyncio.CancelledError:
                        continue
                if not worker.cancelled():
                    worker.exception()
                raise

    def _decode(self, request: Request, cancel: threading.Event, sink: Callable[[str], None] | None) -> Generation:
        with self._model_lock:
            if self.closed:
                raise RuntimeFailure(f"{self.name}: this runtime is closed")
            if cancel.is_set():
                return Generation("", "cancelled", Usage(), [])
            compiled = self.compiled(request.grammar) if request.grammar is not None else None
            prompt = self._prompt_ids(request.messages, request.tools)
            budget = self._budget(len(prompt), request.max_tokens)
            loop = _DecodeLoop(
                self,
                Matcher(compiled, stop_when_complete=True) if compiled is not None else None,
                Sampler(request.temperature, request.top_p, self._call_seed(request.seed)),
                sink,
            )
            finish = loop.run(self._prefill(prompt), budget, cancel)
            usage = Usage(len(prompt), loop.generated)
            return Generation(loop.text(), finish, usage, loop.token_ids, loop.steered_from)

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


class _DecodeLoop:
    """One generation's token-by-token state: chosen ids, matcher, text decoder."""

    def __init__(self, model: LocalRuntime, matcher: Matcher | None, sampler: Sampler,
                 sink: Callable[[str], None] | None):
        self.model = model
        self.vocabulary = model.vocabulary
        self.matcher = matcher
        self.sampler = sampler
        self.sink = sink
        self.steered_from: int | None = None  # where tokens began to be chosen for the budget
        self.token_ids: list[int] = []
        self.generated = 0  # tokens chosen, an end-of-sequence token included
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pieces: list[str] = []

    def run(self, logits: Any, budget: int, cancel: threading.Event) -> FinishReason:
        for step in range(budget):
            if cancel.is_set():
                return self._finish("cancelled")
            token = self._choose(logits, budget - step)
            self.generated += 1
            if token in self.vocabulary.eos_ids:
                return self._finish("grammar_complete" if self.matcher is not None else "stop")
            self._emit(token)
            if self.matcher is not None and self.matcher.is_terminated():
                return self._finish("grammar_complete")
            if step + 1 < budget:
                logits = self.model._forward(token)
        if self.matcher is not None and self.matcher.is_complete():
            return self._finish("grammar_complete")
        return self._finish("length")

    def _choose(self, logits: Any, remaining: int) -> int:
        """The next token; under a grammar, one after which the document can still be closed
        within the `remaining - 1` tokens left.

        The model's choice stands wherever a completion that fits is certain; elsewhere the
        choice is the model's favourite among the tokens that keep one certain. A generation
        whose first state can be completed within its budget so always ends whole.
        """
        matcher = self.matcher
        if matcher is None:
            return self.sampler.select(self.model._host_logits(logits))
        row, mask = self.model._masked_logits(logits, matcher)
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
                self.model.name, remaining, self.steered_from,
            )
        ids = matcher.completion_token_ids(within=remaining)
        token = int(ids[int(np.argmax(row[ids]))])
        if not matcher.accept_token(token):
            raise RuntimeFailure(f"the matcher refused its own completion token {token}")
        return token

    def _emit(self, token: int) -> None:
        self.token_ids.append(token)
        piece = self._text.decode(self.vocabulary.token_bytes(token))
        if piece:
            self._pieces.append(piece)
            if self.sink is not None:
                self.sink(piece)

    def _finish(self, reason: FinishReason) -> FinishReason:
        tail = self._text.decode(b"", final=True)
        if tail:
            self._pieces.append(tail)
            if self.sink is not None:
                self.sink(tail)
        return reason

    def text(self) -> str:
        return "".join(self._pieces)

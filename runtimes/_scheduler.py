"""Continuous batching: the one thread that runs a local model, every admitted sequence in
each forward pass.

Requests wait in a queue. Before each step the scheduler admits those that fit: a free slot
(one of the model's `max_batch` sequences) and, where the model's cache is a shared pool of
cells, room for the request's prompt and whole token budget, so a running sequence never meets
a full cache. A newcomer's slot keeps the longest prefix of its prompt that some cache already
holds (its own earlier conversation, or another slot's system prompt, shared where the model
can), and the rest of its prompt is read in chunks beside the running sequences' next tokens,
so they keep decoding while it prefills. A sequence that finishes or is cancelled leaves at the
end of its step; the others never wait for it.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field

from ._batch import BatchModel, Feed, common_prefix
from ._errors import RuntimeFailure
from ._sequence import Sequence, Step

# A newcomer whose prompt shares at least this many more tokens with one still being read waits
# for that read to pass them, and then starts from its cells instead of reading them again.
SHARE_WAIT_TOKENS = 32
# The fewest cached tokens a newcomer's prompt must share with a slot for that slot's cache to
# be worth keeping part of (fewer: the start of a chat template, not a conversation's prefix).
MIN_REUSE = 32


@dataclass(eq=False)
class _Slot:
    index: int
    cached: list[int] = field(default_factory=list)  # the tokens the model's cache holds for it
    sequence: Sequence | None = None
    pending: list[int] = field(default_factory=list)  # prompt tokens still to read
    next_tokens: list[int] = field(default_factory=list)  # chosen, to be read in the next step
    drafted: int = 0  # how many of them are guesses, the logits after each wanted
    since: int = 0  # the step its sequence was admitted at, for reading prompts in order
    used: int = 0  # the step it last served, for evicting the idle cache used longest ago

    @property
    def held(self) -> int:
        """The cache cells this slot may come to hold: its sequence's whole reservation when busy."""
        if self.sequence is None:
            return len(self.cached)
        return len(self.sequence.prompt) + self.sequence.budget


class Scheduler:
    """Admits, steps and retires the sequences of one local model."""

    def __init__(self, model: BatchModel):
        self._model = model
        self._slots = [_Slot(i) for i in range(model.max_batch)]
        self._waiting: deque[Sequence] = deque()
        self._wake = threading.Condition()
        self._worker: threading.Thread | None = None
        self._steps = 0

    def submit(self, sequence: Sequence) -> None:
        with self._wake:
            if self._model.closed:
                raise RuntimeFailure(f"{self._model.name}: this runtime is closed")
            self._waiting.append(sequence)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name=f"{self._model.name} decoder", daemon=True)
                self._worker.start()

    def wait_idle(self) -> None:
        """Block until every submitted sequence has finished."""
        with self._wake:
            self._wake.wait_for(lambda: self._worker is None)

    def forget_caches(self) -> None:
        """Drop every idle slot's cache: for a caller that drove the model directly (a benchmark
        holding the model lock), after which what the slots hold is unknown."""
        for slot in self._slots:
            if slot.sequence is None and slot.cached:
                self._model.begin_slot(slot.index, 0)
                slot.cached = []

    # --- the worker thread --------------------------------------------------------------------

    def _work(self) -> None:
        try:
            while self._work_step():
                pass
        except BaseException as exc:  # never leave a caller waiting on a dead thread
            error = RuntimeFailure(f"{self._model.name}: the decoder stopped: {exc!r}")
            with self._wake:
                stranded = [s.sequence for s in self._slots if s.sequence is not None] + list(self._waiting)
                self._waiting.clear()
                for slot in self._slots:
                    self._retire(slot, forget=True)
                self._worker = None
                self._wake.notify_all()
            for sequence in stranded:
                sequence.fail(error)
            raise

    def _work_step(self) -> bool:
        """Admit, then step the running sequences; False once there is nothing left to do."""
        tried = self._admit()
        active = [slot for slot in self._slots if slot.sequence is not None]
        if active:
            self._step(active)
            return True
        with self._wake:
            if not self._waiting:
                self._worker = None
                self._wake.notify_all()
                return False
            if not any(sequence is self._waiting[0] for sequence in tried):
                return True  # submitted after this admission looked: it gets its own try first
            head = self._waiting.popleft()  # nothing runs and it still cannot start: it never will
        head.fail(RuntimeFailure(f"{self._model.name}: the request cannot be started (no slot or cache room)"))
        return True

    def _admit(self) -> list[Sequence]:
        """Start the waiting sequences that fit, in order; returns the ones it saw waiting."""
        with self._wake:
            for sequence in [s for s in self._waiting if s.cancel.is_set()]:
                self._waiting.remove(sequence)
                sequence.finish("cancelled")
            candidates = list(self._waiting)
        for sequence in candidates:
            try:
                placed = self._place(sequence)
            except Exception as exc:
                sequence.fail(exc)
                placed = True
            if not placed:
                break
            with self._wake:
                self._waiting.remove(sequence)
        return candidates

    def _place(self, sequence: Sequence) -> bool:
        """Start `sequence` in a free slot if one is free and the cache has room; else False."""
        prompt = sequence.prompt
        if not prompt:  # a slot with nothing to read would be stepped forever without a read
            raise RuntimeFailure(f"{self._model.name}: a request with an empty prompt cannot be started")
        free = [slot for slot in self._slots if slot.sequence is None]
        if not free:
            return False
        reusable = {s.index: _common_prefix(s.cached, prompt) for s in self._slots}
        # The free slot whose cache saves the most reading; where none saves `MIN_REUSE` tokens,
        # the one holding least (then the one used longest ago): a prompt that shares only its
        # template's first tokens with a long cached one must not take that cache's slot and
        # throw away what the next turn of the same conversation would have read from it.
        slot = max(free, key=lambda s: _placement(reusable[s.index], s))
        source = max(self._slots, key=lambda s: reusable[s.index])
        own, shared = reusable[slot.index], reusable[source.index]
        if any(
            s.pending and _common_prefix(s.sequence.prompt, prompt) >= max(own, shared) + SHARE_WAIT_TOKENS
            for s in self._slots
            if s.sequence is not None
        ):
            return False  # its prefix is being read now: start from those cells once they exist
        if not self._make_room(slot, len(prompt) + sequence.budget, keep={source.index}):
            return False
        model = self._model
        with model.model_lock:
            if source is not slot and shared > own and model.begin_slot_from(source.index, slot.index, shared):
                kept = shared
                slot.cached = source.cached[:shared]
            else:
                kept = model.begin_slot(slot.index, own)
                del slot.cached[kept:]
        slot.sequence = sequence
        slot.pending = prompt[kept:]
        slot.next_tokens = []
        slot.drafted = 0
        slot.since = self._steps
        return True

    def _make_room(self, slot: _Slot, need: int, keep: set[int]) -> bool:
        """Whether `need` more cells fit the cache once `slot` holds its share, evicting idle
        caches (the one used longest ago first, never those in `keep`) until they do."""
        capacity = self._model.cache_cells
        if capacity is None:
            return True

        def used() -> int:
            return sum(s.held for s in self._slots if s is not slot) + need

        idle = sorted((s for s in self._slots if s.sequence is None and s is not slot and s.cached), key=lambda s: s.used)
        for victim in idle:
            if used() <= capacity:
                break
            if victim.index in keep:
                continue
            with self._model.model_lock:
                self._model.begin_slot(victim.index, 0)
            victim.cached = []
        if used() <= capacity:
            return True
        if any(s.sequence is not None for s in self._slots):
            return False  # wait for a running sequence to finish
        raise RuntimeFailure(  # unreachable while cache_cells >= context_length
            f"{self._model.name}: a request of {need} tokens does not fit the cache of {capacity} cells"
        )

    def _step(self, active: list[_Slot]) -> None:
        self._steps += 1
        for slot in active:
            sequence = slot.sequence
            if sequence is not None and sequence.cancel.is_set():
                sequence.finish("cancelled")
                self._retire(slot)
        feeds = self._feeds([slot for slot in active if slot.sequence is not None])
        if not feeds:
            return
        model = self._model
        try:
            with model.model_lock:
                rows = model.read_batch(feeds)
        except Exception as exc:
            error = exc if isinstance(exc, RuntimeFailure) else RuntimeFailure(f"{model.name}: the model step failed: {exc}")
            for feed in feeds:
                slot = self._slots[feed.slot]
                if slot.sequence is not None:
                    slot.sequence.fail(error)
                self._retire(slot, forget=True)
            return
        for feed, got in zip(feeds, rows, strict=True):
            slot = self._slots[feed.slot]
            slot.cached.extend(feed.tokens)
            if slot.next_tokens:
                slot.next_tokens = []
            else:
                del slot.pending[: len(feed.tokens)]
            if not feed.logits or slot.sequence is None:
                continue
            try:
                step = slot.sequence.advance(got)
                if step is not None:
                    self._take(slot, step)
            except Exception as exc:
                slot.sequence.fail(exc)
                self._retire(slot)
                continue
            if step is None:
                self._retire(slot)

    def _take(self, slot: _Slot, step: Step) -> None:
        """What a sequence chose becomes its slot's next read; guesses the model turned down
        leave the cache first."""
        if step.rejected:
            keep = len(slot.cached) - step.rejected
            with self._model.model_lock:
                kept = self._model.begin_slot(slot.index, keep)
            if kept != keep:
                del slot.cached[kept:]
                raise RuntimeFailure(
                    f"{self._model.name}: the cache kept {kept} of the {keep} tokens asked "
                    "when dropping rejected guesses; this model cannot check guesses"
                )
            del slot.cached[keep:]
        slot.next_tokens = step.tokens
        slot.drafted = step.drafted

    def _feeds(self, active: list[_Slot]) -> list[Feed]:
        """This step's reads: every decoding sequence's token, then prompt chunks in admission
        order within the tokens a read takes (fewer while others decode)."""
        model = self._model
        decoding = [s for s in active if s.next_tokens]
        feeds = [Feed(s.index, len(s.cached), s.next_tokens, s.drafted + 1) for s in decoding]
        taken = sum(len(s.next_tokens) for s in decoding)
        room = model.batch_tokens - taken if model.batch_tokens is not None else None
        if decoding and model.prefill_chunk is not None:
            room = model.prefill_chunk if room is None else min(room, model.prefill_chunk)
        for slot in sorted(active, key=lambda s: s.since):
            if not slot.pending or (room is not None and room <= 0):
                continue
            take = len(slot.pending) if room is None else min(room, len(slot.pending))
            feeds.append(Feed(slot.index, len(slot.cached), slot.pending[:take], int(take == len(slot.pending))))
            if room is not None:
                room -= take
        return feeds

    def _retire(self, slot: _Slot, forget: bool = False) -> None:
        slot.sequence = None
        slot.pending = []
        slot.next_tokens = []
        slot.drafted = 0
        slot.used = self._steps
        if forget:  # what the cache holds for it is unknown after a failed step
            slot.cached = []
            try:
                with self._model.model_lock:
                    self._model.begin_slot(slot.index, 0)
            except Exception:  # the next admission to this slot starts it anew regardless
                pass


def _placement(reusable: int, slot: _Slot) -> tuple[int, int, int]:
    """How good a free `slot` is for a newcomer sharing `reusable` cached tokens with it (the
    greatest is taken): the tokens it saves reading where they are worth keeping
    (`MIN_REUSE`), else how little it holds; then how long ago it was used."""
    if reusable >= MIN_REUSE:
        return reusable, 0, -slot.used
    return 0, -len(slot.cached), -slot.used


def _common_prefix(cached: list[int], prompt: list[int]) -> int:
    """How many leading tokens `cached` shares with `prompt`, short of the prompt's last token
    (always read, for the logits of the first answer token)."""
    return common_prefix(cached, prompt[:-1])

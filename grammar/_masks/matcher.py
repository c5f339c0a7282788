"""`Matcher`: one sequence's position in a compiled grammar, advanced token by token."""

from __future__ import annotations

import bisect

import numpy as np

from .._tokens.bitmask import bitmask_row
from .._errors import MatcherError
from .compiled import CompiledGrammar
from .completion import Known, completion_of
from .pool import StateMask

_TERMINATED = -3


class TokenMask:
    """The next-token set of one step, for sparse masking and selection.

    Masking costs O(min(allowed, disallowed)) and selection over the allowed ids O(allowed),
    instead of O(vocabulary) for a dense bitmask.
    """

    __slots__ = ("_mask", "_size", "_allowed")

    def __init__(self, mask: StateMask, size: int):
        self._mask = mask
        self._size = size
        self._allowed: np.ndarray | None = None

    @property
    def count(self) -> int:
        return self._mask.count

    def allowed_ids(self) -> np.ndarray:
        if self._allowed is None:
            self._allowed = self._mask.allowed_ids(self._size)
        return self._allowed

    def apply(self, logits: np.ndarray) -> None:
        """Set the logits of disallowed tokens to -inf, in place."""
        if self._mask.inverted:
            logits[self._mask.ids[self._mask.ids < logits.shape[-1]]] = -np.inf
        else:
            keep = logits[self._mask.ids]
            logits.fill(-np.inf)
            logits[self._mask.ids] = keep

    def allows(self, token: int) -> bool:
        """Whether `token` is in the set (a binary search of the shorter id list)."""
        if not 0 <= token < self._size:
            return False
        ids = self._mask.ids
        i = int(ids.searchsorted(np.int32(token)))  # a Python int would convert the whole list
        listed = i < ids.size and int(ids[i]) == token
        return listed != self._mask.inverted

    def argmax(self, logits: np.ndarray) -> int:
        """The allowed token with the highest logit (greedy selection).

        Few allowed ids: the best of those (a gather, cheaper than one pass over the row).
        Otherwise the row's own best token is tried first: where the model follows the grammar
        it is allowed, and one pass over the row (which a free step makes too) is all it costs.
        Ties go to the lowest id either way, as `np.argmax` over the masked row would."""
        few = self._mask.ids.size * 8 < logits.shape[-1]
        if few and not self._mask.inverted:
            ids = self._mask.ids
            return int(ids[int(np.argmax(logits[ids]))])
        best = int(np.argmax(logits))
        if self.allows(best):
            return best
        if self._mask.inverted:
            if few:
                saved = logits[self._mask.ids]
                logits[self._mask.ids] = -np.inf
                best = int(np.argmax(logits))
                logits[self._mask.ids] = saved
                return best
        ids = self.allowed_ids()
        return int(ids[int(np.argmax(logits[ids]))])


class Matcher:
    """Tracks one sequence through a compiled grammar.

    EOS is allowed exactly where the document is complete; special tokens never are. With
    `stop_when_complete`, the sequence also terminates once the document is complete and no
    byte could extend it.
    """

    def __init__(self, compiled: CompiledGrammar, *, stop_when_complete: bool = False):
        self.compiled = compiled
        self.stop_when_complete = stop_when_complete
        self._history: list[int] = [compiled.start]
        self._known = Known()  # what this matcher's completion searches proved
        self._eos = set(compiled.tables.eos_ids.tolist())
        self._masks = compiled._masks
        self._vocab_size = compiled.vocab_size

    # -- state -----------------------------------------------------------------------------

    @property
    def state(self) -> int:
        return self._history[-1]

    def is_terminated(self) -> bool:
        s = self._history[-1]
        if s == _TERMINATED:
            return True
        return (
            self.stop_when_complete
            and self.compiled.automaton.accepting[s]
            and not self.compiled.automaton.can_extend(s)
        )

    def is_complete(self) -> bool:
        s = self._history[-1]
        return s == _TERMINATED or self.compiled.automaton.accepting[s]

    # -- advancing -------------------------------------------------------------------------

    def accept_token(self, token_id: int) -> bool:
        """Advance by one token; False (and no change) if the grammar does not allow it here."""
        s = self._history[-1]
        if s == _TERMINATED:
            return False
        if token_id in self._eos:
            if not self.compiled.automaton.accepting[s]:
                return False
            self._history.append(_TERMINATED)
            return True
        nxt = self.compiled.walk_token(s, token_id)
        if nxt < 0:
            return False
        self._history.append(nxt)
        return True

    def accept_bytes(self, data: bytes) -> bool:
        """Advance by raw bytes (counts as one step for `rollback`)."""
        s = self._history[-1]
        if s == _TERMINATED:
            return False
        with self.compiled._lock:
            nxt = self.compiled.automaton.walk(s, data)
        if nxt < 0:
            return False
        self._history.append(nxt)
        return True

    def rollback(self, n: int = 1) -> None:
        """Undo the last `n` accepted steps."""
        if n < 0 or n >= len(self._history):
            raise MatcherError(f"cannot roll back {n} steps: only {len(self._history) - 1} taken")
        if n:
            del self._history[-n:]

    def reset(self) -> None:
        self._history = [self.compiled.start]
        self._known = Known()

    def fork(self) -> "Matcher":
        """An independent copy at the same position (what completion searches proved is shared
        with it: true for both, and found by this document's own steps)."""
        twin = Matcher.__new__(Matcher)
        twin.compiled = self.compiled
        twin.stop_when_complete = self.stop_when_complete
        twin._history = list(self._history)
        twin._known = self._known  # proved distances hold for both; one document's ops decide them
        twin._eos = self._eos
        twin._masks = self._masks
        twin._vocab_size = self._vocab_size
        return twin

    # -- masks -----------------------------------------------------------------------------

    def _state_mask(self) -> StateMask:
        s = self._history[-1]
        # The usual step first: a state whose mask is known (never the terminated one).
        known = self._masks.get(s)
        if known is not None and known.count and not self.stop_when_complete:
            return known
        if s == _TERMINATED or self.is_terminated():
            return self._eos_only()
        mask = self.compiled.mask(s)
        if mask.count == 0:
            raise MatcherError(
                "no token is allowed next: the grammar cannot continue from "
                + self.compiled.automaton.describe(s)
            )
        return mask

    def _eos_only(self) -> StateMask:
        return self.compiled.eos_only_mask()

    def next_token_mask(self) -> TokenMask:
        """The tokens allowed next, for sparse masking and selection."""
        return TokenMask(self._state_mask(), self.compiled.vocab_size)

    def fill_next_token_bitmask(self, bitmask: np.ndarray, index: int = 0) -> None:
        """Write the allowed-next bitmask into row `index` of `bitmask` (packed int32 layout:
        a one-row array, or a batch of rows); a ValueError if it is not such a row."""
        row = bitmask_row(bitmask, index, self._vocab_size)
        self._state_mask().write(row)

    # -- completion ------------------------------------------------------------------------

    def min_tokens_to_complete(self) -> int:
        """Fewest tokens that can still make the document complete (0 if it is complete).

        Never more than a shortest completion takes; EOS itself is not counted.
        """
        s = self._history[-1]
        if s == _TERMINATED:
            return 0
        with self.compiled._lock:
            return completion_of(self.compiled).lower(s, self._known)[0]

    def can_complete_within(self, n: int) -> bool:
        """Whether the document can certainly be completed in at most `n` more tokens.

        False means no such completion was proved: either there is none, or finding it would
        take a longer search than a decode step can afford.
        """
        s = self._history[-1]
        if s == _TERMINATED:
            return n >= 0
        with self.compiled._lock:
            return completion_of(self.compiled).within(s, n, self._known)

    def completion_token_ids(self, within: int | None = None) -> np.ndarray:
        """Allowed tokens that lead towards completing the document.

        Without `within`: the tokens that begin a shortest completion (EOS where the document
        is whole), where a search within its state limit finds one; farther from whole, those
        that most lower a length the completion certainly keeps under. With it: every allowed
        token after which the document can certainly be completed in `within - 1` more tokens
        (EOS included where it is whole), so a decoder can keep the model's preference while
        making sure it closes in time; the shortest completion's tokens where no token is
        certain to.
        """
        s = self._history[-1]
        if s == _TERMINATED:
            return self.compiled.tables.eos_ids
        with self.compiled._lock:
            if within is None:
                return completion_of(self.compiled).shortest_tokens(s, self._known)
            return completion_of(self.compiled).tokens_within(s, within, self._known)

    def shortest_completion_token(self, logits: np.ndarray | None = None) -> int:
        """A token of `completion_token_ids()`: on a shortest path to completion where one is
        found; the highest-scoring one if `logits`."""
        ids = self.completion_token_ids()
        if ids.size == 0:
            raise MatcherError("no completion token: the vocabulary has no EOS id")
        if logits is None:
            return int(ids[0])
        return int(ids[int(np.argmax(logits[ids]))])

    def token_spelling(self, data: bytes) -> int | None:
        """The allowed token that spells the longest start of `data`, or None: how a decoder
        writes text of its own (a reasoning span's close, once its budget is spent) token by
        token, in tokens the grammar takes."""
        s = self._history[-1]
        if s == _TERMINATED:
            return None
        t = self.compiled.tables
        for k in range(len(data), 0, -1):
            i = bisect.bisect_left(t.sorted_bytes, data[:k])
            if i < len(t.sorted_bytes) and t.sorted_bytes[i] == data[:k]:
                token = int(t.order[i])
                if self.compiled.walk_token(s, token) >= 0:
                    return token
        return None

    def describe(self) -> str:
        s = self._history[-1]
        return "terminated" if s == _TERMINATED else self.compiled.automaton.describe(s)

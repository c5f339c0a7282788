"""llama.cpp's C API for many sequences: one model, one context whose KV cache holds up to
`max_batch` sequences, and a batch buffer that carries every sequence's tokens into one
`llama_decode`.

llama-cpp-python's `Llama` class runs one sequence per context, so the runtime drives the
C functions it exposes directly. Each step's logits are read in place: row i is a zero-copy
view of llama.cpp's output buffer, valid until the next decode.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import RuntimeFailure, RuntimeUnavailable

_backend_lock = threading.Lock()
_backend_ready = False


def _init_backend(lib: Any) -> None:
    global _backend_ready
    with _backend_lock:
        if not _backend_ready:
            lib.llama_backend_init()
            _backend_ready = True


class LlamaContext:
    """A loaded GGUF model and a context of `cells` KV cells shared by `max_batch` sequences.

    `unified`: one pool of cells for all sequences (sequences may share cells, so a common
    prompt prefix is held once); otherwise each sequence has `cells / max_batch` of its own.
    """

    def __init__(self, lib: Any, path: Path, *, cells: int, max_batch: int, batch_tokens: int,
                 n_threads: int, unified: bool):
        _init_backend(lib)
        # llama.cpp's own log goes through llama-cpp-python's logger, whose table of ggml's
        # levels is off by one (a warning reads as an error), so only CRITICAL quiets the load's
        # chatter; failures surface as this module's own errors.
        logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)
        self._lib = lib
        self.model = lib.llama_model_load_from_file(str(path).encode(), lib.llama_model_default_params())
        if not self.model:
            raise RuntimeUnavailable(f"LlamaCpp: llama.cpp could not load {path} (is it a GGUF model file?)")
        params = lib.llama_context_default_params()
        params.n_ctx = cells
        params.n_batch = params.n_ubatch = batch_tokens
        params.n_seq_max = max_batch
        params.kv_unified = unified
        params.n_threads = params.n_threads_batch = n_threads
        self.ctx = lib.llama_init_from_model(self.model, params)
        if not self.ctx:
            lib.llama_model_free(self.model)
            raise RuntimeFailure(
                f"LlamaCpp: llama.cpp could not create a context of {cells} cells for {max_batch} sequences"
            )
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = lib.llama_vocab_n_tokens(self.vocab)
        self.n_ctx_train = lib.llama_model_n_ctx_train(self.model)
        self.cells = lib.llama_n_ctx(self.ctx)
        self.unified = unified
        self.keeps_partial = not (lib.llama_model_is_recurrent(self.model) or lib.llama_model_is_hybrid(self.model))
        self._memory = lib.llama_get_memory(self.ctx)
        self._capacity = batch_tokens
        self._views: dict[int, np.ndarray] = {}  # logits rows by address: see `_row`
        self._max_views = 4 * batch_tokens
        self._batch = lib.llama_batch_init(batch_tokens, 0, 1)
        batch = self._batch
        self._tokens = np.ctypeslib.as_array(batch.token, shape=(batch_tokens,))
        self._positions = np.ctypeslib.as_array(batch.pos, shape=(batch_tokens,))
        self._wants = np.ctypeslib.as_array(batch.logits, shape=(batch_tokens,))
        np.ctypeslib.as_array(batch.n_seq_id, shape=(batch_tokens,))[:] = 1
        self._seq_rows = [batch.seq_id[i] for i in range(batch_tokens)]

    # --- tokens -------------------------------------------------------------------------------

    def tokenize(self, text: bytes, *, add_special: bool, parse_special: bool) -> list[int]:
        lib = self._lib
        room = len(text) + 8
        while True:
            buffer = (lib.llama_token * room)()
            n = lib.llama_tokenize(self.vocab, text, len(text), buffer, room, add_special, parse_special)
            if n >= 0:
                return list(buffer[:n])
            room = -n

    # --- the cache ----------------------------------------------------------------------------

    def keep(self, seq: int, length: int) -> int:
        """Drop sequence `seq`'s cells past its first `length`; how many it kept."""
        lib = self._lib
        if length > 0 and self.keeps_partial and lib.llama_memory_seq_rm(self._memory, seq, length, -1):
            return length
        lib.llama_memory_seq_rm(self._memory, seq, -1, -1)  # a whole sequence always goes
        return 0

    def share(self, source: int, seq: int, length: int) -> bool:
        """Start `seq` from the first `length` cells of `source`, without copying them; False
        where cells cannot be shared (a cache split per sequence, a recurrent model)."""
        lib = self._lib
        if not (self.unified and self.keeps_partial):
            return False
        lib.llama_memory_seq_rm(self._memory, seq, -1, -1)
        lib.llama_memory_seq_cp(self._memory, source, seq, 0, length)
        return True

    # --- a forward pass -----------------------------------------------------------------------

    def decode(self, entries: list[tuple[int, int, list[int], int]]) -> list[list[np.ndarray]]:
        """One `llama_decode` over (sequence, first position, tokens, rows wanted) entries; per
        entry, views of the logits after each of its last `rows wanted` tokens."""
        total = sum(len(tokens) for _, _, tokens, _ in entries)
        if total > self._capacity:
            raise RuntimeFailure(f"LlamaCpp: {total} tokens in one step exceed the batch of {self._capacity}")
        at = 0
        outputs: list[range] = []
        for seq, start, tokens, wants in entries:
            n = len(tokens)
            if not 0 <= wants <= n:
                raise RuntimeFailure(f"LlamaCpp: logits after {wants} of a feed's {n} tokens")
            self._tokens[at : at + n] = tokens
            self._positions[at : at + n] = np.arange(start, start + n)
            self._wants[at : at + n - wants] = 0
            self._wants[at + n - wants : at + n] = 1
            for i in range(at, at + n):
                self._seq_rows[i][0] = seq
            outputs.append(range(at + n - wants, at + n))
            at += n
        self._batch.n_tokens = total
        status = self._lib.llama_decode(self.ctx, self._batch)
        if status != 0:
            raise RuntimeFailure(
                f"LlamaCpp: llama_decode failed with status {status} on a batch of {total} tokens "
                f"over {len(entries)} sequences"
                + (" (no room left in the KV cache)" if status == 1 else "")
            )
        return [[self._row(i) for i in wanted] for wanted in outputs]

    def _row(self, index: int) -> np.ndarray:
        """A view of the logits row llama.cpp keeps at this batch index. llama.cpp writes each
        step's rows into the same buffer, so a view made once per address serves every step
        (making one costs tens of microseconds right after a decode, every token)."""
        pointer = self._lib.llama_get_logits_ith(self.ctx, index)
        address = ctypes.addressof(pointer.contents)
        view = self._views.get(address)
        if view is None:
            if len(self._views) >= self._max_views:  # the buffer moved: forget the old places
                self._views.clear()
            view = self._views[address] = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        return view

    def close(self) -> None:
        """Free the batch buffer, the context and the model (once; later calls do nothing)."""
        if self.model is None:
            return
        self._views.clear()
        lib = self._lib
        lib.llama_batch_free(self._batch)
        lib.llama_free(self.ctx)
        lib.llama_model_free(self.model)
        self.ctx = self.model = None


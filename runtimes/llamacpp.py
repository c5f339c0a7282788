"""llama.cpp in process (llama-cpp-python), decoding driven token by token from Python.

Each step evaluates one token, reads the logits row in place (a zero-copy numpy view of
llama.cpp's output buffer), lets the grammar matcher mask it, and picks the next token; no
llama.cpp sampler or grammar is involved. The KV cache is kept between calls and reused for
the longest prompt prefix the previous call shares.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from grammar import Vocabulary
from grammar._gguf import read_gguf_metadata

from ._chat import ChatTemplate, tool_call_envelope
from ._errors import RuntimeFailure, RuntimeUnavailable
from ._llamacpp_check import ensure_long_prompts_run
from ._local import LocalRuntime
from ._protocol import Messages

logger = logging.getLogger("runtimes")

INSTALL_HINT = "pip install 'agentkit[llama]'  (compiles llama.cpp once, several minutes)"

# llama_token_attr flags (llama.h) of ids that are never text.
_ATTR_UNUSED = 1 << 1
_ATTR_CONTROL = 1 << 3


def import_llama_cpp() -> Any:
    """The `llama_cpp` module, or an error that says how to install it."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise RuntimeUnavailable(f"llama-cpp-python is not installed: {INSTALL_HINT}") from exc
    return llama_cpp


class LlamaCpp(LocalRuntime):
    """A GGUF model run by llama.cpp on the CPU.

    `chat_template` overrides the template stored in the GGUF file (`tokenizer.chat_template`).
    `seed` seeds the sampling of calls that pass no seed of their own.

    Before the model is loaded here, a child process reads a long prompt with it once per
    llama.cpp build, model and CPU (`runtimes._llamacpp_check`): a build that uses instructions
    this machine cannot execute raises `RuntimeUnavailable` naming the fix, instead of killing
    the interpreter with SIGILL at the first long prompt.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        n_threads: int = 2,
        n_ctx: int = 4096,
        seed: int = 0,
        chat_template: str | None = None,
    ):
        super().__init__(seed)
        llama_cpp = import_llama_cpp()
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise RuntimeUnavailable(f"LlamaCpp: no model file at {self.model_path}")
        self.name = f"llama.cpp:{self.model_path.name}"
        self._lib = llama_cpp
        ensure_long_prompts_run(self.model_path)
        logger.info("llama.cpp loading %s (%d threads, %d-position context)", self.model_path, n_threads, n_ctx)
        started = time.perf_counter()
        self._llama = llama_cpp.Llama(
            str(self.model_path),
            n_threads=n_threads,
            n_threads_batch=n_threads,
            n_ctx=n_ctx,
            seed=seed,
            logits_all=False,
            verbose=False,
        )
        self.context_length = self._llama.n_ctx()
        self._n_vocab = self._llama.n_vocab()
        self.vocabulary = Vocabulary.from_gguf(self.model_path)
        if self.vocabulary.size != self._n_vocab:
            raise RuntimeFailure(
                f"LlamaCpp: {self.model_path.name} has {self._n_vocab} logits but its GGUF "
                f"vocabulary has {self.vocabulary.size} ids"
            )
        template = chat_template or self._stored_template()
        self.template = (
            ChatTemplate(template, bos_token=self._token_text("bos"), eos_token=self._token_text("eos"))
            if template
            else None
        )
        self.tool_call_envelope = tool_call_envelope(template)
        self._partial_reuse = not (self._llama._is_recurrent or self._llama._is_hybrid)
        logger.info(
            "llama.cpp loaded %s in %.2f s: %d-id vocabulary, %d-position context, %d threads; compiled for %s",
            self.model_path, time.perf_counter() - started, self._n_vocab, self.context_length, n_threads,
            llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
        )

    # --- the model's vocabulary and template --------------------------------------------------

    def model_vocabulary(self) -> Vocabulary:
        """The vocabulary as the loaded model reports it, token by token.

        `llama_token_to_piece` with a buffer that grows as needed (`detokenize([i])` would
        truncate long tokens); control and unused ids are special, end-of-generation ids EOS.
        """
        lib = self._lib
        vocab = lib.llama_model_get_vocab(self._llama.model)
        n = lib.llama_vocab_n_tokens(vocab)
        buffer = ctypes.create_string_buffer(64)
        tokens: list[bytes] = []
        eos_ids, special_ids = [], []
        for i in range(n):
            size = lib.llama_token_to_piece(vocab, i, buffer, len(buffer), 0, False)
            if size < 0:
                buffer = ctypes.create_string_buffer(-size)
                size = lib.llama_token_to_piece(vocab, i, buffer, len(buffer), 0, False)
            tokens.append(buffer.raw[:size])
            if lib.llama_vocab_is_eog(vocab, i):
                eos_ids.append(i)
            if lib.llama_vocab_get_attr(vocab, i) & (_ATTR_CONTROL | _ATTR_UNUSED):
                special_ids.append(i)
        return Vocabulary.from_tokens(tokens, eos_ids=eos_ids, special_ids=special_ids, size=self._n_vocab)

    def _stored_template(self) -> str | None:
        found = read_gguf_metadata(self.model_path, ["tokenizer.chat_template"])
        return found.get("tokenizer.chat_template")

    def _token_text(self, which: str) -> str:
        lib = self._lib
        vocab = lib.llama_model_get_vocab(self._llama.model)
        token = lib.llama_vocab_bos(vocab) if which == "bos" else lib.llama_vocab_eos(vocab)
        if token < 0:
            return ""
        return lib.llama_vocab_get_text(vocab, token).decode("utf-8", errors="replace")

    def render(self, messages: Messages, tools: list[dict[str, Any]] | None = None) -> str:
        """The prompt text: the chat rendered with the model's template, or a string as given."""
        if isinstance(messages, str):
            return messages
        if self.template is None:
            raise RuntimeFailure(
                f"LlamaCpp: {self.model_path.name} has no chat template "
                "(tokenizer.chat_template); pass chat_template=... or a plain string prompt"
            )
        return self.template.render(messages, tools)

    # --- the model steps (worker thread) ------------------------------------------------------

    def _prompt_ids(self, messages: Messages, tools: list[dict[str, Any]] | None) -> list[int]:
        text = self.render(messages, tools).encode("utf-8")
        if isinstance(messages, str):
            ids = self._llama.tokenize(text, add_bos=True, special=False)
        else:  # the template writes the BOS text itself where the model wants one
            ids = self._llama.tokenize(text, add_bos=False, special=True)
        if not ids:
            raise RuntimeFailure("LlamaCpp: the prompt is empty (no tokens to read)")
        return ids

    def _prefill(self, prompt_ids: list[int]) -> np.ndarray:
        llama = self._llama
        keep = 0
        if self._partial_reuse and llama.n_tokens:
            cached = llama.input_ids[: llama.n_tokens]
            limit = min(len(cached), len(prompt_ids) - 1)  # the last prompt token is always read
            differs = np.flatnonzero(cached[:limit] != np.asarray(prompt_ids[:limit], dtype=cached.dtype))
            keep = int(differs[0]) if differs.size else limit
        if keep == 0:
            llama.reset()
        llama.n_tokens = keep
        llama.eval(prompt_ids[keep:])
        return self._logits()

    def _forward(self, token_id: int) -> np.ndarray:
        self._llama.eval([token_id])
        return self._logits()

    def _logits(self) -> np.ndarray:
        """The last position's logits, viewed in place (overwritten by the next eval)."""
        pointer = self._lib.llama_get_logits_ith(self._llama.ctx, -1)
        return np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))

    def _release(self) -> None:
        self._llama.close()

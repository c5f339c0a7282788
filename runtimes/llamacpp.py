"""llama.cpp in process (llama-cpp-python's C bindings), decoding driven token by token from Python.

Concurrent calls share each forward pass: every step is one `llama_decode` over the next token
of each running sequence (and a chunk of a newcomer's prompt), each sequence in its own slot of
the KV cache. Each step reads the logits rows in place (zero-copy numpy views of llama.cpp's
output buffer), lets each sequence's grammar matcher mask its row, and picks its next token; no
llama.cpp sampler or grammar is involved. A slot's cache is kept between calls: a new prompt
reuses the longest prefix that any slot holds (another call's system prompt, say).
"""

from __future__ import annotations

import ctypes
import logging
import os
import time
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from grammar import Vocabulary, read_gguf_metadata

from ._chat import ChatTemplate, json_separators, tool_call_envelope
from ._control_text import ControlTexts
from ._draft_model import DraftModel
from ._drafting import Drafter
from ._errors import RuntimeFailure, RuntimeUnavailable
from ._llama_context import LlamaContext
from ._llamacpp_check import ensure_long_prompts_run
from ._local import LocalRuntime
from ._batch import Feed
from ._protocol import Messages

logger = logging.getLogger("runtimes")

INSTALL_HINT = "pip install 'agentkit[llama]'  (compiles llama.cpp once, several minutes)"

# llama_token_attr flags (llama.h) of ids that are never text.
_ATTR_UNKNOWN = 1 << 0
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

    `n_ctx` is the positions one call may use (prompt and answer). Up to `max_batch` calls
    decode together. With `shared_cache` (the default) they share one KV cache of
    `cache_cells` cells (default: twice `n_ctx`), where a common prompt prefix is held once; a
    call starts once its prompt and `max_tokens` fit beside the running ones, so a running call
    never meets a full cache. Every step's attention then spans every cell in use, so for long
    calls `shared_cache=False` gives each call `n_ctx` cells of its own (`max_batch` times the
    memory). `batch_tokens` is the most tokens one forward pass reads, and `prefill_chunk` the
    most prompt tokens a newcomer reads per step while others decode. `max_batch=1` decodes
    one call at a time.

    `chat_template` overrides the template stored in the GGUF file (`tokenizer.chat_template`).
    `seed` seeds the sampling of calls that pass no seed of their own.

    `jump_forward` (on by default): where the grammar allows exactly one next token, it is
    taken without a model step and read with the next one; greedy output is unchanged.
    `draft="prompt"`: speculative decoding by prompt lookup; up to `draft_tokens` guesses a
    step, each allowed by the grammar, checked by the model in one pass (see `LocalRuntime.draft`).
    `draft=PATH`: the guesses of a smaller GGUF model with the same vocabulary (greedy, under the
    grammar), loaded beside this one with a cache slot per call.

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
        max_batch: int = 8,
        shared_cache: bool = True,
        cache_cells: int | None = None,
        batch_tokens: int = 512,
        prefill_chunk: int = 128,
        seed: int = 0,
        chat_template: str | None = None,
        jump_forward: bool = True,
        draft: object = None,
        draft_tokens: int = 8,
    ):
        super().__init__(seed)
        llama_cpp = import_llama_cpp()
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise RuntimeUnavailable(f"LlamaCpp: no model file at {self.model_path}")
        for option, value in (("n_ctx", n_ctx), ("max_batch", max_batch), ("batch_tokens", batch_tokens),
                              ("prefill_chunk", prefill_chunk), ("n_threads", n_threads),
                              ("draft_tokens", draft_tokens)):
            if value < 1:
                raise ValueError(f"LlamaCpp: {option} must be at least 1, got {value}")
        if shared_cache:
            cells = cache_cells if cache_cells is not None else (n_ctx if max_batch == 1 else 2 * n_ctx)
            if cells < n_ctx:
                raise ValueError(f"LlamaCpp: cache_cells ({cells}) must hold one whole call of n_ctx ({n_ctx}) positions")
        elif cache_cells is not None:
            raise ValueError("LlamaCpp: cache_cells sizes the shared cache; pass shared_cache=True with it")
        else:
            cells = n_ctx * max_batch
        if batch_tokens < max_batch:
            raise ValueError(f"LlamaCpp: batch_tokens ({batch_tokens}) must take a token of each of max_batch ({max_batch})")
        self.name = f"llama.cpp:{self.model_path.name}"
        self._lib = llama_cpp
        ensure_long_prompts_run(self.model_path)
        logger.info("llama.cpp loading %s (%d threads, %d-position context per call, up to %d calls at once)",
                    self.model_path, n_threads, n_ctx, max_batch)
        started = time.perf_counter()
        self._context = LlamaContext(llama_cpp, self.model_path, cells=cells, max_batch=max_batch,
                                   batch_tokens=batch_tokens, n_threads=n_threads, unified=shared_cache)
        self.context_length = n_ctx
        self.max_batch = max_batch
        self.cache_cells = self._context.cells if shared_cache else None  # else each call has n_ctx of its own
        self.keeps_partial_cache = self._context.keeps_partial
        self.jump_forward = jump_forward
        self.draft_tokens = draft_tokens
        self.batch_tokens = batch_tokens
        self.prefill_chunk = prefill_chunk
        self._n_vocab = self._context.n_vocab
        self._n_threads = n_threads
        self._draft_models: dict[str, DraftModel] = {}  # by resolved path: see `_drafter_for`
        # What the models hold is freed by `aclose`, or when this runtime is collected without it.
        self._free = weakref.finalize(self, _free, self._context, self._draft_models)
        self._free.atexit = False  # at exit the process's memory goes anyway, decoding or not
        try:
            self._read_model(chat_template, draft)
        except BaseException:
            self._free()  # a runtime that was never made frees what it loaded
            raise
        logger.info(
            "llama.cpp loaded %s in %.2f s: %d-id vocabulary, %d-position context per call, up to %d calls "
            "at once in %d KV cells, %d threads; compiled for %s",
            self.model_path, time.perf_counter() - started, self._n_vocab, self.context_length, self.max_batch,
            self._context.cells, n_threads,
            llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
        )

    def _read_model(self, chat_template: str | None, draft: object) -> None:
        """The loaded model's vocabulary, chat template and control texts, and the drafter."""
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
        self.json_separators = json_separators(template)
        self.template_takes_tools = self.template.takes_tools if self.template is not None else None
        self._control_texts = self._parsed_only_as_special()
        self.draft = draft

    # --- the model's vocabulary and template --------------------------------------------------

    def model_vocabulary(self) -> Vocabulary:
        """The vocabulary as the loaded model reports it, token by token.

        `llama_token_to_piece` with a buffer that grows as needed (`detokenize([i])` would
        truncate long tokens); control and unused ids are special, end-of-generation ids EOS.
        """
        lib = self._lib
        vocab = self._context.vocab
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

    def _parsed_only_as_special(self) -> ControlTexts:
        """The texts that llama.cpp reads as a token only with `parse_special`: those of
        control and unknown ids (user-defined ids are read as themselves either way)."""
        lib = self._lib
        vocab = self._context.vocab
        texts = [
            lib.llama_vocab_get_text(vocab, i).decode("utf-8", errors="replace")
            for i in range(self._n_vocab)
            if lib.llama_vocab_get_attr(vocab, i) & (_ATTR_CONTROL | _ATTR_UNKNOWN)
        ]
        return ControlTexts(texts)

    def _stored_template(self) -> str | None:
        found = read_gguf_metadata(self.model_path, ["tokenizer.chat_template"])
        return found.get("tokenizer.chat_template")

    def _token_text(self, which: str) -> str:
        lib = self._lib
        vocab = self._context.vocab
        token = lib.llama_vocab_bos(vocab) if which == "bos" else lib.llama_vocab_eos(vocab)
        if token < 0:
            return ""
        return lib.llama_vocab_get_text(vocab, token).decode("utf-8", errors="replace")

    def render(self, messages: Messages, tools: list[dict[str, Any]] | None = None) -> str:
        """The prompt text: the chat rendered with the model's template, or a string as given."""
        if isinstance(messages, str):
            return messages
        return self._chat_template().render(messages, tools)

    def _chat_template(self) -> ChatTemplate:
        if self.template is None:
            raise RuntimeFailure(
                f"LlamaCpp: {self.model_path.name} has no chat template "
                "(tokenizer.chat_template); pass chat_template=... or a plain string prompt"
            )
        return self.template

    # --- the model steps (scheduler thread) ---------------------------------------------------

    def _prompt_ids(self, messages: Messages, tools: list[dict[str, Any]] | None) -> list[int]:
        """The prompt's ids. Only the template's own markup is read as control tokens: such
        text inside a message or tool (a tool result that writes `<|im_start|>`) is read as
        plain text, so no input can open a turn of its own."""
        if isinstance(messages, str):
            ids = self._context.tokenize(messages.encode("utf-8"), add_special=True, parse_special=False)
        else:  # the template writes the BOS text itself where the model wants one
            ids = []
            for piece in self._control_texts.render_pieces(self._chat_template().render, messages, tools):
                ids += self._context.tokenize(piece.text.encode("utf-8"), add_special=False, parse_special=piece.markup)
        return ids

    def _text_ids(self, text: str) -> list[int]:
        return self._context.tokenize(text.encode("utf-8"), add_special=False, parse_special=False)

    def _drafter_for(self, value: object) -> Drafter | None:
        """A path (other than "prompt") names a draft model: loaded beside this one once (a
        later setting of the same path finds it loaded), with a cache slot per call decoding at
        once; freed with this runtime."""
        if isinstance(value, os.PathLike) or (isinstance(value, str) and value != "prompt"):
            path = str(Path(value).resolve())
            if path not in self._draft_models:
                self._draft_models[path] = DraftModel(
                    self._lib, value, vocabulary=self.vocabulary, positions=self.context_length,
                    slots=self.max_batch, batch_tokens=self.batch_tokens, n_threads=self._n_threads)
            return self._draft_models[path]
        return super()._drafter_for(value)

    def begin_slot(self, slot: int, keep: int) -> int:
        return self._context.keep(slot, keep)

    def begin_slot_from(self, source: int, slot: int, length: int) -> bool:
        return self._context.share(source, slot, length)

    def read_batch(self, feeds: list[Feed]) -> list[list[np.ndarray]]:
        return self._context.decode([(f.slot, f.start, f.tokens, f.logits) for f in feeds])

    def _release(self) -> None:
        self._free()


def _free(context: LlamaContext, draft_models: dict[str, DraftModel]) -> None:
    """Free a runtime's model and its draft models (a finalizer: it holds no reference to the runtime)."""
    for model in draft_models.values():
        model.close()
    context.close()

"""MLC-LLM on CUDA (or the CPU): a compiled model library driven step by step through TVM's relax VM.

The model folder (weights, `mlc-chat-config.json`, `tokenizer.json`) and the model library
(`.so`) are what `mlc_llm convert_weight` / `mlc_llm compile` produce. Decoding follows MLC-LLM's
own Python path (`mlc_llm/testing/debug_chat.py`): `embed` the token ids, `prefill` the prompt
in chunks into a paged KV cache (`create_flashinfer_paged_kv_cache` or
`create_tir_paged_kv_cache`, with the `vm.builtin.kv_state_*` builtins), then `decode` one token
at a time. The grammar's packed int32 bitmask is applied where the logits are, by the library's
own `apply_bitmask_inplace` kernel (the layout MLC-LLM's engine uses; a compiled kernel in the
library's imported module, looked up as MLC-LLM's engine does), or the logits are copied
to the host and masked sparsely there.

Only this module touches TVM, through `MLCLibrary`: the few calls it makes, nothing more.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grammar import Matcher, TokenMask, Vocabulary, allocate_token_bitmask

from ._chat import ChatTemplate, json_separators, tool_call_envelope
from ._control_text import ControlTexts
from ._errors import RuntimeFailure, RuntimeUnavailable
from ._hf_vocab import special_token_texts, vocabulary_from_tokenizer_json
from ._local import LocalRuntime
from ._protocol import Messages

logger = logging.getLogger("runtimes")

INSTALL_HINT = (
    "MLC-LLM ships its own wheels (the PyPI names are placeholders): "
    "python -m pip install --pre -U -f https://mlc.ai/wheels mlc-llm-nightly-cu123 mlc-ai-nightly-cu123 "
    "(choose the cuXYZ matching your CUDA; see https://llm.mlc.ai/docs/install/mlc_llm.html)"
)
PAGE_SIZE = 16
BITMASK_KERNEL = "apply_bitmask_inplace"


@dataclass
class MLCLibrary:
    """The TVM / MLC-LLM entry points this runtime uses (a narrow seam: tests stand in for it).

    tvm: the `tvm` module (runtime.load_module, runtime.device, relax.VirtualMachine,
    get_global_func, contrib.tvmjs.load_tensor_cache); shape: the shape-tuple type
    (`tvm_ffi.Shape`, or `tvm.runtime.ShapeTuple` in older TVM); tensor: numpy -> device array
    (`tvm.runtime.tensor`, or `tvm.nd.array`); tokenizer: `mlc_llm.tokenizers.Tokenizer`.
    """

    tvm: Any
    shape: Any
    tensor: Any
    tokenizer: Any


def load_mlc_library() -> MLCLibrary:
    """TVM and MLC-LLM, imported on first use, or an error that says how to install them."""
    try:
        import tvm
        from mlc_llm.tokenizers import Tokenizer
        from tvm import relax  # noqa: F401  (registers tvm.relax.VirtualMachine)
        from tvm.contrib import tvmjs  # noqa: F401
    except ImportError as exc:
        raise RuntimeUnavailable(f"MLC-LLM is not installed ({exc}): {INSTALL_HINT}") from exc
    try:
        from tvm_ffi import Shape
    except ImportError:
        Shape = tvm.runtime.ShapeTuple
    tensor = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    return MLCLibrary(tvm=tvm, shape=Shape, tensor=tensor, tokenizer=Tokenizer)


class MLC(LocalRuntime):
    """A model compiled by MLC-LLM, run on `device` ("cuda", "cuda:1", "cpu", ...).

    `mask_on_device`: apply the grammar's bitmask with the library's `apply_bitmask_inplace`
    (default when the library has it), else mask on the host. Masking falls back to the host
    only visibly: `host_masking_reason` says why (None while masks are applied on the device)
    and a warning on the "runtimes" logger says it at load. `vocabulary` overrides the one
    read from the folder's `tokenizer.json`; `chat_template` the one in `tokenizer_config.json`.
    `seed` seeds the sampling of calls that pass no seed of their own.
    """

    def __init__(
        self,
        model_path: str | Path,
        model_lib: str | Path,
        *,
        device: str = "cuda",
        vocabulary: Vocabulary | None = None,
        chat_template: str | None = None,
        mask_on_device: bool | None = None,
        seed: int | None = None,
    ):
        super().__init__(seed)
        started = time.perf_counter()
        lib = load_mlc_library()
        self._lib = lib
        self.model_path = Path(model_path)
        self.name = f"mlc:{self.model_path.name}"
        config = _read_json(self.model_path / "mlc-chat-config.json")
        tvm = lib.tvm
        self._device = tvm.runtime.device(device)
        executable = tvm.runtime.load_module(str(model_lib))
        metadata = json.loads(tvm.relax.VirtualMachine(executable, tvm.runtime.device("cpu"))["_metadata"]())
        self._module = tvm.relax.VirtualMachine(executable, self._device).module
        self._params = self._load_params(metadata)

        self._embed = self._module["embed"]
        self._prefill_step = self._module["prefill"]
        self._decode_step = self._module["decode"]
        self._add_sequence = tvm.get_global_func("vm.builtin.kv_state_add_sequence")
        self._clear = tvm.get_global_func("vm.builtin.kv_state_clear")
        self._begin_forward = tvm.get_global_func("vm.builtin.kv_state_begin_forward")
        self._end_forward = tvm.get_global_func("vm.builtin.kv_state_end_forward")
        self._reshape = tvm.get_global_func("vm.builtin.reshape")

        sliding_window = config.get("sliding_window_size") or metadata.get("sliding_window_size", -1)
        context_window = config.get("context_window_size") or metadata.get("context_window_size", -1)
        self.prefill_chunk = int(config.get("prefill_chunk_size") or metadata["prefill_chunk_size"])
        self.context_length = int(sliding_window if context_window == -1 else context_window)
        self._kv = self._create_kv_cache(sliding_window != -1)

        self.logits_width = int(config["vocab_size"])
        eos_ids = _eos_ids(config)
        self.vocabulary = vocabulary or vocabulary_from_tokenizer_json(
            self.model_path / "tokenizer.json", eos_ids=eos_ids, size=self.logits_width
        )
        if self.vocabulary.size != self.logits_width:
            raise RuntimeFailure(
                f"{self.name}: the vocabulary has {self.vocabulary.size} ids, the model {self.logits_width} logits"
            )
        kernel = _imported_function(self._module, BITMASK_KERNEL)
        if mask_on_device and kernel is None:
            raise RuntimeFailure(f"{self.name}: {model_lib} has no {BITMASK_KERNEL} kernel to mask on device")
        self.mask_on_device = kernel is not None if mask_on_device is None else mask_on_device
        self.host_masking_reason: str | None = None
        if mask_on_device is False:
            self.host_masking_reason = "mask_on_device=False was asked for"
        elif kernel is None:
            self.host_masking_reason = (
                f"{model_lib} has no {BITMASK_KERNEL} kernel (looked up in the library and its imported modules)"
            )
            logger.warning("%s: masking on the host, not on %s: %s", self.name, device, self.host_masking_reason)
        if self.mask_on_device:
            self._apply_bitmask = kernel
            self._bitmask = allocate_token_bitmask(1, self.logits_width)
            self._bitmask_device = lib.tensor(self._bitmask, self._device)
            self._seq_ids = lib.tensor(np.zeros(1, dtype=np.int32), self._device)

        self._tokenizer = lib.tokenizer(str(self.model_path))
        tokenizer_json = self.model_path / "tokenizer.json"
        specials = special_token_texts(tokenizer_json) if tokenizer_json.is_file() else {}
        self._control_ids = frozenset(specials)
        self._control_texts = ControlTexts(specials.values())
        template_text, bos, eos = chat_template, "", ""
        tokenizer_config = self.model_path / "tokenizer_config.json"
        if tokenizer_config.is_file():
            found = _read_json(tokenizer_config)
            template_text = template_text or found.get("chat_template")
            bos, eos = _token_text(found.get("bos_token")), _token_text(found.get("eos_token"))
        self.template = ChatTemplate(template_text, bos_token=bos, eos_token=eos) if template_text else None
        self.tool_call_envelope = tool_call_envelope(template_text)
        self.json_separators = json_separators(template_text)
        self.template_takes_tools = self.template.takes_tools if self.template is not None else None
        logger.info(
            "MLC loaded %s with %s on %s in %.2f s: %d-id vocabulary, %d-position context, masks on the %s",
            self.model_path, model_lib, device, time.perf_counter() - started, self.vocabulary.size,
            self.context_length, "device" if self.mask_on_device else "host",
        )

    # --- loading ------------------------------------------------------------------------------

    def _load_params(self, metadata: dict[str, Any]) -> list[Any]:
        params, meta = self._lib.tvm.contrib.tvmjs.load_tensor_cache(str(self.model_path), self._device)
        names = [p["name"] for p in metadata["params"]]
        if len(names) != meta["ParamSize"]:
            raise RuntimeFailure(
                f"{self.name}: the library expects {len(names)} parameters, the weights hold {meta['ParamSize']}"
            )
        return [params[name] for name in names]

    def _create_kv_cache(self, sliding: bool) -> Any:
        for name in ("create_flashinfer_paged_kv_cache", "create_tir_paged_kv_cache"):
            if self._module.implements_function(name):
                shape = self._lib.shape
                return self._module[name](
                    shape([1]),  # max sequences
                    shape([self.context_length]),
                    shape([self.prefill_chunk]),
                    shape([PAGE_SIZE]),
                    shape([int(sliding)]),
                )
        raise RuntimeFailure(f"{self.name}: the model library creates no paged KV cache (RNN-state models are not supported)")

    # --- prompt -------------------------------------------------------------------------------

    def render(self, messages: Messages, tools: list[dict[str, Any]] | None = None) -> str:
        if isinstance(messages, str):
            return messages
        return self._chat_template().render(messages, tools)

    def _chat_template(self) -> ChatTemplate:
        if self.template is None:
            raise RuntimeFailure(
                f"{self.name}: no chat template (tokenizer_config.json has none); pass chat_template=..."
            )
        return self.template

    def _prompt_ids(self, messages: Messages, tools: list[dict[str, Any]] | None) -> list[int]:
        """The prompt's ids. Only the template's own markup is read as special tokens: such
        text inside a message or tool is read as plain text, so no input can open a turn."""
        if isinstance(messages, str):
            ids = [i for part in self._control_texts.split(messages) for i in self._plain_ids(part)]
        else:
            ids = []
            for piece in self._control_texts.render_pieces(self._chat_template().render, messages, tools):
                ids += self._encode(piece.text) if piece.markup else self._plain_ids(piece.text)
        return ids

    def _text_ids(self, text: str) -> list[int]:
        return self._plain_ids(text)

    def _encode(self, text: str) -> list[int]:
        return [int(i) for i in self._tokenizer.encode(text)]

    def _plain_ids(self, text: str) -> list[int]:
        """`text`'s ids, none of them special. The tokenizer reads a special token's text
        wherever it stands, so text that spells one is cut in halves until no part does."""
        ids = self._encode(text)
        if self._control_ids.isdisjoint(ids):
            return ids
        if len(text) == 1:
            raise RuntimeFailure(f"{self.name}: the character {text!r} is itself a special token's text")
        half = len(text) // 2
        return self._plain_ids(text[:half]) + self._plain_ids(text[half:])

    # --- model steps (worker thread) ----------------------------------------------------------

    def prefill(self, prompt_ids: list[int]) -> Any:
        self._clear(self._kv)
        self._add_sequence(self._kv, 0)
        logits = None
        for start in range(0, len(prompt_ids), self.prefill_chunk):
            logits = self._model_step(self._prefill_step, prompt_ids[start : start + self.prefill_chunk])
        return logits

    def forward(self, token_id: int) -> Any:
        return self._model_step(self._decode_step, [token_id])

    def _model_step(self, step: Any, ids: list[int]) -> Any:
        shape = self._lib.shape
        tokens = self._lib.tensor(np.asarray(ids, dtype=np.int32), self._device)
        embedded = self._embed(tokens, self._params)
        embedded = self._reshape(embedded, shape([1, len(ids), embedded.shape[-1]]))
        self._begin_forward(self._kv, shape([0]), shape([len(ids)]))
        logits, self._kv = step(embedded, self._kv, self._params)
        self._end_forward(self._kv)
        return logits

    def _host_logits(self, logits: Any) -> np.ndarray:
        return np.ascontiguousarray(logits.numpy(), dtype=np.float32).reshape(-1)

    def _masked_logits(self, logits: Any, matcher: Matcher) -> tuple[np.ndarray, TokenMask | None]:
        if not self.mask_on_device:
            return super()._masked_logits(logits, matcher)
        matcher.fill_next_token_bitmask(self._bitmask, 0)
        self._bitmask_device.copyfrom(self._bitmask)
        rows = self._reshape(logits, self._lib.shape([1, self.logits_width]))
        self._apply_bitmask(rows, self._seq_ids, self._bitmask_device)
        return self._host_logits(rows), None

    def _release(self) -> None:
        self._kv = None
        self._params = []


def _imported_function(module: Any, name: str) -> Any:
    """`name` from `module` or the modules it imports, or None.

    A model library's compiled kernels (`apply_bitmask_inplace`) live in the VM module's
    imported code module, not among the VM's own functions, so a plain lookup misses them.
    """
    try:
        return module.get_function(name, query_imports=True)
    except AttributeError:
        return None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except FileNotFoundError as exc:
        raise RuntimeUnavailable(f"MLC: {path} is missing; is {path.parent} an MLC model folder?") from exc


def _eos_ids(config: dict[str, Any]) -> list[int]:
    """End-of-generation ids: the config's `eos_token_id` and its template's stop tokens."""
    found = config.get("eos_token_id")
    ids = set(found if isinstance(found, list) else [] if found is None else [found])
    ids.update((config.get("conv_template") or {}).get("stop_token_ids") or ())
    return sorted(int(i) for i in ids)


def _token_text(entry: Any) -> str:
    """A tokenizer_config.json token entry: a string, or {"content": ...}."""
    if isinstance(entry, dict):
        return entry.get("content", "")
    return entry or ""

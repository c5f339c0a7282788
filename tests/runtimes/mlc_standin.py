"""A stand-in for the TVM / MLC-LLM entry points `runtimes.mlc` calls, with the same call shapes.

It checks what a real library would require (argument kinds and shapes, KV-cache protocol:
a sequence added before a forward, begin_forward before each step, end_forward after) and
runs a toy language model: logits are a seeded function of the whole token history held in
the paged KV cache, so a wrong cache protocol changes the answers. `apply_bitmask_inplace`
has the kernel's meaning: bit i of word j of row r keeps logit 32·j+i of row r, else the
float32 minimum.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from runtimes.mlc import MLCLibrary


class Shape(tuple):
    """tvm_ffi.Shape: a tuple of ints."""

    def __new__(cls, values):
        values = tuple(values)
        assert all(isinstance(v, int) for v in values), f"Shape takes ints, got {values}"
        return super().__new__(cls, values)


class Device:
    def __init__(self, name: str):
        self.name = name


class Tensor:
    """tvm.runtime.Tensor: device memory, read with .numpy(), written with .copyfrom()."""

    def __init__(self, array: np.ndarray, device: Device):
        self.array = array
        self.device = device

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> str:
        return str(self.array.dtype)

    def numpy(self) -> np.ndarray:
        return self.array.copy()

    def copyfrom(self, source: np.ndarray) -> "Tensor":
        assert source.shape == self.array.shape and source.dtype == self.array.dtype
        self.array[...] = source
        return self


def tensor(array: np.ndarray, device: Device) -> Tensor:
    return Tensor(np.array(array), device)


class KVCache:
    def __init__(self, *shapes: Shape):
        assert all(isinstance(s, Shape) for s in shapes)
        self.shapes = shapes
        self.sequences: dict[int, list[int]] = {}
        self.pending: tuple[int, int] | None = None
        self.log: list[tuple] = [("create", *shapes)]


class Module:
    """The relax VM module of a compiled model library."""

    def __init__(self, config: dict[str, Any], with_bitmask_kernel: bool, calls: list[tuple]):
        self.vocab_size = config["vocab_size"]
        self.chunk = config["prefill_chunk_size"]
        self.calls = calls
        self.functions = {
            "embed": self.embed, "prefill": self.prefill, "decode": self.decode,
            "create_tir_paged_kv_cache": KVCache,
        }
        if with_bitmask_kernel:
            self.functions["apply_bitmask_inplace"] = self.apply_bitmask_inplace

    def implements_function(self, name: str) -> bool:
        return name in self.functions

    def __getitem__(self, name: str):
        if name not in self.functions:
            raise AttributeError(f"module has no function {name}")
        return self.functions[name]

    def embed(self, tokens: Tensor, params: list) -> Tensor:
        assert tokens.array.dtype == np.int32 and tokens.array.ndim == 1 and params
        self.calls.append(("embed", tokens.array.tolist()))
        return Tensor(tokens.array.astype(np.float32)[:, None], tokens.device)  # hidden size 1: the id

    def _forward(self, kind: str, embedded: Tensor, kv: KVCache, params: list) -> tuple[Tensor, KVCache]:
        assert embedded.shape[0] == 1 and embedded.shape[2] == 1, embedded.shape
        n = embedded.shape[1]
        assert kv.pending == (0, n), f"begin_forward(seq 0, {n}) must come first, got {kv.pending}"
        if kind == "prefill":
            assert n <= self.chunk, "prefill chunk longer than prefill_chunk_size"
        else:
            assert n == 1
        history = kv.sequences[0]
        history.extend(int(v) for v in embedded.array.reshape(-1))
        self.calls.append((kind, n))
        seed = zlib.crc32(np.asarray(history, np.int64).tobytes())
        logits = np.random.default_rng(seed).standard_normal(self.vocab_size).astype(np.float32) * 4
        return Tensor(logits.reshape(1, 1, -1), embedded.device), kv

    def prefill(self, embedded, kv, params):
        return self._forward("prefill", embedded, kv, params)

    def decode(self, embedded, kv, params):
        return self._forward("decode", embedded, kv, params)

    def apply_bitmask_inplace(self, logits: Tensor, seq_ids: Tensor, bitmask: Tensor) -> None:
        assert logits.array.ndim == 2 and logits.array.dtype == np.float32
        assert seq_ids.array.dtype == np.int32 and bitmask.array.dtype == np.int32
        assert bitmask.shape == (logits.shape[0], (logits.shape[1] + 31) // 32)
        self.calls.append(("apply_bitmask_inplace", bitmask.numpy()))
        for s in seq_ids.array.tolist():
            ids = np.arange(logits.shape[1])
            keep = (bitmask.array[s, ids // 32] >> (ids % 32)) & 1 == 1
            logits.array[s, ~keep] = np.finfo(np.float32).min


def builtins(calls: list[tuple]) -> dict[str, Any]:
    def add_sequence(kv: KVCache, seq: int):
        assert seq not in kv.sequences, "sequence added twice"
        kv.sequences[seq] = []

    def clear(kv: KVCache):
        kv.sequences.clear()
        calls.append(("clear",))

    def begin_forward(kv: KVCache, seqs: Shape, lengths: Shape):
        assert isinstance(seqs, Shape) and isinstance(lengths, Shape)
        assert kv.pending is None, "begin_forward twice without end_forward"
        kv.pending = (seqs[0], lengths[0])

    def end_forward(kv: KVCache):
        assert kv.pending is not None
        kv.pending = None

    def reshape(t: Tensor, shape: Shape) -> Tensor:
        assert isinstance(shape, Shape)
        return Tensor(t.array.reshape(shape), t.device)  # a view, as the builtin is

    return {"vm.builtin.kv_state_add_sequence": add_sequence, "vm.builtin.kv_state_clear": clear,
            "vm.builtin.kv_state_begin_forward": begin_forward, "vm.builtin.kv_state_end_forward": end_forward,
            "vm.builtin.reshape": reshape}


def library(model_dir: Path, *, with_bitmask_kernel: bool = True) -> tuple[MLCLibrary, list[tuple]]:
    """The stand-in library for the model folder `model_dir`, and the log of calls made."""
    config = json.loads((model_dir / "mlc-chat-config.json").read_text())
    calls: list[tuple] = []
    module = Module(config, with_bitmask_kernel, calls)
    metadata = {"params": [{"name": "w0"}, {"name": "w1"}], "prefill_chunk_size": 64,
                "context_window_size": 512, "sliding_window_size": -1}

    class VirtualMachine:
        def __init__(self, executable, device: Device):
            assert executable == ("executable", str(model_dir / "model.so"))
            self.module = module

        def __getitem__(self, name):
            assert name == "_metadata"
            return lambda: json.dumps(metadata)

    def load_tensor_cache(path: str, device: Device):
        assert Path(path) == model_dir
        return {"w0": Tensor(np.ones(2), device), "w1": Tensor(np.ones(3), device)}, {"ParamSize": 2}

    found = builtins(calls)
    tvm = SimpleNamespace(
        runtime=SimpleNamespace(device=Device, load_module=lambda path: ("executable", path)),
        relax=SimpleNamespace(VirtualMachine=VirtualMachine),
        get_global_func=lambda name: found[name],
        contrib=SimpleNamespace(tvmjs=SimpleNamespace(load_tensor_cache=load_tensor_cache)),
    )
    return MLCLibrary(tvm=tvm, shape=Shape, tensor=tensor, tokenizer=ByteTokenizer), calls


class ByteTokenizer:
    """mlc_llm.tokenizers.Tokenizer over the stand-in folder's byte-level vocabulary."""

    def __init__(self, path: str):
        self.ids = {b: i for i, b in enumerate(BYTES)}

    def encode(self, text: str) -> list[int]:
        return [self.ids[b] for b in text.encode("utf-8")]


BYTES = list(range(256))
EOS = 260
VOCAB_SIZE = 320  # logits wider than the tokenizer: padding ids


def write_model_folder(path: Path) -> Path:
    """An MLC model folder: chat config, byte-level tokenizer.json, tokenizer_config.json."""
    from runtimes._hf_vocab import _BYTE_LEVEL

    to_char = {b: c for c, b in _BYTE_LEVEL.items()}
    vocab = {to_char[b]: b for b in BYTES}
    vocab.update({"Ġ\"": 256, "\":": 257, "ĠĠ": 258, "true": 259})
    spec = {"model": {"type": "BPE", "vocab": vocab},
            "added_tokens": [{"id": EOS, "content": "<|end|>", "special": True}],
            "pre_tokenizer": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"}}
    (path / "tokenizer.json").write_text(json.dumps(spec))
    (path / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
                         "{% if add_generation_prompt %}<|assistant|>{% endif %}",
        "eos_token": {"content": "<|end|>"}}))
    (path / "mlc-chat-config.json").write_text(json.dumps({
        "vocab_size": VOCAB_SIZE, "context_window_size": 1024, "sliding_window_size": -1,
        "prefill_chunk_size": 8, "eos_token_id": EOS, "conv_template": {"stop_token_ids": [EOS]}}))
    return path

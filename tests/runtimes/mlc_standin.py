"""A stand-in for a compiled MLC-LLM model library, for what the real one cannot show here.

The real library (SmolLM2 compiled for the CPU by `scripts/build_mlc.sh`, tested in
test_mlc_real.py) shows loading, decoding, the KV cache and the bitmask kernel for real. This
stand-in remains for two libraries this machine cannot build:

- one without the `apply_bitmask_inplace` kernel (every library MLC-LLM's compiler makes has
  one), whose masks must fall back to the host visibly;
- a CUDA build, whose KV cache comes from `create_flashinfer_paged_kv_cache` (compiled in only
  for CUDA) and must be preferred over the TIR one.

It answers what `MLC.__init__` asks, laid out as in a real library: the VM's own functions on the
VM module, the compiled kernel in the module it imports (found only when imports are queried).
It does not decode: decoding is tested on the real library.
"""

from __future__ import annotations

import json
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


def tensor(array: np.ndarray, device: str) -> np.ndarray:
    return np.array(array)


class Module:
    """tvm.runtime.Module: its own functions, and those of the modules it imports."""

    def __init__(self, functions: dict[str, Any], imports: list["Module"] = ()):
        self.functions = functions
        self.imports = list(imports)

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        imported = query_imports and any(m.implements_function(name, True) for m in self.imports)
        return name in self.functions or imported

    def get_function(self, name: str, query_imports: bool = False):
        if name in self.functions:
            return self.functions[name]
        for imported in self.imports if query_imports else ():
            if imported.implements_function(name, True):
                return imported.get_function(name, True)
        raise AttributeError(f"Module has no function '{name}'")

    def __getitem__(self, name: str):
        return self.get_function(name)


def library(model_dir: Path, *, bitmask_kernel: bool = True, flashinfer: bool = False,
            tokenizer: Any = lambda path: None) -> tuple[MLCLibrary, list[str]]:
    """The stand-in library for the model folder `model_dir`, and the names of the KV-cache
    creators called; `tokenizer` stands in for `mlc_llm.tokenizers.Tokenizer`."""
    created: list[str] = []
    creators = ["create_tir_paged_kv_cache"] + (["create_flashinfer_paged_kv_cache"] if flashinfer else [])

    def creator(name: str):
        def create(*shapes: Shape) -> str:
            assert len(shapes) == 5 and all(isinstance(s, Shape) for s in shapes)
            created.append(name)
            return name

        return create

    def not_exercised(*args):
        raise AssertionError("the stand-in does not decode: decoding is tested on the real library")

    kernels = Module({"apply_bitmask_inplace": not_exercised} if bitmask_kernel else {})
    vm = Module({"embed": not_exercised, "prefill": not_exercised, "decode": not_exercised}
                | {name: creator(name) for name in creators}, imports=[kernels])
    metadata = {"params": [{"name": "w0"}], "prefill_chunk_size": 64, "context_window_size": 512,
                "sliding_window_size": -1}

    class VirtualMachine:
        def __init__(self, executable, device: str):
            assert executable == ("executable", str(model_dir / "model.so"))
            self.module = vm

        def __getitem__(self, name):
            assert name == "_metadata"
            return lambda: json.dumps(metadata)

    tvm = SimpleNamespace(
        runtime=SimpleNamespace(device=str, load_module=lambda path: ("executable", path)),
        relax=SimpleNamespace(VirtualMachine=VirtualMachine),
        get_global_func=lambda name: not_exercised,
        contrib=SimpleNamespace(tvmjs=SimpleNamespace(
            load_tensor_cache=lambda path, device: ({"w0": np.ones(2)}, {"ParamSize": 1}))),
    )
    return MLCLibrary(tvm=tvm, shape=Shape, tensor=tensor, tokenizer=tokenizer), created


EOS = 256  # the next id after the 256 byte pieces, as Hugging Face tokenizers number an added token
VOCAB_SIZE = 320  # logits wider than the tokenizer: padding ids


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def write_model_folder(path: Path, specials: tuple[str, ...] = ("<|end|>",)) -> Path:
    """An MLC model folder: chat config and a byte-level tokenizer.json whose special tokens
    are `specials`, numbered from `EOS` (the first is the end of a turn)."""
    from runtimes._hf_vocab import _BYTE_LEVEL

    spec = {"model": {"type": "BPE", "vocab": dict(_BYTE_LEVEL), "merges": []},
            "added_tokens": [{"id": EOS + i, "content": text, "special": True, "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": False}
                             for i, text in enumerate(specials)],
            "pre_tokenizer": BYTE_LEVEL, "decoder": BYTE_LEVEL}
    (path / "tokenizer.json").write_text(json.dumps(spec))
    (path / "mlc-chat-config.json").write_text(json.dumps({
        "vocab_size": VOCAB_SIZE, "context_window_size": 1024, "sliding_window_size": -1,
        "prefill_chunk_size": 8, "eos_token_id": EOS}))
    return path

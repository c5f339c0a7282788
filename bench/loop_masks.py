"""Each engine's mask timed where a decoder asks for it: right after a real forward pass.

    python -m bench.loop_masks [--model gemma3|smollm2|NAME|PATH] [--rounds 6] [--schema NAME ...]
                               [--engine NAME ...]

`bench.masker` times masks in a loop of its own, a fresh logits row standing in for the forward
pass. Here llama.cpp runs the model: each schema's canonical document (`bench.masker`'s schemas
and documents) is fed token by token, the same tokens for every engine, and after each forward
pass one engine's mask is timed, or, at every other position, its whole decode step (mask,
apply, greedy select); then the document's token is accepted. One engine per document, engines
rotated across rounds, so each meets the caches a forward pass leaves and none always follows
the same engine. The model's own vocabulary is the engines' vocabulary. Prints each engine's
mask p50, mean and p99 and its step's p50, and ours over each peer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench._engines import ENGINE_NAMES, Engine, all_engines
from bench.masker import SCHEMAS, _canonical, _fmt, _rotated
from grammar import Vocabulary
from runtimes.testing import GreedyTokenizer

DEFAULT_SCHEMAS = ["person", "20 properties", "depth-6 nesting", "free JSON", "strings", "ticket"]


def _model_path(name: str) -> Path:
    """Gemma 3 270M or SmolLM2 by those names, else a named evaluation model or a GGUF path."""
    from bench import models, vocabularies

    if name == "gemma3":
        return vocabularies.gemma3_gguf()
    if name == "smollm2":
        return vocabularies.smollm2_gguf()
    return models.resolve(name)


def _document(llama, engine: Engine, compiled, tokens: list[int], size: int, parity: int,
              masks: list[float], steps: list[float]) -> None:
    """Feed `tokens` through the model; after each forward pass time either `engine`'s mask or
    its whole decode step (mask, apply, select; ours selects from the sparse mask without a
    bitmask), in turns by position and `parity`, so each is timed on caches a forward pass left."""
    matcher = engine.matcher(compiled)
    bitmask = np.full((1, -(-size // 32)), -1, dtype=np.int32)
    llama.reset()
    llama.eval([llama.token_bos()])
    for i, token in enumerate(tokens):
        logits = np.array(llama.scores[llama.n_tokens - 1, :size], dtype=np.float32)
        t0 = time.perf_counter()
        if (i + parity) % 2:
            engine.step(matcher, bitmask, logits)
            steps.append(time.perf_counter() - t0)
        else:
            engine.fill(matcher, bitmask)
            masks.append(time.perf_counter() - t0)
        engine.accept(matcher, token)
        if i + 1 < len(tokens):  # the last token is EOS: nothing follows it
            llama.eval([token])


def run(model: str, schema_names: list[str], rounds: int, engine_names: list[str] | None,
        threads: int = 2) -> None:
    from llama_cpp import Llama

    path = _model_path(model)
    vocab = Vocabulary.from_gguf(path)
    llama = Llama(str(path), n_ctx=1024, n_threads=threads, n_threads_batch=threads, verbose=False)
    engines = [e for e in all_engines() if engine_names is None or e.name in engine_names]
    for e in engines:
        if not e.available:
            print(f"# {e.name}: unavailable ({e.why_unavailable})")
    engines = [e for e in engines if e.available and e.name != "outlines-core"]
    print(f"## {path.name}: {vocab.size} ids, {rounds} rounds, {threads} llama.cpp threads")
    for e in engines:
        e.prepare(vocab)
    tokenizer = GreedyTokenizer(vocab)
    summary: list[tuple[str, dict[str, dict[str, float]]]] = []
    for sname in schema_names:
        schema, instance = SCHEMAS[sname]
        tokens = tokenizer.encode_bytes(_canonical(instance)) + [min(vocab.eos_ids)]
        compiled = {e.name: e.compile(schema) for e in engines}
        for e in engines:  # every state visited once, so the rounds time warm masks
            _document(llama, e, compiled[e.name], tokens, vocab.size, 0, [], [])
        masks: dict[str, list[float]] = {e.name: [] for e in engines}
        steps: dict[str, list[float]] = {e.name: [] for e in engines}
        for r in range(rounds):
            for e in _rotated(engines, r):
                _document(llama, e, compiled[e.name], tokens, vocab.size, r, masks[e.name], steps[e.name])
        print(f"\n  {sname} ({len(tokens)} tokens)")
        print(f"    {'engine':14s} {'mask p50 us':>11s} {'mean us':>8s} {'p99 us':>8s} {'step p50 us':>11s}")
        rows: dict[str, dict[str, float]] = {}
        for e in engines:
            m = masks[e.name]
            row = rows[e.name] = {"p50": statistics.median(m), "mean": statistics.fmean(m),
                                  "p99": float(np.percentile(m, 99)), "step_p50": statistics.median(steps[e.name])}
            print(f"    {e.name:14s} {_fmt(row['p50']):>11s} {_fmt(row['mean']):>8s} {_fmt(row['p99']):>8s} "
                  f"{_fmt(row['step_p50']):>11s}")
        summary.append((sname, rows))
    for peer in (e.name for e in engines if e.name != "agentkit"):
        print(f"\n## ratios agentkit / {peer} (< 1 is faster)")
        keys = ("p50", "mean", "p99", "step_p50")
        print(f"  {'schema':20s} " + " ".join(f"{k:>8s}" for k in keys))
        for sname, rows in summary:
            ours, theirs = rows["agentkit"], rows[peer]
            print(f"  {sname:20s} " + " ".join(f"{ours[k] / theirs[k]:8.2f}" for k in keys))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gemma3", metavar="gemma3|smollm2|NAME|PATH",
                        help="Gemma 3 270M (default), SmolLM2, an evaluation model of bench.models, or a GGUF file")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    parser.add_argument("--schema", action="append", choices=sorted(SCHEMAS), help=f"repeatable; default {DEFAULT_SCHEMAS}")
    parser.add_argument("--engine", action="append", choices=ENGINE_NAMES, help="repeatable; default all but outlines-core")
    args = parser.parse_args(argv)
    run(args.model, args.schema or DEFAULT_SCHEMAS, args.rounds, args.engine, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())

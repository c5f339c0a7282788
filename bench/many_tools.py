"""Compile time of a turn grammar over many tools, and the first mask, on a 152k vocabulary,
ours beside XGrammar compiling the same tool set.

    python -m bench.many_tools [--tools 1,10,50,128] [--repeats 3] [--vocab qwen25|smollm2]

The tools are BFCL's function docs (simple_python, multiple, parallel; the first of each
name), converted as `bench.bfcl` does. For k tools, each engine compiles, from nothing, a
grammar for one call `{"name": ..., "arguments": {...}}` to any of them, then fills the first
token mask: ours `grammar.tool_calls(tools, lenient=True)` (compact JSON, as XGrammar is
configured here; lenient: keywords it cannot enforce are dropped, as XGrammar ignores them),
and XGrammar 0.2.9 `compile_json_schema` of the equivalent `anyOf` over
`{"name": {"const": ...}, "arguments": schema}` objects (`strict_mode`, compact separators,
`GrammarCompiler(max_threads=2, cache_enabled=False)`). The last two columns are what an
`Agent` turn compiles (`Agent(tools).turn_grammar(envelope)`): for Qwen's hermes template, calls
in tags, a fence or bare, up to 12 blanks, text before them allowed; and for a pythonic
template, the list `[f(a=1), ...]`.
Figures are medians of `--repeats` runs, engines interleaved, in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import grammar
from bench import vocabularies
from agentkit import Agent
from bench._engines import XGrammar
from bench.bfcl import CATEGORIES, NO_CALL, _lines, build_tools, corpus_bfcl
from grammar import Vocabulary


def bfcl_tools(count: int) -> list[Any]:
    """The first `count` distinct BFCL function docs that build as tools."""
    seen: dict[str, Any] = {}
    for category in CATEGORIES:
        if category in NO_CALL:
            continue
        for question in _lines(corpus_bfcl() / f"BFCL_v4_{category}.json"):
            for function in question["function"]:
                if function["name"] in seen:
                    continue
                try:
                    [tool] = build_tools([function])
                except ValueError:
                    continue
                seen[function["name"]] = tool
                if len(seen) == count:
                    return list(seen.values())
    raise SystemExit(f"BFCL has only {len(seen)} distinct tools that build, not {count}")


def any_of_schema(tools: list[Any]) -> dict[str, Any]:
    return {"anyOf": [{
        "type": "object",
        "properties": {"name": {"const": t.name}, "arguments": t.schema},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    } for t in tools]}


def ours(g: grammar.Grammar, vocab: Vocabulary, bitmask: np.ndarray) -> float:
    started = time.perf_counter()
    matcher = grammar.Matcher(grammar.CompiledGrammar(g, vocab))
    matcher.fill_next_token_bitmask(bitmask)
    return time.perf_counter() - started


def xgrammar(engine: XGrammar, schema: dict[str, Any], bitmask: np.ndarray) -> float:
    started = time.perf_counter()
    matcher = engine.matcher(engine.compile(schema))
    engine.fill(matcher, bitmask)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", default="1,10,50,128", help="tool counts, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vocab", default="qwen25", choices=["qwen25", "smollm2"])
    args = parser.parse_args()
    vocab = vocabularies.qwen25() if args.vocab == "qwen25" else vocabularies.smollm2()
    bitmask = grammar.allocate_token_bitmask(1, vocab.size)
    peer = XGrammar()
    if peer.available:
        peer.prepare(vocab)
    else:
        print(f"xgrammar unavailable: {peer.why_unavailable}")
    grammar.Matcher(grammar.CompiledGrammar(grammar.any_json(), vocab)).fill_next_token_bitmask(bitmask)  # tables
    print(f"vocabulary {args.vocab} ({vocab.size} ids); compile + first mask, median of {args.repeats}, ms")
    print(f"{'tools':>5} {'ours calls':>11} {'xgrammar anyOf':>15} {'ours/xgrammar':>14} {'agent turn hermes':>18} "
          f"{'agent turn python':>18}")
    for count in (int(c) for c in args.tools.split(",")):
        tools = bfcl_tools(count)
        schemas = [t.tool_schema() for t in tools]
        times: dict[str, list[float]] = {"calls": [], "xgrammar": [], "hermes": [], "python": []}
        for _ in range(args.repeats):
            times["calls"].append(ours(grammar.tool_calls(schemas, lenient=True), vocab, bitmask))
            if peer.available:
                times["xgrammar"].append(xgrammar(peer, any_of_schema(tools), bitmask))
            for envelope in ("hermes", "python"):
                turn = Agent(tools).turn_grammar(envelope)  # a new agent builds its grammar anew
                times[envelope].append(ours(turn, vocab, bitmask))
        med = {k: statistics.median(v) * 1e3 if v else float("nan") for k, v in times.items()}
        print(f"{count:>5} {med['calls']:>11.1f} {med['xgrammar']:>15.1f} {med['calls'] / med['xgrammar']:>14.2f} "
              f"{med['hermes']:>18.1f} {med['python']:>18.1f}", flush=True)


if __name__ == "__main__":
    main()

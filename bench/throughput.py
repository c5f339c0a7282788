"""Throughput of concurrent constrained extractions on one local model: ours (continuous
batching in `runtimes.LlamaCpp`) beside llama.cpp's own server with `--parallel N` and its own
JSON-schema grammar, driven with the same prompts.

    python -m bench.throughput [--n 1,2,4,8,16] [--documents 16] [--model NAME|PATH]
                               [--server PATH/TO/llama-server] [--max-tokens 160]

For each N, the same `--documents` extractions (short texts about people, a schema with
bounded strings, an enum, an integer range and a list of bounded tags) run with at most N in
flight, greedy. Both sides first answer one warm-up request (our grammar's compile, the server's
start), then the timed run: documents/s, generated tokens/s, p50/p95 latency of one document
from its caller's side. N = 1 is the same documents one after another. Every output is
validated against the schema. Our N > 1 outputs are compared token for token with our N = 1
outputs: batches change floating-point summation order, which can flip a near-tie.

The server is started once per N with `-np N -t 2` and the same KV cache layout as ours: by
default one pool of twice `n_ctx` cells (`--kv-unified`), with `--own-cache` `n_ctx` cells per
sequence (`-c N*n_ctx --no-kv-unified`); it is stopped after. Without `--server`, only our side
runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

import httpx
import jsonschema

import grammar
import runtimes
from bench import models
from bench._people import SCHEMA, TEXTS, messages
from bench._servers import Server, free_port
from bench._waves import in_flight

@dataclass
class Run:
    wall_s: float
    latencies: list[float]
    tokens: int
    outputs: list[str]
    token_ids: list[list[int]] | None = None

    def row(self, label: str, n: int) -> str:
        docs = len(self.latencies)
        return (f"{label:<22} N={n:<3} {docs / self.wall_s:7.2f} docs/s {self.tokens / self.wall_s:8.1f} tok/s "
                f"p50 {statistics.median(self.latencies):6.2f} s  p95 {percentile(self.latencies, 95):6.2f} s  "
                f"valid {valid(self.outputs)}/{docs}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def valid(outputs: list[str]) -> int:
    count = 0
    for text in outputs:
        try:
            jsonschema.validate(json.loads(text), SCHEMA)
            count += 1
        except (ValueError, jsonschema.ValidationError):
            pass
    return count


async def ours(rt: runtimes.LlamaCpp, texts: list[str], n: int, max_tokens: int) -> Run:
    g = grammar.from_json_schema(SCHEMA)
    await rt.generate(messages("Ann Lee, 30, a pilot in Oslo."), grammar=g, max_tokens=max_tokens)  # warm-up
    wall, done = await in_flight(lambda text: rt.generate(messages(text), grammar=g, max_tokens=max_tokens), texts, n)
    return Run(wall, [d for d, _ in done], sum(g.usage.completion_tokens for _, g in done),
               [g.text for _, g in done], [g.token_ids for _, g in done])


def llama_cpp_server(binary: str, model: Path, n: int, n_ctx: int, shared: bool) -> Server:
    """llama.cpp's own server with N parallel slots."""
    port = free_port()
    command = [binary, "-m", str(model), "--port", str(port), "-t", "2", "-tb", "2", "-np", str(n),
               "-c", str(n_ctx * (2 if shared else n)), "--kv-unified" if shared else "--no-kv-unified",
               "--no-webui"]
    return Server("llama_server_bench", command, port, ready_path="/health")


async def peer(server: Server, texts: list[str], n: int, max_tokens: int) -> Run:
    response_format = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA, "strict": True}}
    async with httpx.AsyncClient(base_url=server.url, timeout=600) as client:

        async def ask(text: str):
            reply = await client.post("/v1/chat/completions", json={
                "messages": messages(text), "max_tokens": max_tokens, "temperature": 0.0,
                "response_format": response_format, "cache_prompt": True,
            })
            reply.raise_for_status()
            return reply.json()

        await ask("Ann Lee, 30, a pilot in Oslo.")  # warm-up
        wall, done = await in_flight(ask, texts, n)
    return Run(wall, [d for d, _ in done], sum(a["usage"]["completion_tokens"] for _, a in done),
               [a["choices"][0]["message"]["content"] for _, a in done])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="1,2,4,8,16", help="concurrency levels, comma-separated")
    parser.add_argument("--documents", type=int, default=16, help="extractions per level (up to 16 texts, reused)")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--server", help="a llama-server binary to run as the peer")
    parser.add_argument("--own-cache", action="store_true",
                        help="n_ctx KV cells per sequence (both sides) instead of one shared pool")
    models.add_model_option(parser)
    args = parser.parse_args()
    levels = [int(n) for n in args.n.split(",")]
    texts = [TEXTS[i % len(TEXTS)] for i in range(args.documents)]
    path = models.resolve(args.model) if args.model else runtimes.default_model_path()
    rt = runtimes.LlamaCpp(path, n_threads=2, max_batch=max(levels), shared_cache=not args.own_cache)
    cache = f"{rt.context_length} cells each" if args.own_cache else f"one pool of {rt.cache_cells} cells"
    print(f"model {path.name}; {args.documents} extractions per level, max_tokens {args.max_tokens}; "
          f"both sides: up to N sequences, KV cache {cache}")
    results: dict[int, Run] = {}
    for n in levels:
        results[n] = run = asyncio.run(ours(rt, texts, n, args.max_tokens))
        line = run.row("agentkit LlamaCpp", n)
        if n != levels[0] and results[levels[0]].token_ids is not None:
            same = sum(a == b for a, b in zip(run.token_ids, results[levels[0]].token_ids, strict=True))
            line += f"  same tokens as N={levels[0]}: {same}/{len(texts)}"
        print(line, flush=True)
        if args.server:
            with llama_cpp_server(args.server, path, n, rt.context_length, not args.own_cache) as server:
                theirs = asyncio.run(peer(server, texts, n, args.max_tokens))
            print(theirs.row("llama-server", n) + f"  ours/theirs docs/s {theirs.wall_s / run.wall_s:5.2f}",
                  flush=True)
    base = results[levels[0]]
    for n in levels[1:]:
        print(f"N={n}: {base.wall_s / results[n].wall_s:.2f}x the documents/s of N={levels[0]}")


if __name__ == "__main__":
    main()

"""agentkit past one machine: concurrent constrained extractions against a real vLLM server, as a
user makes them (`aextract(Person, text)` over `OpenAICompatible(dialect="vllm")`), beside the very
same requests sent raw with httpx, beside the in-process llama.cpp runtime on the same model, and
through two vLLM replicas behind vllm-router.

    bash scripts/setup_vllm.sh --router   # once per machine: vLLM's CPU build and vllm-router
    python -m bench.serving [--n 1,4,16,64] [--rounds 3] [--max-tokens 160]
                            [--no-local] [--no-replicas]

For each N, max(N, 16) extractions of `bench._people`'s workload (bounded strings, an enum, an
integer range, a bounded list) run with at most N in flight, greedy, every one validated.

- **agentkit** is the caller's view: building the request (the grammar is compiled once per
  schema and cached, so this is the warm regime), the HTTP exchange, the check of the answer
  against the grammar and pydantic's validation into a `Person`.
- **raw httpx** replays the request bodies agentkit sent, byte for byte (recorded on a warm-up
  pass), over a pooled `httpx.AsyncClient`, and validates the content with
  `Person.model_validate_json`, as a caller of the raw API does to get the same typed value. The
  ratio of the two is our client's overhead; the sides alternate order round by round, and the median round
  is reported.
- **in-process llama.cpp** is `runtimes.LlamaCpp` on the same SmolLM2-135M GGUF (continuous
  batching, N slots), run after the server has stopped, so both have the machine's cores.
- **replicas**: two vLLM servers, each bound to its own core, behind vllm-router
  (round robin); agentkit is pointed at the router, beside one server holding both cores.

Every server runs on 127.0.0.1 with `--enforce-eager` (see `bench._servers`).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

import runtimes
from agentkit import aextract
from bench import _servers as servers
from bench._people import TEXTS, Person
from bench._waves import in_flight
from runtimes import OpenAICompatible


@dataclass
class Wave:
    """One side's run of a level's documents: how long it took and what came back."""

    wall_s: float
    latencies: list[float]
    valid: int

    @property
    def docs_per_s(self) -> float:
        return len(self.latencies) / self.wall_s


class Recording(OpenAICompatible):
    """agentkit's HTTP runtime, keeping the last request body it built for each text, so the raw
    side sends exactly what agentkit sends."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.bodies: dict[str, tuple[str, dict[str, Any]]] = {}

    def _body(self, request: Any, *, stream: bool) -> tuple[str, dict[str, Any]]:
        path, body = super()._body(request, stream=stream)
        self.bodies[request.messages[-1]["content"]] = (path, body)
        return path, body


async def wave(one: Callable[[str], Awaitable[bool]], texts: list[str], n: int) -> Wave:
    wall, done = await in_flight(one, texts, n)
    return Wave(wall, [d for d, _ in done], sum(ok for _, ok in done))


def through_agentkit(rt: runtimes.Runtime, max_tokens: int) -> Callable[[str], Awaitable[bool]]:
    async def one(text: str) -> bool:
        return isinstance(await aextract(Person, text, runtime=rt, max_tokens=max_tokens), Person)

    return one


def raw(client: httpx.AsyncClient, bodies: dict[str, tuple[str, dict[str, Any]]]) -> Callable[[str], Awaitable[bool]]:
    async def one(text: str) -> bool:
        path, body = bodies[text]
        reply = await client.post(path, json=body)
        reply.raise_for_status()
        content = reply.json()["choices"][0]["message"]["content"]
        try:
            Person.model_validate_json(content)  # the typed value a caller of the raw API wants too
        except ValueError:
            return False
        return True

    return one


def documents(n: int, least: int) -> list[str]:
    return [TEXTS[i % len(TEXTS)] for i in range(max(n, least))]


def median_round(runs: list[Wave]) -> Wave:
    return sorted(runs, key=lambda w: w.wall_s)[len(runs) // 2]


def line(label: str, n: int, runs: list[Wave]) -> str:
    mid = median_round(runs)
    spread = f" (rounds {min(w.wall_s for w in runs):.2f}-{max(w.wall_s for w in runs):.2f} s)" if len(runs) > 1 else ""
    return (f"{label:<26} N={n:<3} {mid.docs_per_s:6.2f} docs/s  wall {mid.wall_s:6.2f} s{spread}  "
            f"p50 {statistics.median(mid.latencies):5.2f} s  valid {mid.valid}/{len(mid.latencies)}")


async def against_server(url: str, levels: list[int], rounds: int, max_tokens: int, least: int,
                         raw_side: bool) -> dict[int, list[Wave]]:
    """agentkit (and, with `raw_side`, raw httpx) against one server; agentkit's waves per N."""
    ours: dict[int, list[Wave]] = {}
    async with Recording(url, model="smollm2", dialect="vllm", timeout=600, max_retries=0) as rt:
        agentkit_one = through_agentkit(rt, max_tokens)
        for text in dict.fromkeys(documents(max(levels), least)):
            await agentkit_one(text)  # warm-up: the grammar's compile, the server's first batch, the bodies
        for n in levels:
            texts = documents(n, least)
            ours[n] = []
            theirs: list[Wave] = []
            limits = httpx.Limits(max_connections=rt.max_connections, max_keepalive_connections=rt.max_connections)
            async with httpx.AsyncClient(base_url=rt.base_url, timeout=600, limits=limits) as client:
                raw_one = raw(client, rt.bodies)
                for r in range(rounds):
                    sides = [(ours[n], agentkit_one)] + ([(theirs, raw_one)] if raw_side else [])
                    for runs, one in sides if r % 2 == 0 else sides[::-1]:
                        runs.append(await wave(one, texts, n))
            print(line("agentkit -> vLLM", n, ours[n]), flush=True)
            if raw_side:
                print(line("raw httpx -> vLLM", n, theirs), flush=True)
                paired = sorted(a.wall_s / b.wall_s for a, b in zip(ours[n], theirs, strict=True))
                print(f"{'':<26} N={n:<3} agentkit/raw wall: median round {statistics.median(paired):.3f} "
                      f"(rounds {paired[0]:.3f}-{paired[-1]:.3f})", flush=True)
    return ours


async def in_process(levels: list[int], max_tokens: int, least: int) -> dict[int, Wave]:
    rt = runtimes.LlamaCpp(runtimes.default_model_path(), n_threads=2, max_batch=max(levels))
    one = through_agentkit(rt, max_tokens)
    await one(TEXTS[0])  # warm-up: the grammar's compile
    found = {}
    for n in levels:
        found[n] = await wave(one, documents(n, least), n)
        print(line("agentkit LlamaCpp (local)", n, [found[n]]), flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", default="1,4,16,64", help="concurrency levels, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per side and level")
    parser.add_argument("--documents", type=int, default=16, help="least extractions per level")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--no-local", action="store_true", help="skip the in-process llama.cpp runtime")
    parser.add_argument("--no-replicas", action="store_true", help="skip the two replicas behind vllm-router")
    args = parser.parse_args()
    levels = [int(n) for n in args.n.split(",")]
    installation = servers.vllm_installation()
    if installation is None:
        raise SystemExit("vLLM is not installed here: bash scripts/setup_vllm.sh --router")
    print(f"SmolLM2-135M-Instruct; max(N, {args.documents}) extractions per level, max_tokens {args.max_tokens}, "
          f"greedy; {args.rounds} rounds per side", flush=True)

    with servers.vllm_server(installation, cpus="0-1") as one_server:
        single = asyncio.run(against_server(one_server.url, levels, args.rounds, args.max_tokens, args.documents,
                                            raw_side=True))
    if not args.no_local:
        local = asyncio.run(in_process(levels, args.max_tokens, args.documents))
        for n in levels:
            mid = median_round(single[n])
            print(f"N={n}: vLLM/local docs/s {mid.docs_per_s / local[n].docs_per_s:.2f}")
    if not args.no_replicas:
        if "router" not in installation:
            raise SystemExit("vllm-router is not installed here: bash scripts/setup_vllm.sh --router")
        with servers.vllm_server(installation, cpus="0") as a, servers.vllm_server(installation, cpus="1") as b, \
                servers.vllm_router(installation["router"], [a.url, b.url]) as router:
            pair = asyncio.run(against_server(router.url, levels, 1, args.max_tokens, args.documents,
                                              raw_side=False))
        for n in levels:
            mid = median_round(single[n])
            print(f"N={n}: two replicas behind vllm-router / one server docs/s "
                  f"{pair[n][0].docs_per_s / mid.docs_per_s:.2f}")


if __name__ == "__main__":
    main()

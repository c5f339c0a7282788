"""Can a model's own first step tell a request that needs a tool from one no tool fits? The
measure behind the decision to call (`Agent`'s `tool_choice="auto"` leaves it to the model).

    python -m bench.call_decision                                  # the default model, tune half
    python -m bench.call_decision --model qwen2.5-coder-0.5b --split all

Each request of `bench.values_world` goes to `Agent(TOOLS, runtime=...)` as a user sends it; its
first model request (the messages and tools the model is shown) is caught before it is
answered and asked twice, with token scores: held to the turn's tool calls (the first token
is the model's likeliest way to start a call) and free (the first token is what it writes
first). The margin is log P(the call's first token) - log P(the free first token): 0 where the
model starts a call unasked, below 0 by how much it prefers something else. A threshold calls
where the margin is at least it. Per request the report gives both tokens and the margin; per
threshold, how many requests of each kind would call: one-step and two-step requests should,
no-tool requests should not. A threshold measured on the tune half is judged on the measured one.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grammar
from agentkit import Agent
from bench import models
from bench.agent_values import select
from bench.values_world import KINDS, TOOLS, Request
from runtimes import Generation, Runtime, TokenScore
from runtimes._protocol import Request as ModelRequest
from runtimes._protocol import TextStream

PROBE_TOKENS = 48
"""Each probe's `max_tokens`: room for the shortest call, so that the budget steering, which
overrides the model near a budget's end, leaves the first token the model's own."""


@dataclass(frozen=True)
class FirstStep:
    """One request's first step: the first token held to calls and free, with their scores."""

    request: str
    kind: str
    call: TokenScore
    free: TokenScore

    @property
    def margin(self) -> float:
        return self.call.logprob - self.free.logprob


class _Probed(Exception):
    """Raised by the probe once a run's first request is asked: the run goes no further."""


class FirstRequest(Runtime):
    """`inner`, whose first request of a run is probed (`FirstRequest.seen`) and the run
    stopped, so the agent builds the request exactly as it would for the model; `calls` is
    the agent's turn held to calls."""

    def __init__(self, inner: Runtime):
        self.inner = inner
        self.calls: grammar.Grammar | None = None
        self.name = inner.name
        self.tool_call_envelope = inner.tool_call_envelope
        self.json_separators = inner.json_separators
        self.steers_budget = getattr(inner, "steers_budget", True)
        self.seen: tuple[TokenScore, TokenScore] | None = None

    async def _generate(self, request: ModelRequest) -> Generation:
        held = await self.inner.generate(request.messages, grammar=self.calls, max_tokens=PROBE_TOKENS,
                                         tools=request.tools, scores=True)
        free = await self.inner.generate(request.messages, max_tokens=PROBE_TOKENS, tools=request.tools, scores=True)
        if not held.token_scores or not free.token_scores:
            raise RuntimeError(f"runtime {self.inner.name!r} gave no token scores: it cannot be probed")
        self.seen = (held.token_scores[0], free.token_scores[0])
        raise _Probed()

    def _stream(self, request: ModelRequest) -> TextStream:
        raise NotImplementedError("the probe answers whole requests only")


async def first_steps(runtime: Runtime, requests: Sequence[Request]) -> list[FirstStep]:
    probe = FirstRequest(runtime)
    agent: Agent[Any] = Agent(list(TOOLS), runtime=probe)
    probe.calls = agent.turn_grammar(runtime.tool_call_envelope, "calls")
    found = []
    for request in requests:
        probe.seen = None
        try:
            await agent.run(request.text)
        except Exception:  # the probe stops every run (wrapped as the agent wraps a runtime's errors)
            pass
        if probe.seen is None:
            raise RuntimeError(f"request {request.id!r}: the agent sent the model no request")
        found.append(FirstStep(request.id, request.kind, *probe.seen))
    return found


@dataclass(frozen=True)
class Threshold:
    """What calling where the margin is at least `at` would do: requests that would call, by kind."""

    at: float
    calls: dict[str, tuple[int, int]]


def sweep(steps: Sequence[FirstStep]) -> list[Threshold]:
    """Every threshold that changes a decision (each request's margin, and above the highest)."""
    points = sorted({s.margin for s in steps}) + [math.inf]
    out = []
    for at in points:
        calls = {}
        for kind in KINDS:
            mine = [s for s in steps if s.kind == kind]
            calls[kind] = (sum(s.margin >= at for s in mine), len(mine))
        out.append(Threshold(at, calls))
    return out


def report(steps: Sequence[FirstStep]) -> str:
    lines = ["| request | kind | call's first token | free first token | margin |", "|---|---|---|---|---|"]
    for s in steps:
        lines.append(f"| {s.request} | {s.kind} | {s.call.bytes!r} {s.call.logprob:.2f} | "
                     f"{s.free.bytes!r} {s.free.logprob:.2f} | {s.margin:.2f} |")
    lines += ["", "| call where margin >= | " + " | ".join(f"{k} calling" for k in KINDS) + " |",
              "|---" * (len(KINDS) + 1) + "|"]
    for t in sweep(steps):
        at = "never" if t.at == math.inf else f"{t.at:.2f}"
        lines.append(f"| {at} | " + " | ".join(f"{k}/{n}" for k, n in t.calls.values()) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.call_decision", description=__doc__.split("\n\n")[0])
    models.add_model_option(parser)
    parser.add_argument("--split", choices=("tune", "measure", "all"), default="tune")
    args = parser.parse_args(argv)
    runtime = models.runtime(args.model)
    steps = asyncio.run(first_steps(runtime, select(args.split, None)))
    print(f"model: {runtime.name}  split: {args.split}")
    print(report(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())

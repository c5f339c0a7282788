"""Tool routing: the decision to call, for a model that never starts a call by itself.

A model whose chat template takes no tools was not trained to call them: listed in a system
message, they are text it reads and answers around (SmolLM2-135M writes an invented value for
every request of `bench.agent_values`, and its first-step likelihood of a call tells a request
that needs a tool from one no tool fits no better than chance). It still reads a request: how
much likelier it finds the request's text after a line saying what a tool does than after a
line saying nothing of tools is the pointwise mutual information of request and tool. Where the
best of those, over the tools, stands out enough (`route`, `ROUTE_THRESHOLD`), the run's first
turn calls that tool (the model writes the arguments, held to the conversation) and the next
answers from its result, asked as a question with context (`results.routed_answer_messages`), or,
where that call failed, the next plausible tool is called once (`fallback`); otherwise the
first turn answers without a call. A model whose template takes tools calls by itself, for
requests no tool fits too: for it routing declines, where no tool's evidence reaches
`DECLINE_THRESHOLD` (`declines`), and otherwise narrows the first turn to the tools whose
information stands near the best one's (`plausible`); the model chooses among those.

Each score is one read of the request's tokens (`Runtime.score`), a few of the tools' reads
batched (`READS_AT_ONCE`).
"""

from __future__ import annotations

import asyncio
import logging
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from runtimes import ContinuationScore, Runtime

from .._tools.tool import Tool

logger = logging.getLogger("agentkit")

ToolRouting = Literal["auto"] | bool
"""`Agent(tool_routing=...)`: "auto" routes where the runtime can score a continuation and its
model's chat template takes no tools; True wherever the runtime can score; False never."""

ROUTE_THRESHOLD = 6.4
"""The least evidence (nats) for the best tool for the run to call it. Set on the tune half of
`bench.agent_values` with SmolLM2-135M: its requests that need a tool gave 7.4 to 23.4, those
no tool fits 2.9 to 5.4."""

DECLINE_THRESHOLD = -1.0
"""Below this evidence (nats) a model that calls by itself (its chat template takes tools)
answers the run's first turn without a call; at or above it, the model decides. Set on the
tune half of `bench.agent_values` with Qwen2.5-Coder-0.5B, below each of its requests that
need a tool (-0.5 to 34.5); its requests no tool fits gave -11.4 to 7.5, three of five
below."""

PLAUSIBLE_MARGIN = 5.0
"""How far (nats) below the best tool's information a tool's may stand for a model that calls by
itself to be offered it in the run's first turn. Set on the tune half of `bench.agent_values`
with Qwen2.5-Coder-0.5B: the tool each request needs first stood at most 3.6 below the best
(`notebooks_12`: `get_price` under `exchange_rate`), and reads move by about half a nat with
how they are batched; in four of the five requests where the model's first call named a wrong
tool, that tool stood 5.2 to over 19 below (`lookup_order`'s request answered with
`get_population`)."""

READS_AT_ONCE = 3
"""The reads of one routing decision in flight at once. All at once, they took every slot of
the runtime's batch, the one holding the conversation's cached prompt too, and the run's
first turn read its 1,300 tokens again (Qwen2.5-Coder-0.5B on `bench.agent_values`: 9.8 s a
request against 6.7 three at a time, and SmolLM2 6.9 against 3.2)."""

PLAIN_LINE = "A message to a chat assistant:\n"
"""What the request follows when no tool is named: its likelihood without tools."""


def tool_line(tool: Tool) -> str:
    """What the request follows for `tool`: the assistant, and what the tool does (its
    description's first line, or its name's words where it has none)."""
    lines = (tool.description or "").strip().splitlines()
    does = lines[0].strip() if lines else tool.name.replace("_", " ")
    does = does[:1].lower() + does[1:]
    return f"A message to a chat assistant that can {does}\n"


@dataclass(frozen=True)
class Route:
    """What routing decided for a request: `tool`, the tool the first turn calls (None: the
    first turn answers without a call); `information`, each tool's pointwise mutual
    information with the request, in nats; `evidence`, the best tool's (see `route`)."""

    tool: str | None
    information: dict[str, float]
    evidence: float


def _scorable(runtime: Runtime, tool_choice: str, tools: Mapping[str, Tool]) -> bool:
    """Tools to choose from, no choice forced by the caller, and a runtime that can score a
    continuation: what routing needs, to route or to decline."""
    return tool_choice == "auto" and bool(tools) and runtime.scores_continuations


def routes(mode: ToolRouting, runtime: Runtime, tool_choice: str, tools: Mapping[str, Tool]) -> bool:
    """Whether a run decides its first call by routing (`_scorable`, and under "auto" a model
    whose template takes no tools)."""
    if mode is False or not _scorable(runtime, tool_choice, tools):
        return False
    return mode is True or runtime.template_takes_tools is False


def declines(mode: ToolRouting, runtime: Runtime, tool_choice: str, tools: Mapping[str, Tool]) -> bool:
    """Whether routing may only decline a run's first call (`DECLINE_THRESHOLD`): under "auto",
    for a model whose template takes tools (it calls by itself, and calls a tool for a request
    no tool fits), where `_scorable`."""
    return mode == "auto" and runtime.template_takes_tools is True and _scorable(runtime, tool_choice, tools)


async def route(runtime: Runtime, request: str, tools: Mapping[str, Tool],
                threshold: float = ROUTE_THRESHOLD) -> Route:
    """The tool `request` is for, if any reaches `threshold`.

    The evidence for the best tool is its information with the request twice over: against
    the plain line, and against the median tool's line (what any line naming a capability
    lends the request). A request no tool fits can still follow a capability line better than
    the plain one ("Translate ..." after "can convert a temperature"), but then so does it
    after most tools' lines; one a tool fits stands out from them."""
    at_once = asyncio.Semaphore(READS_AT_ONCE)

    async def read(line: str) -> ContinuationScore:
        async with at_once:
            return await runtime.score(line, request)

    plain, *scored = await asyncio.gather(read(PLAIN_LINE), *(read(tool_line(t)) for t in tools.values()))
    information = {name: s.logprob - plain.logprob for name, s in zip(tools, scored)}
    best = max(information, key=information.__getitem__)
    evidence = 2 * information[best] - statistics.median(information.values())
    chosen = best if evidence >= threshold else None
    logger.info("routing: %s (%s, %.2f nats of evidence, threshold %.2f)", chosen or "no call", best, evidence, threshold)
    return Route(chosen, information, evidence)


def plausible(found: Route, margin: float = PLAUSIBLE_MARGIN) -> frozenset[str]:
    """The tools whose information with the request stands within `margin` of the best's."""
    best = max(found.information.values())
    return frozenset(name for name, value in found.information.items() if best - value <= margin)


def fallback(found: Route, tried: set[str]) -> Route | None:
    """The route to take where the routed call failed: the most informative tool not yet
    `tried` among the plausible ones (`plausible`), None where none is left. A small model
    routed to a wrong tool writes an argument that tool refuses (`get_price(product="JPY")`
    for an exchange rate), and the tool the request needs most often reads second best."""
    left = [name for name in plausible(found) if name not in tried]
    if not left:
        return None
    best = max(left, key=found.information.__getitem__)
    return Route(best, found.information, found.evidence)

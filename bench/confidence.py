"""Does per-field confidence mean something? Each argument value's confidence against whether
that value is right, on BFCL items, from one turn of the default `Agent` with
`model_settings={"confidence": True}`.

    python -m bench.confidence --model qwen2.5-coder-0.5b
    python -m bench.confidence --model qwen2.5-coder-0.5b --categories simple_python --limit 50

For every call the turn made and every top-level argument in it, the argument's confidence is
read from `PendingCall.confidence` (every call waits for approval, so none runs): its
probability is the product over the argument's leaves (one leaf for a scalar, several for a
list or an object). The argument is right where the call's function is one the item expects
and the value equals one of that parameter's accepted answers under BFCL's comparison
(`bench.bfcl.value_matches`). Reported per score (the value's probability, its least likely
token, 1 − the mass the grammar removed): the AUROC of right against wrong values (0.5 is
chance, 1.0 is every right value above every wrong one), and the accuracy of the values
above and below a threshold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentkit import FieldConfidence, RunError, UnexpectedModelOutput
from bench import models
from bench._progress import progress
from bench.bfcl import Item, corpus_bfcl, corpus_missing, load, turn_agent, value_matches

CATEGORIES = ("simple_python", "multiple")
THRESHOLDS = (0.5, 0.9)


@dataclass(frozen=True)
class Argument:
    """One argument value a call wrote, how sure the model was of it, and whether it is right."""

    item: str
    name: str
    value: Any
    probability: float
    min_token_probability: float
    kept_mass: float  # 1 − the mass the grammar removed, over the value's tokens
    right: bool


SCORES = {
    "probability": lambda a: a.probability,
    "least token": lambda a: a.min_token_probability,
    "1 − masked mass": lambda a: a.kept_mass,
}


def argument_confidence(name: str, fields: dict[str, FieldConfidence]) -> tuple[float, float, float] | None:
    """An argument's (probability, least token, kept mass) from its leaves' confidences."""
    mine = [c for pointer, c in fields.items() if pointer == f"/{name}" or pointer.startswith(f"/{name}/")]
    if not mine:
        return None
    masked = [c.masked_mass for c in mine]
    kept = math.prod(1.0 - m for m in masked) if all(m is not None for m in masked) else math.nan  # type: ignore[operator]
    return math.prod(c.probability for c in mine), min(c.min_token_probability for c in mine), kept


def judged(item: Item, call_name: str, arguments: dict[str, Any], fields: dict[str, FieldConfidence]) -> list[Argument]:
    expected = [params for truth in item.ground_truth for name, params in truth.items() if name == call_name]
    schema = item.tools[call_name].schema if call_name in item.tools else {}
    props = schema.get("properties", {})
    out = []
    for name, value in arguments.items():
        scored = argument_confidence(name, fields)
        if scored is None:
            continue
        right = any(name in params and value_matches(value, params[name], props.get(name, {}), top=True)
                    for params in expected)
        out.append(Argument(item.id, name, value, *scored, right))
    return out


async def score_item(item: Item, runtime: Any, max_tokens: int) -> list[Argument]:
    """One default agent turn on the item (`bench.bfcl.turn_agent`, the agent `python -m
    bench.bfcl` runs), every call held for approval; its arguments judged."""
    agent = turn_agent(item, runtime, max_tokens, model_settings={"confidence": True})
    try:
        result = await agent.run(item.messages)
    except (RunError, UnexpectedModelOutput):
        return []
    out = []
    for pending in result.pending:
        if pending.confidence is not None and isinstance(pending.call.arguments, dict):
            out.extend(judged(item, pending.tool, pending.call.arguments, pending.confidence))
    return out


def auroc(scores: np.ndarray, right: np.ndarray) -> float:
    """The chance a right value scores above a wrong one (ties count half): Mann–Whitney U."""
    positives, negatives = int(right.sum()), int((~right).sum())
    if not positives or not negatives:
        return math.nan
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):  # average ranks over ties
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[right].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def report(arguments: list[Argument]) -> str:
    right = np.array([a.right for a in arguments], dtype=bool)
    lines = [f"{len(arguments)} argument values, {int(right.sum())} right ({right.mean():.1%})" if arguments
             else "no argument values", "",
             "| score | AUROC | " + " | ".join(f"right above {t} | right below {t}" for t in THRESHOLDS) + " |",
             "|---|---|" + "---|---|" * len(THRESHOLDS)]
    for label, score in SCORES.items():
        values = np.array([score(a) for a in arguments], dtype=float)
        cells = [f"{auroc(values, right):.3f}"]
        for t in THRESHOLDS:
            for chosen in (values >= t, values < t):
                n = int(chosen.sum())
                cells.append(f"{right[chosen].mean():.1%} of {n}" if n else "none")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def evaluate(categories: list[str], limit: int | None, max_tokens: int, runtime: Any,
                   concurrency: int) -> dict[str, list[Argument]]:
    gate = asyncio.Semaphore(concurrency)

    async def guarded(item: Item) -> list[Argument]:
        async with gate:
            return await score_item(item, runtime, max_tokens)

    found: dict[str, list[Argument]] = {}
    for category in categories:
        items, _ = load(category, corpus_bfcl(), limit)
        start = time.perf_counter()
        running = [asyncio.ensure_future(guarded(item)) for item in items]
        found[category] = [a for task in progress(running, category) for a in await task]
        print(f"{category}: {len(items)} items, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.confidence", description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", nargs="+", default=list(CATEGORIES), choices=CATEGORIES)
    parser.add_argument("--limit", type=int, default=None, help="items per category (default: all)")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--json", help="write every argument value and its verdict here")
    models.add_model_option(parser)
    args = parser.parse_args(argv)
    if corpus_missing():
        return 2
    runtime = models.runtime(args.model)
    print(f"model: {runtime.name}  agent: defaults, model_settings={{'confidence': True}}  max_tokens: {args.max_tokens}")
    found = asyncio.run(evaluate(args.categories, args.limit, args.max_tokens, runtime, args.concurrency))
    everything = [a for category in args.categories for a in found[category]]
    for category in args.categories:
        print(f"\n{category}\n{report(found[category])}")
    if len(args.categories) > 1:
        print(f"\nall\n{report(everything)}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump([vars(a) for a in everything], out, ensure_ascii=False, default=str, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What a grammar adds per streamed token, from the user's side: the same prompt streamed through
`runtimes.default()` (or `--model`, such as the Qwen evaluation model) with and without the grammar.

    python -m bench.streaming [--rounds 3] [--max-tokens 120] [--schema NAME ...] [--model NAME|PATH]

Per schema: the first constrained request (a grammar not seen before: compile plus its cold
states) is timed apart; then free and constrained requests take turns, `rounds` of each, and the
per-token time is the median interval between streamed pieces. The ratio is constrained over free.

The two answers differ in length, and a token late in a long answer costs more than an early one
(attention reads every position before it): "same positions" compares each round's pair over
the pieces both answers have, so the ratio is the grammar's cost and not the answers' lengths.
The machine's speed drifts between requests by more than the grammar costs, so each round's
pair also gives its own ratio (same positions; the order of the two alternates by round), and
"rounds" is the median and range of those.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import grammar
from bench import models
from bench.masker import SCHEMAS as MASKER_SCHEMAS

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}},
        "bio": {"type": "string", "maxLength": 200},
    },
    "required": ["name", "tags", "bio"],
    "additionalProperties": False,
}

SCHEMAS = {
    "bounded person": (PERSON, "Describe Ada Lovelace as JSON with her name, a few tags and a short bio."),
    "strings": (MASKER_SCHEMAS["strings"][0], "Describe a quarterly sales report as JSON."),
    "contact": (MASKER_SCHEMAS["contact"][0], "Give the contact card of Ada Lovelace as JSON."),
    "invoice": (MASKER_SCHEMAS["invoice"][0], "Write an invoice for two engine parts as JSON."),
    "ticket": (MASKER_SCHEMAS["ticket"][0], "File a bug ticket about a failing nightly export as JSON."),
}


async def _stream(rt, prompt: str, g: grammar.Grammar | None, max_tokens: int) -> tuple[float, list[float]]:
    """Seconds to the whole answer, and the intervals between its pieces."""
    chat = [{"role": "user", "content": prompt}]
    start = last = time.perf_counter()
    intervals: list[float] = []
    async for _ in rt.stream(chat, grammar=g, max_tokens=max_tokens):
        now = time.perf_counter()
        intervals.append(now - last)
        last = now
    return last - start, intervals[1:]  # the first piece also waits for the prompt


async def run(names: list[str], rounds: int, max_tokens: int, model: str | None = None) -> None:
    rt = models.runtime(model)
    print(f"model: {rt.name}")
    await _stream(rt, "Hello.", None, 8)  # the model loaded and warm
    print(f"{'schema':16s} {'first ms':>9s} {'free ms/tok':>12s} {'grammar ms/tok':>15s} {'ratio':>6s} "
          f"{'same positions':>15s} {'rounds: median [range]':>23s}   (pieces per answer, free / constrained)")
    for name in names:
        schema, prompt = SCHEMAS[name]
        g = grammar.from_json_schema(schema)  # a fresh grammar: the first request compiles it
        first, _ = await _stream(rt, prompt, g, max_tokens)
        free: list[float] = []
        constrained: list[float] = []
        paired_free: list[float] = []
        paired_constrained: list[float] = []
        round_ratios: list[float] = []
        for k in range(rounds):
            if k % 2 == 0:  # the order alternates, so neither side always runs second
                one = (await _stream(rt, prompt, None, max_tokens))[1]
                other = (await _stream(rt, prompt, g, max_tokens))[1]
            else:
                other = (await _stream(rt, prompt, g, max_tokens))[1]
                one = (await _stream(rt, prompt, None, max_tokens))[1]
            free += one
            constrained += other
            n = min(len(one), len(other))
            paired_free += one[:n]
            paired_constrained += other[:n]
            if n:
                round_ratios.append(statistics.median(other[:n]) / statistics.median(one[:n]))
        a, b = statistics.median(constrained), statistics.median(free)
        same = statistics.median(paired_constrained) / statistics.median(paired_free)
        spread = (f"{statistics.median(round_ratios):.3f} [{min(round_ratios):.3f}-{max(round_ratios):.3f}]"
                  if round_ratios else "-")
        print(f"{name:16s} {first * 1e3:9.0f} {b * 1e3:12.2f} {a * 1e3:15.2f} {a / b:6.3f} {same:15.3f} "
              f"{spread:>23s}   ({len(free) / rounds:.0f} / {len(constrained) / rounds:.0f} pieces)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=120)
    parser.add_argument("--schema", action="append", choices=sorted(SCHEMAS), help="repeatable; default all")
    models.add_model_option(parser)
    args = parser.parse_args(argv)
    asyncio.run(run(args.schema or list(SCHEMAS), args.rounds, args.max_tokens, args.model))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Token healing on prompts cut mid-word or after a space: how often the model's first words go
on as the original text does, healed against not.

    python -m bench.healing                       # the default model, 200 cut prompts
    python -m bench.healing --model qwen2.5-coder-0.5b --prompts 300

Texts: BFCL's questions and function descriptions (`$AGENTKIT_CORPUS/bfcl`), which nobody here
wrote. Each is cut at a random character (seeded) either inside a word (letters on both sides)
or after a space before a word, and the cut text is the raw prompt. The answer (greedy, a few
tokens) goes on as the text does when it starts with the rest of the cut word (inside a word) or
with the next word (after a space); "next character" counts answers whose first character is the
original's next one. Each prompt is read three ways: `heal=False`, `heal=True`, and the default
(which heals a prompt ending in a letter, digit, `_` or a space: both kinds of cut here).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from typing import Any

from bench import models
from bench.bfcl import corpus_bfcl, corpus_missing, load

CATEGORIES = ("simple_python", "multiple", "parallel")


def texts() -> list[str]:
    """BFCL questions and function descriptions, in corpus order, each once."""
    found: dict[str, None] = {}
    for category in CATEGORIES:
        items, _ = load(category, corpus_bfcl(), None)
        for item in items:
            for message in item.messages:
                if message.get("role") == "user" and isinstance(message.get("content"), str):
                    found.setdefault(message["content"].strip())
            for function in item.functions:
                if isinstance(function.get("description"), str):
                    found.setdefault(function["description"].strip())
    return [t for t in found if len(t) >= 20]


def cut(text: str, rng: random.Random, where: str) -> tuple[str, str] | None:
    """`text` cut at a random character inside a word, or after a space before one: the prompt,
    and the rest of that word."""
    if where == "inside a word":
        places = [i for i in range(8, len(text) - 1) if text[i - 1].isalpha() and text[i].isalpha()]
    else:
        places = [i for i in range(8, len(text) - 1) if text[i - 1] == " " and text[i].isalpha()]
    if not places:
        return None
    at = rng.choice(places)
    end = at
    while end < len(text) and text[end].isalpha():
        end += 1
    return text[:at], text[at:end]


async def run(runtime: Any, cases: list[tuple[str, str]], heal: bool | None, max_tokens: int,
              concurrency: int) -> list[str]:
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> str:
        async with gate:
            return (await runtime.generate(prompt, max_tokens=max_tokens, heal=heal)).text

    return await asyncio.gather(*(one(p) for p, _ in cases))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.healing", description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=200, help="cut prompts (default 200)")
    parser.add_argument("--max-tokens", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--show", type=int, default=0, help="print this many cases")
    models.add_model_option(parser)
    args = parser.parse_args(argv)
    if corpus_missing():
        return 2
    runtime = models.runtime(args.model)
    print(f"model: {runtime.name}  prompts: {args.prompts} BFCL texts per kind of cut  max_tokens: {args.max_tokens}")
    print("\n| cut | heal | goes on as the text does | next character right | time |\n|---|---|---|---|---|")
    for where in ("inside a word", "after a space"):
        rng = random.Random(args.seed)
        pool = texts()
        rng.shuffle(pool)
        cases = [c for c in (cut(t, rng, where) for t in pool) if c is not None][: args.prompts]
        answers = {}
        for heal in (False, True, None):
            start = time.perf_counter()
            answers[heal] = asyncio.run(run(runtime, cases, heal, args.max_tokens, args.concurrency))
            seconds = time.perf_counter() - start
            word = sum(a.startswith(rest) for a, (_, rest) in zip(answers[heal], cases))
            first = sum(a[:1] == rest[:1] for a, (_, rest) in zip(answers[heal], cases))
            label = {False: "False", True: "True", None: "default"}[heal]
            print(f"| {where} | {label} | {word / len(cases):.1%} | {first / len(cases):.1%} | {seconds:.0f} s |",
                  flush=True)
        for (prompt, rest), plain, healed in list(zip(cases, answers[False], answers[True]))[: args.show]:
            print(f"  …{prompt[-30:]!r} + {rest!r}: not healed {plain!r}, healed {healed!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

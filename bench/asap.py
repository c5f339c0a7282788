"""Grammar-aligned sampling against plain masked sampling, where the truth is computable: small
finite grammars, whose exact grammar-conditioned distribution is found by teacher forcing every
token path through the real model.

    python -m bench.asap                           # the default model, 2,000 samples a method
    python -m bench.asap --samples 500 --grammars animals

For each grammar: the exact distribution P(text | the answer is in the grammar) at temperature
1 (every token path the grammar allows, the model's probability of each, paths below 1e-12 of
the allowed mass pruned; an answer ends where the grammar ends it or where the model chooses
its end-of-sequence token, as the runtime decodes); then N samples of the same request with
`sampling="masked"` (the default) and N with `sampling="asap"`, one after another, and the KL
divergence from the exact distribution of each method's first n samples (n = 100, 500, ...).
The KL of n samples from the exact distribution itself is not 0 (about (k − 1) / 2n for k
answers with mass), so it is printed beside them as the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import time
from collections import Counter
from typing import Any

import numpy as np

import grammar
from bench import models
from runtimes._batch import Feed

FRUITS = ["apple", "banana", "cherry", "grape", "lemon", "lime", "mango", "melon", "orange", "peach", "pear",
          "plum", "kiwi", "fig", "date", "papaya", "guava", "apricot", "avocado", "coconut", "lychee", "olive",
          "quince", "raisin", "tomato", "pumpkin", "durian", "jackfruit", "persimmon", "pomegranate"]
COLORS = ["red", "blue", "green", "yellow", "purple", "orange", "pink", "brown", "black", "white"]
ANIMALS = ["cat", "bee", "ant", "bat", "cow", "dog", "eel", "elk", "fox", "hen", "owl", "pig", "rat", "yak", "ape",
           "emu"]

GRAMMARS: dict[str, tuple[str, str]] = {
    # name: (question, regex of the answer)
    "fruits": ("Name a fruit. Answer with one word in lowercase.", "|".join(FRUITS)),
    # Three-letter animals, each maybe plural: a model that wants "elephant" finds "el" allowed,
    # and the answer must then end after "elk" or "elks".
    "animals": ("Name an animal. Answer with one word in lowercase.", "(" + "|".join(ANIMALS) + ")s?"),
    "colors": ("Name a color. Answer in lowercase.", "(dark |light )?(" + "|".join(COLORS) + ")"),
}
PRUNE = 1e-12
CHECKPOINTS = (100, 500, 1000, 2000, 5000)


def exact_distribution(rt: Any, messages: list[dict[str, str]], g: grammar.Grammar) -> tuple[dict[str, float], int]:
    """The grammar-conditioned distribution of answers at temperature 1, and the model passes it took."""
    prompt = rt._prompt_ids(messages, None)
    matcher = grammar.Matcher(rt.compiled(g), stop_when_complete=True)
    eos = rt.vocabulary.eos_ids
    found: dict[str, float] = {}
    passes = 0
    with rt.model_lock:
        rt.begin_slot(0, 0)
        rows = rt.read_batch([Feed(0, 0, list(prompt), 1)])[0]
        first = np.array(rows[-1], dtype=np.float64)
        path: list[int] = []

        def distribution(row: np.ndarray) -> np.ndarray:
            probs = np.exp(row - row.max())
            return probs / probs.sum()

        floor = PRUNE * float(distribution(first)[matcher.next_token_mask().allowed_ids()].sum())

        def walk(row: np.ndarray, prob: float, text: bytes) -> None:
            nonlocal passes
            probs = distribution(row)
            for token in matcher.next_token_mask().allowed_ids().tolist():
                p = prob * float(probs[token])
                if p < floor:
                    continue
                if token in eos:
                    found[text.decode()] = found.get(text.decode(), 0.0) + p
                    continue
                matcher.accept_token(token)
                path.append(token)
                spelled = text + rt.vocabulary.token_bytes(token)
                if matcher.is_terminated():
                    found[spelled.decode()] = found.get(spelled.decode(), 0.0) + p
                else:
                    rt.begin_slot(0, len(prompt) + len(path) - 1)
                    nxt = np.array(rt.read_batch([Feed(0, len(prompt) + len(path) - 1, [token], 1)])[0][-1],
                                   dtype=np.float64)
                    passes += 1
                    walk(nxt, p, spelled)
                path.pop()
                matcher.rollback(1)

        walk(first, 1.0, b"")
    rt.forget_caches()
    total = sum(found.values())
    return {text: p / total for text, p in found.items()}, passes


def kl(samples: list[str], exact: dict[str, float]) -> float:
    counts = Counter(samples)
    n = len(samples)
    return sum(c / n * math.log(c / n / exact.get(text, 1e-300)) for text, c in counts.items())


async def sample(rt: Any, messages: list[dict[str, str]], g: grammar.Grammar, n: int, sampling: str) -> list[str]:
    texts = []
    for seed in range(n):  # in turn: each ASAp sample's estimates guide the next
        generation = await rt.generate(messages, grammar=g, temperature=1.0, seed=seed, max_tokens=12, sampling=sampling)
        texts.append(generation.text)
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.asap", description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2000, help="samples per method and grammar")
    parser.add_argument("--grammars", nargs="+", default=list(GRAMMARS), choices=list(GRAMMARS))
    models.add_model_option(parser)
    args = parser.parse_args(argv)
    rt = models.runtime(args.model)
    print(f"model: {rt.name}  samples: {args.samples} per method  temperature: 1")
    points = [n for n in CHECKPOINTS if n < args.samples] + [args.samples]
    header = "| grammar | answers | method | " + " | ".join(f"KL at {n}" for n in points) + " |"
    lines = [header, "|---|---|---|" + "---|" * len(points)]
    for name in args.grammars:
        question, pattern = GRAMMARS[name]
        g = grammar.from_regex(pattern)
        messages = [{"role": "user", "content": question}]
        start = time.perf_counter()
        exact, passes = exact_distribution(rt, messages, g)
        print(f"{name}: exact over {len(exact)} answers in {passes} passes, {time.perf_counter() - start:.0f} s; "
              f"most likely: {', '.join(f'{t!r} {p:.3f}' for t, p in sorted(exact.items(), key=lambda x: -x[1])[:5])}")
        rng = random.Random(0)
        texts, weights = zip(*exact.items())
        floor = rng.choices(texts, weights, k=args.samples)
        rows = {"exact (floor)": floor}
        for sampling in ("masked", "asap"):
            start = time.perf_counter()
            rows[sampling] = asyncio.run(sample(rt, messages, g, args.samples, sampling))
            print(f"{name}: {sampling} {args.samples} samples, {time.perf_counter() - start:.0f} s")
        for method, got in rows.items():
            outside = sum(text not in exact for text in got)
            if outside:  # a pruned path's answer: its KL term is then an overestimate
                print(f"{name}: {outside} {method} samples are answers the pruned exact distribution lacks")
            cells = " | ".join(f"{kl(got[:n], exact):.4f}" for n in points)
            lines.append(f"| {name} | {len(exact)} | {method} | {cells} |")
        ratio = kl(rows["asap"], exact) / max(kl(rows["masked"], exact), 1e-12)
        lines.append(f"| {name} | | asap ÷ masked at {args.samples} | {ratio:.3f} |" + " |" * (len(points) - 1))
    print()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

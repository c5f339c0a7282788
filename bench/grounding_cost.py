"""What grounding costs: a grounded grammar is new for every text, so its cold path is every call's.

    python -m bench.grounding_cost [--vocab smollm2,qwen25] [--texts 10] [--chars 2000] [--stream --rounds 40]

Ten texts of 2,000 characters (the value benchmark's texts, `bench.value_texts`, run together
and cut at ten places) and one schema of the kind extraction grounds: two strings, a time under
a pattern, an integer, a decimal, a list of strings. Per text and vocabulary:

- cold: the grounded grammar compiled from the schema and the text, plus every mask of a first
  document (spans and numbers of that text, tokenised greedily), accepting its tokens: what an
  extraction with grounding pays before its first token; beside it the same for the plain
  grammar (which an extraction compiles once per type, not per text). Median over the texts,
  CPU seconds with the cycle collector paused, the best of `--repeat` runs per text;
- warm: the masks of a second document on the compiled grammar, per token, grounded and plain.

`--stream` also streams one prompt through `runtimes.default()` (or `--model`) held by the
plain and by the grounded grammar of one text, in turns, `--rounds` of each (`bench.streaming`'s
method: the per-token time is the median interval between streamed pieces, paired by position).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
import statistics
import sys
import time

import numpy as np

import grammar
import grammar.testing
from bench import vocabularies
from bench.value_texts import CASES

SCHEMA = {
    "type": "object",
    "properties": {
        "customer": {"type": "string", "grounded": True},
        "item": {"type": "string", "grounded": True},
        "start_time": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$", "grounded": True},
        "quantity": {"type": "integer", "grounded": True},
        "unit_price": {"type": "number", "grounded": True},
        "attendees": {"type": "array", "items": {"type": "string", "grounded": True}, "maxItems": 6},
    },
    "required": ["customer", "item", "quantity", "unit_price", "attendees"],
    "additionalProperties": False,
}
PLAIN = json.loads(json.dumps(SCHEMA).replace('"grounded": true', '"grounded": false'))


def texts(n: int, chars: int) -> list[str]:
    """`n` texts of `chars` characters, cut from the value benchmark's texts run together."""
    whole = " ".join(case.text for case in CASES)
    step = max(1, (len(whole) - chars) // max(1, n - 1))
    return [(whole + " " + whole)[i * step: i * step + chars] for i in range(n)]


# Runs of words of letters, one blank apart, that end where a word ends: spans of one clause.
_PHRASE = re.compile(r"(?<!\S)[^\W\d_]+(?: [^\W\d_]+)*(?=[\s,;!?]|[.](?![^\W_])|$)")


def document(text: str, seed: int) -> str:
    """A value of `SCHEMA` whose strings are spans of `text` and whose numbers it writes."""
    phrases = [m.group().split(" ") for m in _PHRASE.finditer(text)] or [["x"]]
    pick = lambda k, n: " ".join(phrases[(seed * 7 + k) % len(phrases)][:n])  # noqa: E731
    numbers = grammar.Grounding(text).numbers or (0,)
    integer = next((int(v) for v in numbers if v == int(v)), 0)
    value = {"customer": pick(1, 2), "item": pick(5, 3), "quantity": integer,
             "unit_price": _shortest(numbers[seed % len(numbers)]), "attendees": [pick(11, 1), pick(17, 2)]}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _shortest(value) -> int | float:
    """A number as JSON writes it shortest (`18.5`, `49`): one of its grounded spellings."""
    return int(value) if value == int(value) else float(value)


def _masks(matcher: grammar.Matcher, tokens: list[int], bitmask: np.ndarray) -> list[float]:
    """Each mask's seconds along `tokens` (accepting each)."""
    out = []
    for token in tokens:
        started = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        out.append(time.perf_counter() - started)
        if not matcher.accept_token(token):
            raise AssertionError(f"token {token} rejected")
    return out


def cold(schema: dict, text: str | None, vocab: grammar.Vocabulary, tokens: list[int], bitmask: np.ndarray) -> float:
    """CPU seconds of a fresh compile plus every mask of the first document."""
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        g = grammar.from_json_schema(schema, grounding=grammar.Grounding(text) if text is not None else None)
        matcher = grammar.Matcher(grammar.CompiledGrammar(g, vocab))
        _masks(matcher, tokens, bitmask)
        return time.process_time() - started
    finally:
        gc.enable()


def measure(vocab_name: str, n: int, chars: int, repeat: int) -> dict:
    from runtimes.testing import GreedyTokenizer

    vocab = getattr(vocabularies, vocab_name)()
    grammar.testing.token_tables(vocab)
    tokenizer = GreedyTokenizer(vocab)
    bitmask = np.full((1, -(-vocab.size // 32)), -1, dtype=np.int32)
    rows = []
    for i, text in enumerate(texts(n, chars)):
        first = tokenizer.encode_bytes(document(text, i).encode())
        second = tokenizer.encode_bytes(document(text, i + 1).encode())
        held = min(cold(SCHEMA, text, vocab, first, bitmask) for _ in range(repeat))
        plain = min(cold(PLAIN, None, vocab, first, bitmask) for _ in range(repeat))
        warm = {}
        for name, schema, source in (("grounded", SCHEMA, text), ("plain", PLAIN, None)):
            g = grammar.from_json_schema(schema, grounding=grammar.Grounding(source) if source else None)
            compiled = grammar.CompiledGrammar(g, vocab)
            _masks(grammar.Matcher(compiled), first, bitmask)
            warm[name] = statistics.mean(_masks(grammar.Matcher(compiled), second, bitmask))
        rows.append((held, plain, warm["grounded"], warm["plain"], len(first)))
    return {
        "vocab": vocab_name, "texts": n, "chars": chars,
        "cold_grounded_ms": statistics.median(r[0] for r in rows) * 1e3,
        "cold_grounded_max_ms": max(r[0] for r in rows) * 1e3,
        "cold_plain_ms": statistics.median(r[1] for r in rows) * 1e3,
        "warm_grounded_us_per_token": statistics.median(r[2] for r in rows) * 1e6,
        "warm_plain_us_per_token": statistics.median(r[3] for r in rows) * 1e6,
        "tokens_per_document": statistics.median(r[4] for r in rows),
    }


async def stream(rounds: int, max_tokens: int, chars: int, model: str | None) -> dict:
    """Per-token time of a streamed answer held by the plain and by the grounded grammar."""
    from bench import models
    from bench.streaming import _stream

    rt = models.runtime(model)
    text = texts(1, chars)[0]
    prompt = f"Read this text and give the order it describes as JSON.\n\n{text}"
    plain = grammar.from_json_schema(PLAIN)
    held = grammar.from_json_schema(SCHEMA, grounding=grammar.Grounding(text))
    await _stream(rt, "Hello.", None, 8)
    await _stream(rt, prompt, plain, max_tokens)
    await _stream(rt, prompt, held, max_tokens)
    ratios, a_all, b_all = [], [], []
    for k in range(rounds):
        pair = [(plain, []), (held, [])]
        for g, out in (pair if k % 2 == 0 else pair[::-1]):
            out.extend((await _stream(rt, prompt, g, max_tokens))[1])
        one, other = pair[0][1], pair[1][1]
        m = min(len(one), len(other))
        if m:
            a_all += one[:m]
            b_all += other[:m]
            ratios.append(statistics.median(other[:m]) / statistics.median(one[:m]))
    return {"model": rt.name, "rounds": rounds, "plain_ms_per_token": statistics.median(a_all) * 1e3,
            "grounded_ms_per_token": statistics.median(b_all) * 1e3,
            "ratio_same_positions": statistics.median(b_all) / statistics.median(a_all),
            "ratio_rounds_median": statistics.median(ratios) if ratios else None,
            "ratio_rounds_range": (min(ratios), max(ratios)) if ratios else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="smollm2,qwen25")
    parser.add_argument("--texts", type=int, default=10)
    parser.add_argument("--chars", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per text; the best counts")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--max-tokens", type=int, default=120)
    parser.add_argument("--model", default=None)
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args(argv)
    results = []
    print(f"{'vocab':8s} {'cold grounded ms':>17s} {'(max)':>7s} {'cold plain ms':>14s} "
          f"{'warm grounded us/tok':>21s} {'warm plain us/tok':>18s}")
    for name in args.vocab.split(","):
        r = measure(name, args.texts, args.chars, args.repeat)
        results.append(r)
        print(f"{name:8s} {r['cold_grounded_ms']:17.1f} {r['cold_grounded_max_ms']:7.1f} {r['cold_plain_ms']:14.1f} "
              f"{r['warm_grounded_us_per_token']:21.1f} {r['warm_plain_us_per_token']:18.1f}", flush=True)
    if args.stream:
        r = asyncio.run(stream(args.rounds, args.max_tokens, args.chars, args.model))
        results.append(r)
        print(f"stream ({r['model']}, {r['rounds']} rounds): plain {r['plain_ms_per_token']:.2f} ms/token, grounded "
              f"{r['grounded_ms_per_token']:.2f} ms/token, ratio {r['ratio_same_positions']:.3f} (rounds: median "
              f"{r['ratio_rounds_median']:.3f}, range {r['ratio_rounds_range'][0]:.3f}-{r['ratio_rounds_range'][1]:.3f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

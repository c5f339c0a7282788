"""Per-decode-step masking cost, our engine beside XGrammar, llguidance and outlines-core.

    python -m bench.masker [--vocab smollm2,gemma3,qwen25] [--passes 10] [--schema NAME ...]
                           [--engine NAME ...]

The same schemas, vocabularies and token sequences for every engine; engines interleaved in one
process, pass after pass and in turns (each runs after each other), so machine noise and cold
caches hit them alike. Ratios are ratios of medians; compile figures are medians of COMPILE_RUNS
fresh compiles.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from bench._engines import ENGINE_NAMES, FREE_JSON, Engine, all_engines
from runtimes.testing import GreedyTokenizer

COMPILE_RUNS = 11
"""Fresh compiles (grammar plus every state the document visits) per engine and schema; the
median is reported, as one cold run on a shared machine is too noisy to rank engines.
XGrammar's compile runs on two threads and takes half again as long when the other core is
busy, so with few runs the median falls in either mode by chance."""

ONE_RUN_S = 10.0
"""An engine whose compile took longer than this is not compiled again for the schema (a
minute-long compile, outlines-core's of a long bounded string, is not made more exact by
repeating it, and eleven would take most of the run)."""

_STR = {"type": "string"}


def _closed(properties: dict, required: list[str] | None = None) -> dict:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


def _tool(name: str, properties: dict, required: list[str]) -> dict:
    return _closed({"name": {"const": name}, "arguments": _closed(properties, required)})


def _nested(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for level in reversed(range(depth)):
        schema = _closed({f"level{level}": schema, "id": {"type": "integer"}})
    return schema


SCHEMAS: dict[str, tuple[object, object]] = {
    "person": (
        _closed({"name": _STR, "age": {"type": "integer"}, "email": _STR}),
        {"name": "Ada Lovelace", "age": 36, "email": "ada@example.org"},
    ),
    "weather tool": (
        _closed(
            {
                "location": _STR,
                "unit": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1},
            },
            ["location", "unit"],
        ),
        {"location": "Paris, France", "unit": "celsius", "days": 3},
    ),
    "nested order": (
        _closed(
            {
                "id": _STR,
                "customer": _closed(
                    {"name": _STR, "address": _closed({"street": _STR, "city": _STR, "zip": _STR}, ["street", "city"])}
                ),
                "items": {
                    "type": "array",
                    "items": _closed({"sku": _STR, "qty": {"type": "integer", "minimum": 1}, "price": {"type": "number"}}),
                    "minItems": 1,
                },
                "notes": _STR,
                "gift": {"type": "boolean"},
            },
            ["id", "customer", "items"],
        ),
        {
            "id": "A-1001",
            "customer": {"name": "Grace Hopper", "address": {"street": "1 Navy Way", "city": "Arlington"}},
            "items": [{"sku": "KB-87", "qty": 2, "price": 49.5}, {"sku": "MS-2", "qty": 1, "price": 19.99}],
            "gift": False,
        },
    ),
    "5-tool call": (
        {
            "anyOf": [
                _tool("get_weather", {"city": _STR, "unit": {"enum": ["c", "f"]}}, ["city"]),
                _tool("search", {"query": _STR, "limit": {"type": "integer"}}, ["query"]),
                _tool("send_email", {"to": _STR, "subject": _STR, "body": _STR}, ["to", "body"]),
                _tool("convert", {"value": {"type": "number"}, "from": _STR, "to": _STR}, ["value", "from", "to"]),
                _tool("calendar", {"date": _STR, "title": _STR, "minutes": {"type": "integer"}}, ["date", "title"]),
            ]
        },
        {"name": "send_email", "arguments": {"to": "bob@example.com", "subject": "Hi", "body": "See you at 5."}},
    ),
    "20 properties": (
        _closed(
            {
                f"field_{i}": [_STR, {"type": "integer"}, {"type": "boolean"}, {"type": "number"}][i % 4]
                for i in range(20)
            }
        ),
        {f"field_{i}": ["text", i * 7, i % 3 == 0, i / 4][i % 4] for i in range(20)},
    ),
    "depth-6 nesting": (
        _nested(6),
        json.loads(
            '{"level0":{"level1":{"level2":{"level3":{"level4":{"level5":"deep","id":5},'
            '"id":4},"id":3},"id":2},"id":1},"id":0}'
        ),
    ),
    "pattern + maxLength": (
        _closed(
            {
                "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "title": {"type": "string", "maxLength": 40},
                "slug": {"type": "string", "pattern": "^[a-z0-9-]+$", "maxLength": 30},
            }
        ),
        {"code": "ABC-1234", "title": "A short title for a record", "slug": "a-short-title"},
    ),
    "free JSON": (
        FREE_JSON,
        {"a": [1, 2, {"b": None, "c": "text"}], "d": True, "e": {"f": [[], {}], "g": -1.5e3}},
    ),
    # Last: the memory the slowest compiles release (outlines-core's take seconds here) makes
    # the next schema's first allocations fault in fresh pages, which no other schema should pay.
    "long bounded string": (
        _closed({"summary": {"type": "string", "maxLength": 1000}, "words": {"type": "integer"}}),
        {"summary": ("The quick brown fox jumps over the lazy dog. " * 12).strip(), "words": 108},
    ),
}


def _canonical(instance: object) -> bytes:
    return json.dumps(instance, ensure_ascii=False, separators=(",", ":")).encode()


class Measure:
    def __init__(self) -> None:
        self.mask: list[float] = []
        self.accept: list[float] = []
        self.step: list[float] = []


def _run_document(engine: Engine, compiled, tokens: list[int], size: int, measure: Measure | None, rng) -> float:
    """Drive one matcher through `tokens`; returns the first mask's seconds."""
    matcher = engine.matcher(compiled)
    bitmask = np.full((1, -(-size // 32)), -1, dtype=np.int32)
    first = 0.0
    for i, token in enumerate(tokens):
        t0 = time.perf_counter()
        engine.fill(matcher, bitmask)
        t1 = time.perf_counter()
        if i == 0:
            first = t1 - t0
        if measure is not None:
            logits = rng.standard_normal(size, dtype=np.float32)
            # A full decode step at this position: mask, apply, greedy select.
            t2 = time.perf_counter()
            engine.step(matcher, bitmask, logits)
            t3 = time.perf_counter()
            measure.step.append(t3 - t2)
        t4 = time.perf_counter()
        engine.accept(matcher, token)
        t5 = time.perf_counter()
        if measure is not None:
            measure.mask.append(t1 - t0)
            measure.accept.append(t5 - t4)
    return first


def _rotated(engines: list[Engine], r: int) -> list[Engine]:
    """The engines in the order of round `r`: each runs after each other in turn, so none
    always follows the one that leaves the caches coldest (outlines-core's long compiles)."""
    k = r % len(engines)
    return engines[k:] + engines[:k]


def _fmt(x: float | None, scale: float = 1e6, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x * scale:.{digits}f}"


def run(vocab_names: list[str], schema_names: list[str], passes: int,
        engine_names: list[str] | None = None) -> None:
    from bench import vocabularies

    loaders = {"smollm2": vocabularies.smollm2, "gemma3": vocabularies.gemma3, "qwen25": vocabularies.qwen25}
    # A subset, for a quicker look at two engines side by side.
    engines = [e for e in all_engines() if engine_names is None or e.name in engine_names]
    for e in engines:
        if not e.available:
            print(f"# {e.name}: unavailable ({e.why_unavailable})")
    engines = [e for e in engines if e.available]
    rng = np.random.default_rng(0)
    summary: list[tuple[str, str, dict]] = []
    for vname in vocab_names:
        vocab = loaders[vname]()
        print(f"\n## {vname}: {vocab.size} ids")
        tokenizer = GreedyTokenizer(vocab)
        for e in engines:
            print(f"  {e.name:14s} vocabulary preparation {e.prepare(vocab) * 1e3:8.1f} ms")
        for sname in schema_names:
            schema, instance = SCHEMAS[sname]
            tokens = tokenizer.encode_bytes(_canonical(instance)) + [min(vocab.eos_ids)]
            rows: dict[str, dict] = {}
            compiled: dict[str, object] = {}
            cold: dict[str, list[tuple[float, float, float]]] = {e.name: [] for e in engines}
            for r in range(COMPILE_RUNS):  # engines interleaved; each run compiles afresh
                for e in _rotated(engines, r):
                    if e.name in rows or (cold[e.name] and cold[e.name][0][1] > ONE_RUN_S):
                        continue
                    try:
                        t0 = time.perf_counter()
                        c = e.compile(schema)
                        t1 = time.perf_counter()
                        first = _run_document(e, c, tokens, vocab.size, None, rng)
                        t2 = time.perf_counter()
                    except Exception as exc:  # an engine that cannot express the schema
                        rows[e.name] = {"error": f"{type(exc).__name__}: {str(exc)[:60]}"}
                        continue
                    compiled[e.name] = c
                    cold[e.name].append((t1 - t0, t2 - t0, first))
            for e in engines:
                if e.name in rows:
                    continue
                c = compiled[e.name]
                rows[e.name] = {
                    "compile": statistics.median(x[0] for x in cold[e.name]),
                    "compile+states": statistics.median(x[1] for x in cold[e.name]),
                    "first": statistics.median(x[2] for x in cold[e.name]),
                    "memory": e.memory(c),
                    "measure": Measure(),
                }
            for r in range(passes):
                for e in _rotated(engines, r):
                    if e.name in compiled:
                        _run_document(e, compiled[e.name], tokens, vocab.size, rows[e.name]["measure"], rng)
            print(f"\n  {sname} ({len(tokens)} tokens)")
            print(
                f"    {'engine':14s} {'compile ms':>10s} {'+states ms':>10s} {'first us':>9s} "
                f"{'p50 us':>7s} {'mean us':>8s} {'p99 us':>8s} {'accept us':>9s} {'step us':>8s} {'mem KB':>8s}"
            )
            for name, r in rows.items():
                if "error" in r:
                    print(f"    {name:14s} n/a ({r['error']})")
                    continue
                m = r["measure"]
                r["p50"] = statistics.median(m.mask)
                r["mean"] = statistics.fmean(m.mask)
                r["p99"] = float(np.percentile(m.mask, 99))
                r["accept_p50"] = statistics.median(m.accept)
                r["step_p50"] = statistics.median(m.step)
                mem = r["memory"]
                print(
                    f"    {name:14s} {_fmt(r['compile'], 1e3, 2):>10s} {_fmt(r['compile+states'], 1e3, 2):>10s} "
                    f"{_fmt(r['first']):>9s} {_fmt(r['p50']):>7s} {_fmt(r['mean']):>8s} {_fmt(r['p99']):>8s} "
                    f"{_fmt(r['accept_p50']):>9s} {_fmt(r['step_p50']):>8s} "
                    f"{'n/a' if mem is None else f'{mem / 1024:.0f}':>8s}"
                )
            summary.append((vname, sname, rows))
    _print_ratios(summary)


def _print_ratios(summary) -> None:
    print("\n## ratios agentkit / xgrammar (medians; < 1 is faster or smaller)")
    print(f"  {'vocab':8s} {'schema':20s} {'p50':>6s} {'mean':>6s} {'p99':>6s} {'step':>6s} {'compile+states':>15s} {'memory':>7s}")
    keys = ["p50", "mean", "p99", "step_p50", "compile+states", "memory"]
    for vname, sname, rows in summary:
        ours, peer = rows.get("agentkit", {}), rows.get("xgrammar", {})
        if "p50" not in ours or "p50" not in peer:
            continue
        vals = []
        for k in keys:
            a, b = ours.get(k), peer.get(k)
            vals.append("n/a" if not a or not b else f"{a / b:.2f}")
        print(f"  {vname:8s} {sname:20s} " + " ".join(f"{v:>6s}" if i < 4 else f"{v:>15s}" if i == 4 else f"{v:>7s}" for i, v in enumerate(vals)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="smollm2,qwen25,gemma3")
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--schema", action="append", choices=sorted(SCHEMAS), help="repeatable; default all")
    parser.add_argument("--engine", action="append", choices=ENGINE_NAMES, help="repeatable; default all")
    args = parser.parse_args(argv)
    run(args.vocab.split(","), args.schema or list(SCHEMAS), args.passes, args.engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Per-decode-step masking cost, our engine beside XGrammar, llguidance and outlines-core.

Two regimes. Cold: a fresh compile plus the first document (every mask, and accepting its
tokens), totalled: what a request with a schema not seen before pays. Warm: the masks of a
later document on the same compiled grammar, totalled, and per mask (p50, mean, p99).

    python -m bench.masker [--vocab smollm2,gemma3,qwen25] [--passes 10] [--schema NAME ...]
                           [--engine NAME ...] [--profile] [--dev N [--closed]]

`--dev N` adds N schemas nobody here tuned on (`bench._dev_schemas`: JSONSchemaBench DEV
schemas with bounded strings, patterns or formats, each with a document from its own test data);
their ratios are summarised apart from the named schemas'. Most of them leave objects open (any
other key beside the declared ones), which our grammar holds as written and XGrammar's strict
mode closes; `--closed` closes them for every engine (where the document stays valid), the
language both then hold, and the one agentkit's tools and `extract` compile.

`--profile` adds, per schema, where our last cold run's time went: schema to IR, the compiled
grammar's build (rule analysis, automaton), the first document's new masks by the way each was
found, and the rest (the matcher's own steps and walks), from `CompiledGrammar.profile`.

The same schemas, vocabularies and token sequences for every engine; engines interleaved in one
process, pass after pass and in turns (each runs after each other), so machine noise and cold
caches hit them alike. Ratios are ratios of medians; compile figures are medians of COMPILE_RUNS
fresh compiles. Warm masks are timed right after a fresh logits row is drawn, as a decoder asks
for one right after a forward pass; `bench.loop_masks` times them after real forward passes.
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
    # Extraction schemas as users write them (Pydantic's max_length, constr(pattern=...),
    # dates, emails): bounded strings, patterns and formats.
    "strings": (
        _closed(
            {
                "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
                "title": {"type": "string", "maxLength": 40},
                "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "summary": {"type": "string", "minLength": 10, "maxLength": 120},
            }
        ),
        {
            "date": "2024-03-15",
            "title": "Quarterly report on regional sales",
            "code": "ABC-1234",
            "summary": "Sales rose in the north and fell slightly in the south; the overall trend is up by four percent.",
        },
    ),
    "contact": (
        _closed(
            {
                "name": {"type": "string", "minLength": 1, "maxLength": 60},
                "email": {"type": "string", "format": "email"},
                "phone": {"type": "string", "pattern": "^[0-9+ ()-]{7,20}$"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 5},
            },
            ["name", "email", "tags"],
        ),
        {"name": "Ada Lovelace", "email": "ada@example.org", "phone": "+44 20 7946 0958", "tags": ["math", "poetry"]},
    ),
    "invoice": (
        _closed(
            {
                "number": {"type": "string", "pattern": "^INV-[0-9]{6}$"},
                "issued": {"type": "string", "format": "date"},
                "customer": {"type": "string", "maxLength": 80},
                "lines": {
                    "type": "array",
                    "items": _closed(
                        {
                            "description": {"type": "string", "maxLength": 100},
                            "qty": {"type": "integer", "minimum": 1},
                            "price": {"type": "number"},
                        }
                    ),
                    "minItems": 1,
                    "maxItems": 20,
                },
                "currency": {"enum": ["EUR", "USD", "GBP"]},
            }
        ),
        {
            "number": "INV-004217",
            "issued": "2024-11-05",
            "customer": "Babbage Engines Ltd.",
            "lines": [
                {"description": "Difference engine, brass, assembled", "qty": 1, "price": 1200.0},
                {"description": "Punched cards (box of 500)", "qty": 3, "price": 18.5},
            ],
            "currency": "GBP",
        },
    ),
    "ticket": (
        _closed(
            {
                "id": {"type": "string", "pattern": "^[A-Z]{2,4}-[0-9]{1,6}$"},
                "title": {"type": "string", "minLength": 5, "maxLength": 80},
                "body": {"type": "string", "maxLength": 500},
                "reporter": {"type": "string", "format": "email"},
                "labels": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^[a-z0-9-]+$", "maxLength": 24},
                    "maxItems": 6,
                },
                "due": {"type": "string", "format": "date"},
            },
            ["id", "title", "body", "reporter", "labels"],
        ),
        {
            "id": "OPS-3141",
            "title": "Nightly export fails on the reporting cluster",
            "body": (
                "Since Monday the nightly export job stops after about twenty minutes with a timeout "
                "from the storage layer. Retrying by hand works. Logs are attached to the run page."
            ),
            "reporter": "grace@example.com",
            "labels": ["export", "storage", "p2"],
            "due": "2024-12-01",
        },
    ),
    # pydantic's `HttpUrl` (a URI of at most 2,083 characters) and a hostname under a bound.
    "bookmark": (
        _closed(
            {
                "title": {"type": "string", "minLength": 1, "maxLength": 120},
                "url": {"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083},
                "host": {"type": "string", "format": "hostname", "maxLength": 255},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 8},
            },
            ["title", "url", "tags"],
        ),
        {
            "title": "Counting characters beside a format's automaton",
            "url": "https://docs.example.org/guides/structured-output?lang=en&v=2#length-bounds",
            "host": "docs.example.org",
            "tags": ["grammar", "urls"],
        },
    ),
    # Open to other members, as most real schemas are (no additionalProperties: false): the
    # grammar then holds a rule for any JSON value, which recurses, beside long patterns.
    "open long pattern": (
        {
            "type": "object",
            "properties": {
                "handle": {"type": "string", "pattern": "^[a-z0-9_]+$", "maxLength": 300},
                "bio": {"type": "string", "pattern": "^[A-Za-z0-9 .,-]{3,}$", "maxLength": 300},
            },
            "required": ["handle", "bio"],
        },
        {
            "handle": "ada_lovelace_1815_analytical_engine_notes_translator",
            "bio": ("Mathematician and writer, known for her notes on the Analytical Engine, "
                    "the first published algorithm meant for a machine, and for seeing beyond "
                    "calculation."),
        },
    ),
    # Last: the memory the slowest compiles release (outlines-core's take seconds here) makes
    # the next schema's first allocations fault in fresh pages, which no other schema should pay.
    "long bounded string": (
        _closed({"summary": {"type": "string", "maxLength": 1000}, "words": {"type": "integer"}}),
        {"summary": ("The quick brown fox jumps over the lazy dog. " * 12).strip(), "words": 108},
    ),
}


def _canonical(instance: object) -> bytes:
    """The document's text: compact JSON, or as given where it is already text."""
    if isinstance(instance, bytes):
        return instance
    return json.dumps(instance, ensure_ascii=False, separators=(",", ":")).encode()


class Measure:
    def __init__(self) -> None:
        self.mask: list[float] = []
        self.accept: list[float] = []
        self.step: list[float] = []
        self.documents: list[float] = []  # each document's masks, totalled


def _run_document(engine: Engine, compiled, tokens: list[int], size: int, measure: Measure | None, rng) -> float:
    """Drive one matcher through `tokens`; returns the first mask's seconds."""
    matcher = engine.matcher(compiled)
    bitmask = np.full((1, -(-size // 32)), -1, dtype=np.int32)
    first = 0.0
    total = 0.0
    for i, token in enumerate(tokens):
        if measure is not None:
            # In a decoder's order: the forward pass's logits, then the mask. Drawn after the
            # previous step instead, they let a peer whose step fills its bitmask again (ours
            # reads no bitmask) meet its mask with the row and its own code still in cache.
            logits = rng.standard_normal(size, dtype=np.float32)
        t0 = time.perf_counter()
        engine.fill(matcher, bitmask)
        t1 = time.perf_counter()
        if i == 0:
            first = t1 - t0
        if measure is not None:
            # A full decode step at this position: mask, apply, greedy select.
            t2 = time.perf_counter()
            engine.step(matcher, bitmask, logits)
            t3 = time.perf_counter()
            measure.step.append(t3 - t2)
        t4 = time.perf_counter()
        engine.accept(matcher, token)
        t5 = time.perf_counter()
        total += t1 - t0
        if measure is not None:
            measure.mask.append(t1 - t0)
            measure.accept.append(t5 - t4)
    if measure is not None:
        measure.documents.append(total)
    return first


def _rotated(engines: list[Engine], r: int) -> list[Engine]:
    """The engines in the order of round `r`: each runs after each other in turn, so none
    always follows the one that leaves the caches coldest (outlines-core's long compiles)."""
    k = r % len(engines)
    return engines[k:] + engines[:k]


def _fmt(x: float | None, scale: float = 1e6, digits: int = 1) -> str:
    return "n/a" if x is None else f"{x * scale:.{digits}f}"


def _profile_line(engine: Engine, compiled, cold_s: float) -> str:
    """Our last cold run of a schema, taken apart (see `grammar.CompileProfile`)."""
    p = compiled.profile
    rest = cold_s - engine.ir_seconds - p.build - p.masks
    return (f"    profile: schema->IR {engine.ir_seconds * 1e3:.1f} ms, {p.summary()}; "
            f"matcher and walks {rest * 1e3:.1f} ms of {cold_s * 1e3:.1f} ms cold")


def run(vocab_names: list[str], schema_names: list[str], passes: int,
        engine_names: list[str] | None = None, profile: bool = False, dev: int = 0, closed: bool = False) -> None:
    from bench import vocabularies

    loaders = {"smollm2": vocabularies.smollm2, "gemma3": vocabularies.gemma3, "qwen25": vocabularies.qwen25}
    # A subset, for a quicker look at two engines side by side.
    engines = [e for e in all_engines() if engine_names is None or e.name in engine_names]
    for e in engines:
        if not e.available:
            print(f"# {e.name}: unavailable ({e.why_unavailable})")
    engines = [e for e in engines if e.available]
    rng = np.random.default_rng(0)
    schemas = {name: SCHEMAS[name] for name in schema_names}
    if dev:
        from bench._dev_schemas import closed_dev_schemas, dev_schemas

        schemas.update(closed_dev_schemas(dev) if closed else dev_schemas(dev))
    summary: list[tuple[str, str, dict]] = []
    for vname in vocab_names:
        vocab = loaders[vname]()
        print(f"\n## {vname}: {vocab.size} ids")
        tokenizer = GreedyTokenizer(vocab)
        for e in engines:
            print(f"  {e.name:14s} vocabulary preparation {e.prepare(vocab) * 1e3:8.1f} ms")
        for sname, (schema, instance) in schemas.items():
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
                    if profile and e.name == "agentkit":
                        profiled = _profile_line(e, c, t2 - t0)
            for e in engines:
                if e.name in rows:
                    continue
                c = compiled[e.name]
                rows[e.name] = {
                    "compile": statistics.median(x[0] for x in cold[e.name]),
                    "cold": statistics.median(x[1] for x in cold[e.name]),
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
                f"    {'engine':14s} {'compile ms':>10s} {'cold ms':>10s} {'warm ms':>8s} {'first us':>9s} "
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
                r["warm"] = statistics.median(m.documents)
                mem = r["memory"]
                print(
                    f"    {name:14s} {_fmt(r['compile'], 1e3, 2):>10s} {_fmt(r['cold'], 1e3, 2):>10s} "
                    f"{_fmt(r['warm'], 1e3, 2):>8s} "
                    f"{_fmt(r['first']):>9s} {_fmt(r['p50']):>7s} {_fmt(r['mean']):>8s} {_fmt(r['p99']):>8s} "
                    f"{_fmt(r['accept_p50']):>9s} {_fmt(r['step_p50']):>8s} "
                    f"{'n/a' if mem is None else f'{mem / 1024:.0f}':>8s}"
                )
            if profile and "compile" in rows.get("agentkit", {}):
                print(profiled)
            summary.append((vname, sname, rows))
    _print_ratios(summary)


PEERS = ("xgrammar", "llguidance")
RATIO_KEYS = ("cold", "warm", "p50", "mean", "p99", "step_p50", "memory")


def _ratios(ours: dict, peer: dict) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for k in RATIO_KEYS:
        a, b = ours.get(k), peer.get(k)
        out[k] = a / b if a and b else None
    return out


def _print_ratios(summary) -> None:
    """Per schema, agentkit over each peer; then, per vocabulary, the median and the largest
    over the schemas (where the peer could compile them)."""
    for peer in PEERS:
        print(f"\n## ratios agentkit / {peer} (medians; < 1 is faster or smaller)")
        print(f"  {'vocab':8s} {'schema':20s} " + " ".join(f"{k:>8s}" for k in RATIO_KEYS))
        per_vocab: dict[tuple[str, str], list[dict]] = {}  # (vocabulary, named or DEV)
        for vname, sname, rows in summary:
            ours, theirs = rows.get("agentkit", {}), rows.get(peer, {})
            if "p50" not in ours or "p50" not in theirs:
                continue
            ratios = _ratios(ours, theirs)
            group = "named" if sname in SCHEMAS else "DEV"
            per_vocab.setdefault((vname, group), []).append(ratios)
            print(f"  {vname:8s} {sname:20s} " + " ".join(f"{_fmt(ratios[k], 1, 2):>8s}" for k in RATIO_KEYS))
        for (vname, group), all_ratios in per_vocab.items():
            for label, pick in (("median", statistics.median), ("largest", max)):
                cells = []
                for k in RATIO_KEYS:
                    vals = [r[k] for r in all_ratios if r[k] is not None]
                    cells.append(_fmt(pick(vals), 1, 2) if vals else "n/a")
                title = f"{label} of {len(all_ratios)} {group}"
                print(f"  {vname:8s} {title:20s} " + " ".join(f"{c:>8s}" for c in cells))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default="smollm2,qwen25,gemma3")
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--schema", action="append", choices=sorted(SCHEMAS), help="repeatable; default all")
    parser.add_argument("--engine", action="append", choices=ENGINE_NAMES, help="repeatable; default all")
    parser.add_argument("--profile", action="store_true", help="where our cold path's time goes, per schema")
    parser.add_argument("--dev", type=int, default=0, metavar="N", help="add N untuned JSONSchemaBench DEV schemas")
    parser.add_argument("--closed", action="store_true",
                        help="with --dev: their objects closed, as XGrammar's strict mode and agentkit's tools read them")
    args = parser.parse_args(argv)
    if args.closed and not args.dev:
        parser.error("--closed closes the --dev schemas")
    run(args.vocab.split(","), args.schema or list(SCHEMAS), args.passes, args.engine, args.profile, args.dev,
        args.closed)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How much of real-world JSON Schema compiles, and whether every compiled grammar is sound.

    python -m bench.coverage [--subset NAME ...] [--limit N] [--no-peer] [--suite] [--extra]

For each JSONSchemaBench subset (DEV ids only): the share of schemas `from_json_schema` compiles in
strict mode to a grammar whose byte automaton can be built (what decoding needs), beside
llguidance 1.9.1 run in the same process on the same ids; then, over every
test instance of the compiled schemas, in canonical form: invalid instances accepted (must be 0)
and the share of valid instances accepted (completeness). The same checks run over
maskbench-extra and the official JSON-Schema-Test-Suite (every draft, optional formats included).
Compile time per schema: median and p99.

The oracle is `validator_for(schema, default=Draft202012Validator)(schema,
format_checker=<its FORMAT_CHECKER>)`. Canonical form: `json.dumps(x, ensure_ascii=False,
separators=(",", ":"))` after putting each object's declared keys first, in schema order (or in
the order of the first matching anyOf/oneOf branch), then the others.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import signal
import statistics
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from jsonschema.validators import Draft202012Validator, validator_for

from bench._progress import progress
from grammar import CompileError, from_json_schema
from grammar import GrammarError
from grammar.testing import LEGACY, Automaton, Document, Place

SUBSETS = [
    "Glaiveai2K", "Github_trivial", "Github_easy", "Github_medium", "Github_hard", "Github_ultra",
    "Kubernetes", "Snowplow", "WashingtonPost", "JsonSchemaStore",
]
EXTRA = [
    "BFCL_simple", "BFCL_multiple", "BFCL_parallel", "BFCL_parallel_multiple", "BFCL_java",
    "BFCL_javascript", "BFCL_sql", "MCPspec", "JME", "Handwritten", "Synthesized",
]
SCHEMA_SECONDS = 20


def corpus_dir() -> Path | None:
    root = Path(__file__).resolve().parent.parent
    path = Path(os.environ.get("AGENTKIT_CORPUS", root.parent / "shared" / "corpus"))
    return path if path.is_dir() else None


# --- the oracle and canonical form -----------------------------------------------------------


def oracle(schema):
    """The validator the grammar must agree with."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls = validator_for(schema, default=Draft202012Validator)
        return cls(schema, format_checker=cls.FORMAT_CHECKER)


def oracle_valid(validator, instance) -> bool | None:
    """The oracle's verdict, None when the validator itself fails on the instance."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return validator.is_valid(instance)
    except Exception:
        return None


def canonical(instance, schema, validator=None) -> str:
    """The instance as compact JSON, each object's declared keys first in schema order."""
    validator = validator or oracle(schema)
    try:
        document = Document(schema)
    except GrammarError:
        return json.dumps(instance, ensure_ascii=False, separators=(",", ":"))
    ordered = _ordered(instance, [document.root], document, validator, 0)
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


def _resolve(document: Document, place: Place) -> Place | None:
    try:
        return document.resolve(place, place.schema["$ref"])
    except GrammarError:
        return None


def _facets(places: list[Place], document: Document) -> list[Place]:
    """Subschemas reached through $ref and allOf, depth first, each once."""
    out: list[Place] = []
    seen: set[tuple] = set()

    def visit(place: Place, depth: int) -> None:
        schema = place.schema
        if not isinstance(schema, dict) or place.key in seen or depth > 50:
            return
        seen.add(place.key)
        out.append(place)
        if place.dialect in LEGACY and "$ref" in schema:
            target = _resolve(document, place)
            if target is not None:
                visit(target, depth + 1)
            return
        for keyword, value in schema.items():
            if keyword == "$ref":
                target = _resolve(document, place)
                if target is not None:
                    visit(target, depth + 1)
            elif keyword == "allOf" and isinstance(value, list):
                for i in range(len(value)):
                    visit(document.child(place, "allOf", i), depth + 1)

    for place in places:
        visit(place, 0)
    return out


def _is_valid_under(validator, place: Place, value) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return validator.evolve(schema=place.schema).is_valid(value)
    except Exception:
        return False


def _governing(facets: list[Place], document: Document, validator, value, depth: int) -> list[Place]:
    """Facets after choosing, group by group, the first anyOf/oneOf branch `value` satisfies."""
    facets = _facets(facets, document)
    done: set[tuple] = set()
    while True:
        pending = [
            (p, k) for p in facets for k in ("anyOf", "oneOf")
            if isinstance(p.schema, dict) and isinstance(p.schema.get(k), list)
            and not (p.dialect in LEGACY and "$ref" in p.schema) and (p.key, k) not in done
        ]
        if not pending or depth > 20:
            return facets
        place, keyword = pending[0]
        done.add((place.key, keyword))
        for i in range(len(place.schema[keyword])):
            branch = document.child(place, keyword, i)
            if _is_valid_under(validator, branch, value):
                facets = facets + [f for f in _facets([branch], document) if f.key not in {g.key for g in facets}]
                break
        depth += 1


def _ordered(value, places: list[Place], document: Document, validator, depth: int):
    if depth > 60:
        return value
    if isinstance(value, list):
        facets = _governing(places, document, validator, value, 0)
        out = []
        for i, item in enumerate(value):
            below = []
            for f in facets:
                s = f.schema
                items = s.get("prefixItems") if f.dialect not in LEGACY and f.dialect != "draft2019-09" else None
                if isinstance(items, list) and i < len(items):
                    below.append(document.child(f, "prefixItems", i))
                elif isinstance(s.get("items"), list) and i < len(s["items"]):
                    below.append(document.child(f, "items", i))
                elif isinstance(s.get("items"), (dict, bool)):
                    below.append(document.child(f, "items"))
            out.append(_ordered(item, below, document, validator, depth + 1))
        return out
    if not isinstance(value, dict):
        return value
    facets = [
        f for f in _governing(places, document, validator, value, 0)
        if not (f.dialect in LEGACY and "$ref" in f.schema)  # siblings of $ref mean nothing there
    ]
    declared: list[str] = []
    for f in facets:
        props = f.schema.get("properties")
        if isinstance(props, dict):
            declared.extend(k for k in props if k not in declared)
    for f in facets:
        required = f.schema.get("required")
        if isinstance(required, list):
            declared.extend(k for k in required if isinstance(k, str) and k not in declared)
    keys = [k for k in declared if k in value] + [k for k in value if k not in declared]
    out = {}
    for key in keys:
        below = []
        for f in facets:
            s = f.schema
            props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
            patterns = s.get("patternProperties") if isinstance(s.get("patternProperties"), dict) else {}
            matched = [p for p in patterns if _searches(p, key)]
            if key in props:
                below.append(document.child(f, "properties", key))
            elif matched:
                below.extend(document.child(f, "patternProperties", p) for p in matched)
            elif isinstance(s.get("additionalProperties"), (dict, bool)):
                below.append(document.child(f, "additionalProperties"))
        out[key] = _ordered(value[key], below, document, validator, depth + 1)
    return out


def _searches(pattern: str, key: str) -> bool:
    try:
        return re.search(pattern, key) is not None
    except re.error:
        return False


# --- running -----------------------------------------------------------------------------------


@dataclass
class Tally:
    schemas: int = 0
    compiled: int = 0
    peer: int = 0
    invalid: int = 0
    invalid_accepted: int = 0
    valid: int = 0
    valid_accepted: int = 0
    undecided: int = 0
    errors: Counter = field(default_factory=Counter)
    unsound: list = field(default_factory=list)
    times: list = field(default_factory=list)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def compile_timed(schema):
    """(grammar or None, seconds, error keyword)."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(SCHEMA_SECONDS)
    start = time.perf_counter()
    try:
        grammar = from_json_schema(schema)
        Automaton(grammar.rule_set())  # the NFA a matcher needs; its states are found lazily
        return grammar, time.perf_counter() - start, None
    except CompileError as e:
        return None, time.perf_counter() - start, e.keyword or type(e).__name__
    except _Timeout:
        return None, time.perf_counter() - start, "timeout"
    except RecursionError:
        return None, time.perf_counter() - start, "recursion"
    finally:
        signal.alarm(0)


def check_instances(grammar, schema, tests, tally: Tally, ident: str) -> None:
    validator = oracle(schema)
    for test in tests:
        data = test["data"]
        verdict = oracle_valid(validator, data)
        if verdict is None:
            tally.undecided += 1
            continue
        try:
            text = canonical(data, schema, validator)
        except Exception:
            text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        try:
            accepted = grammar.accepts(text)
        except GrammarError:
            tally.undecided += 1
            continue
        if verdict:
            tally.valid += 1
            tally.valid_accepted += accepted
        else:
            tally.invalid += 1
            if accepted:
                tally.invalid_accepted += 1
                tally.unsound.append((ident, text[:200]))


class Peer:
    """llguidance 1.9.1 with a 257-token byte-level tokenizer (256 bytes + EOS)."""

    def __init__(self):
        from llguidance import LLMatcher, LLTokenizer
        from llguidance._tokenizer import TokenizerWrapper

        class ByteTokenizer:
            eos_token_id = 256
            bos_token_id = None
            tokens = [bytes([i]) for i in range(256)] + [b""]
            special_token_ids = [256]

            def __call__(self, s):
                return list(s.encode() if isinstance(s, str) else s)

        self.matcher = LLMatcher
        self.tokenizer = LLTokenizer(TokenizerWrapper(ByteTokenizer()))

    def compiles(self, schema) -> bool:
        try:
            grammar = self.matcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
            if self.matcher.validate_grammar(grammar, self.tokenizer):
                return False
            return not self.matcher(self.tokenizer, grammar, log_level=0).is_error()
        except Exception:
            return False


def dev_ids(corpus: Path) -> set[str]:
    """The JSONSchemaBench ids a change may be tried on (DEV.txt)."""
    return set((corpus / "jsonschemabench" / "DEV.txt").read_text().split())


def jsonl(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def run_entries(entries, tally: Tally, peer: Peer | None, label: str) -> None:
    for entry in progress(entries, label):
        schema = entry["schema"]
        tally.schemas += 1
        if peer is not None:
            tally.peer += peer.compiles(schema)
        grammar, seconds, error = compile_timed(schema)
        tally.times.append(seconds)
        if grammar is None:
            tally.errors[error] += 1
            continue
        tally.compiled += 1
        check_instances(grammar, schema, entry.get("tests", []), tally, entry.get("id", ""))


def suite_entries(root: Path):
    for draft in ("draft4", "draft6", "draft7", "draft2019-09", "draft2020-12"):
        meta = {
            "draft4": "http://json-schema.org/draft-04/schema#",
            "draft6": "http://json-schema.org/draft-06/schema#",
            "draft7": "http://json-schema.org/draft-07/schema#",
            "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
            "draft2020-12": "https://json-schema.org/draft/2020-12/schema",
        }[draft]
        for path in sorted((root / draft).rglob("*.json")):
            for case in json.loads(path.read_text()):
                schema = case["schema"]
                if isinstance(schema, dict) and "$schema" not in schema:
                    schema = {"$schema": meta, **schema}
                yield {"id": f"{draft}/{path.relative_to(root / draft)}: {case['description']}", "schema": schema, "tests": case["tests"]}


def _pct(a: int, b: int) -> str:
    return f"{a / b:6.1%}" if b else "   n/a"


def report_line(name: str, t: Tally, peer: bool) -> str:
    peer_text = _pct(t.peer, t.schemas) if peer else "   n/a"
    return (
        f"{name:24s} {t.schemas:5d} {_pct(t.compiled, t.schemas)} {peer_text}  "
        f"{t.invalid_accepted:4d}/{t.invalid:<6d} {_pct(t.valid_accepted, t.valid)} ({t.valid_accepted}/{t.valid})"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subset", action="append", help="only these JSONSchemaBench subsets")
    parser.add_argument("--limit", type=int, default=None, help="at most N schemas per subset")
    parser.add_argument("--no-peer", action="store_true", help="skip llguidance")
    parser.add_argument("--no-suite", action="store_true", help="skip the JSON-Schema-Test-Suite")
    parser.add_argument("--no-extra", action="store_true", help="skip maskbench-extra")
    parser.add_argument("--errors", action="store_true", help="list refusal keywords per subset")
    args = parser.parse_args(argv)
    corpus = corpus_dir()
    if corpus is None:
        print("corpus not found: set AGENTKIT_CORPUS", file=sys.stderr)
        return 2
    sys.setrecursionlimit(20000)
    peer = None if args.no_peer else Peer()
    bench = corpus / "jsonschemabench"
    dev = dev_ids(corpus)
    print(f"{'subset (DEV)':24s} {'n':>5s} {'ours':>6s} {'llg':>6s}  {'inv.acc/inv':>11s} {'completeness':>12s}")
    total = Tally()
    unsound: list = []
    for subset in args.subset or SUBSETS:
        tally = Tally()
        entries = [e for e in jsonl(bench / f"{subset}.jsonl.gz") if e["id"] in dev][: args.limit]
        run_entries(entries, tally, peer, subset)
        print(report_line(subset, tally, peer is not None), flush=True)
        if args.errors:
            print("    refused:", dict(tally.errors.most_common(12)))
        for attr in ("schemas", "compiled", "peer", "invalid", "invalid_accepted", "valid", "valid_accepted"):
            setattr(total, attr, getattr(total, attr) + getattr(tally, attr))
        total.times.extend(tally.times)
        total.errors.update(tally.errors)
        unsound.extend(tally.unsound)
    print(report_line("overall (DEV)", total, peer is not None))
    times = sorted(total.times)
    if times:
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(f"compile time per schema: median {statistics.median(times) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")
    if not args.no_extra:
        extra = Tally()
        for name in EXTRA:
            path = corpus / "jsonschemabench-maskbench-extra" / f"{name}.jsonl.gz"
            if path.exists():
                run_entries(list(jsonl(path))[: args.limit], extra, None, name)
        print(report_line("maskbench-extra", extra, False))
        unsound.extend(extra.unsound)
    if not args.no_suite:
        suite = Tally()
        run_entries(list(suite_entries(corpus / "json-schema-test-suite")), suite, None, "json-schema-test-suite")
        print(report_line("json-schema-test-suite", suite, False))
        unsound.extend(suite.unsound)
    if args.errors:
        print("refused overall:", dict(total.errors.most_common(20)))
    for ident, text in unsound[:30]:
        print("UNSOUND", ident, text)
    print(f"invalid instances accepted: {len(unsound)}")
    return 1 if unsound else 0


if __name__ == "__main__":
    raise SystemExit(main())

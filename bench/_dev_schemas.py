"""Schemas nobody here tuned on, for the cold-path benchmark: JSONSchemaBench's DEV schemas that
look like extraction schemas (bounded strings, patterns or formats, a few kilobytes at most),
each with a valid document of its own test data that our grammar holds, as compact JSON in the
grammar's key order. Taken in id order, so a run is repeatable."""

from __future__ import annotations

import copy
import json

import grammar
from agentkit._tools.schema import close_open_objects
from bench.coverage import canonical, corpus_dir, dev_ids, jsonl, oracle, oracle_valid

SUBSETS = ("Github_easy", "Github_medium", "Github_hard", "Github_trivial", "Github_ultra", "JsonSchemaStore",
           "Glaiveai2K", "Kubernetes")
MAX_SCHEMA_CHARACTERS = 4000  # a long configuration file's schema is no extraction schema


def bounded(features: list[str]) -> bool:
    return any(f in ("pattern", "maxLength", "minLength") or f.startswith("format") for f in features)


def dev_schemas(limit: int = 50) -> dict[str, tuple[dict, bytes]]:
    """Up to `limit` (schema, document) pairs by `subset/id`, taken from the subsets in turn;
    empty where the corpus is absent."""
    corpus = corpus_dir()
    if corpus is None:
        return {}
    bench = corpus / "jsonschemabench"
    dev = dev_ids(corpus)
    per_subset = [_candidates(bench / f"{subset}.jsonl.gz", dev, limit) for subset in SUBSETS]
    found: dict[str, tuple[dict, bytes]] = {}
    for turn in range(limit):
        for candidates in per_subset:
            if turn < len(candidates) and len(found) < limit:
                found.update([candidates[turn]])
    return found


def _candidates(path, dev: set[str], limit: int) -> list[tuple[str, tuple[dict, bytes]]]:
    out = []
    for entry in sorted((e for e in jsonl(path) if e["id"] in dev), key=lambda e: e["id"]):
        schema = entry["schema"]
        if len(out) >= limit:
            break
        if not bounded(entry["meta"]["raw_features"]) or len(json.dumps(schema)) > MAX_SCHEMA_CHARACTERS:
            continue
        document = _document(schema, entry.get("tests", []))
        if document is not None:
            out.append((entry["id"], (schema, document)))
    return out


def _document(schema: dict, tests: list[dict]) -> bytes | None:
    """The first valid test instance our grammar holds, as the grammar writes it."""
    try:
        g = grammar.from_json_schema(schema)
    except grammar.GrammarError:
        return None
    validator = oracle(schema)
    for test in tests:
        if not test.get("valid") or oracle_valid(validator, test["data"]) is not True:
            continue
        text = canonical(test["data"], schema, validator)
        if g.accepts(text):
            return text.encode()
    return None


def closed(schema: dict) -> dict:
    """A copy of `schema` with every object that declares properties and says nothing of other
    keys closed, as agentkit closes a tool's or an output's schema (`close_open_objects`) and as
    XGrammar's strict mode reads every schema, so both engines hold the same language."""
    shut = copy.deepcopy(schema)
    close_open_objects(shut)
    return shut


def closed_dev_schemas(limit: int = 50) -> dict[str, tuple[dict, bytes]]:
    """`dev_schemas(limit)` with their objects closed, where the document stays valid and held."""
    out = {}
    for ident, (schema, document) in dev_schemas(limit).items():
        shut = closed(schema)
        try:
            g = grammar.from_json_schema(shut)
        except grammar.GrammarError:
            continue  # (closing left a required key nowhere to go: no document)
        if oracle_valid(oracle(shut), json.loads(document)) is True and g.accepts(document.decode()):
            out[f"{ident} (closed)"] = (shut, document)
    return out

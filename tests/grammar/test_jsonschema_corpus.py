"""Soundness of the JSON Schema front end on external schemas, on a bounded sample.

Every instance of a compiled schema, in canonical form, that the oracle rejects must be
rejected by the grammar; random sentences of the grammar must validate. The byte automaton the
masks come from must accept every sentence, and every valid instance the grammar accepts; token
masks over a real vocabulary must lead every random walk to a document the oracle accepts. The
full run over every DEV id, maskbench-extra and the whole test suite is `python -m bench.coverage`.
"""

from __future__ import annotations

import json
import random

import pytest

from bench.coverage import canonical, jsonl, oracle, oracle_valid, suite_entries
from grammar import CompileError, LimitError, Matcher, compile, from_json_schema
from grammar._automaton.pushdown import Automaton
from ir_sampling import sentence
from test_automaton import walks_to_accept
from test_matcher import _random_walk

SUBSETS = ["Glaiveai2K", "Github_easy", "Github_medium", "Github_hard", "Kubernetes", "Snowplow", "JsonSchemaStore"]
PER_SUBSET = 20
MAX_SCHEMA_CHARS = 6_000


@pytest.fixture(scope="module")
def dev_sample(corpus):
    bench = corpus / "jsonschemabench"
    dev = set((bench / "DEV.txt").read_text().split())
    rng = random.Random(2)
    out = []
    for subset in SUBSETS:
        entries = [
            e for e in jsonl(bench / f"{subset}.jsonl.gz")
            if e["id"] in dev and len(json.dumps(e["schema"])) <= MAX_SCHEMA_CHARS and e.get("tests")
        ]
        out.extend(rng.sample(entries, min(PER_SUBSET, len(entries))))
    return out


def _check(entry) -> tuple[int, int]:
    """(invalid instances checked, sentences checked); asserts soundness on both."""
    schema = entry["schema"]
    try:
        grammar = from_json_schema(schema)
    except CompileError:
        return 0, 0
    validator = oracle(schema)
    try:
        automaton = Automaton(grammar.rule_set())
    except LimitError:  # too large to decode with (the recognizer still checks the language)
        automaton = None
    invalid = 0
    for test in entry["tests"]:
        verdict = oracle_valid(validator, test["data"])
        if verdict is False:
            invalid += 1
            text = canonical(test["data"], schema, validator)
            assert not grammar.accepts(text), (entry["id"], text)
        elif verdict and grammar.accepts(text := canonical(test["data"], schema, validator)):
            assert automaton is None or walks_to_accept(automaton, text), (entry["id"], text)
    rng = random.Random(0)
    sentences = 0
    for _ in range(5):
        text = sentence(grammar.rule_set(), rng)
        if text is None:
            break
        sentences += 1
        assert oracle_valid(validator, json.loads(text)), (entry["id"], text)
        assert automaton is None or walks_to_accept(automaton, text), (entry["id"], text)
    return invalid, sentences


def test_dev_sample_is_sound(dev_sample):
    checked = [_check(e) for e in dev_sample]
    assert sum(i for i, _ in checked) > 100
    assert sum(s for _, s in checked) > 100


def test_token_walks_over_the_dev_sample_finish_valid(dev_sample, smollm2_vocabulary):
    """Random walks under the masks, on SmolLM2's vocabulary, steered to completion after a
    random number of free choices: none dead-ends, and each finished document is accepted by
    the recognizer and (unless the compile dropped a keyword to check afterwards) the oracle."""
    vocab = smollm2_vocabulary
    eos = set(vocab.eos_ids)
    walked = 0
    for entry in dev_sample[::4]:
        try:
            grammar = from_json_schema(entry["schema"])
            compiled = compile(grammar, vocab)
        except (CompileError, LimitError):
            continue
        validator = oracle(entry["schema"])
        rng = random.Random(entry["id"])
        for free in (3, 24):
            try:
                taken = _random_walk(Matcher(compiled), rng.randrange, free, steering=3000)
            except AssertionError as e:
                e.add_note(f"schema {entry['id']}")
                raise
            text = vocab.decode([t for t in taken if t not in eos]).decode("utf-8")
            assert grammar.accepts(text), (entry["id"], text)
            assert grammar.dropped or oracle_valid(validator, json.loads(text)) is not False, (entry["id"], text)
            walked += 1
    assert walked > 40


@pytest.mark.parametrize("draft", ["draft4", "draft6", "draft7", "draft2019-09", "draft2020-12"])
def test_official_suite_is_sound(corpus, draft):
    root = corpus / "json-schema-test-suite"
    entries = [e for e in suite_entries(root) if e["id"].startswith(draft + "/")]
    compiled = 0
    for entry in entries:
        invalid, _ = _check(entry)
        compiled += invalid > 0
    assert compiled > 100

"""The bounded-format fit count: real values of each format from the corpus, each one the
validator's checker accepts, tried under length bounds."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

import grammar
from bench.coverage import corpus_dir
from grammar import Vocabulary
from bench.format_fit import fits, format_values


@pytest.fixture(scope="module")
def values() -> dict[str, list[str]]:
    corpus = corpus_dir()
    if corpus is None:
        pytest.skip("../shared/corpus is not beside the clone")
    return format_values(corpus, "dev")


def test_the_values_are_real_and_valid(values) -> None:
    assert len(values["uri"]) > 100 and len(values["hostname"]) > 100 and values["email"]
    for name, texts in values.items():
        for text in texts[::50]:
            schema = {"type": "string", "format": name}
            assert Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid(text)


def test_every_bound_keeps_every_value_within_it(values) -> None:
    """A format and its length are held exactly at every bound (intersected up to 64, counted
    beside the format's automaton past it): whatever the validator takes within the bound, the
    grammar takes."""
    for fit in fits(values, (30, 60, 100, 255, 2083)):
        assert fit.values and fit.held == fit.values, (fit.format, fit.bound, fit.refused[:3])


def test_the_matcher_writes_every_real_url_under_a_long_bound(values) -> None:
    """The masks agree with the grammar: a byte at a time, each real URL (one in eight) is
    allowed under `maxLength` 100 and 2083 to its closing quote and the end."""
    vocab = Vocabulary.from_tokens([b""] + [bytes([b]) for b in range(1, 256)], eos_ids=[0])
    for bound in (100, 2083):
        compiled = grammar.compile(grammar.from_json_schema({"type": "string", "format": "uri", "maxLength": bound}), vocab)
        for url in values["uri"][::8]:
            if len(url) > bound:
                continue
            m = grammar.Matcher(compiled)
            for byte in json.dumps(url, ensure_ascii=False).encode():
                assert m.next_token_mask().allows(byte) and m.accept_token(byte), (bound, url)
            assert m.next_token_mask().allows(0) and m.accept_token(0) and m.is_terminated()


def test_each_fit_counts_the_values_within_its_bound(values) -> None:
    sample = {"uri": values["uri"][::10]}
    (fit,) = fits(sample, (100,))
    within = [t for t in sample["uri"] if len(t) <= 100]
    assert fit.values == len(within) and 0 <= fit.held <= fit.values
    assert set(fit.refused) <= set(within) and len(fit.refused) == fit.values - fit.held
    assert [len(t) for t in fit.refused] == sorted(len(t) for t in fit.refused)
    assert all(json.dumps(t) for t in fit.refused)

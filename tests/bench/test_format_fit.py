"""The bounded-format fit count: real values of each format from the corpus, each one the
validator's checker accepts, tried under length bounds."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from bench.coverage import corpus_dir
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


def test_a_bound_the_exact_product_holds_keeps_every_value_within_it(values) -> None:
    """Up to `maxLength` 64 a format and its length are intersected exactly (a hostname's up
    to 63): whatever the validator takes within the bound, the grammar takes."""
    for fit in fits(values, (30, 60)):
        assert fit.values and fit.held == fit.values, (fit.format, fit.bound, fit.refused[:3])


def test_each_fit_counts_the_values_within_its_bound(values) -> None:
    sample = {"uri": values["uri"][::10]}
    (fit,) = fits(sample, (100,))
    within = [t for t in sample["uri"] if len(t) <= 100]
    assert fit.values == len(within) and 0 <= fit.held <= fit.values
    assert set(fit.refused) <= set(within) and len(fit.refused) == fit.values - fit.held
    assert [len(t) for t in fit.refused] == sorted(len(t) for t in fit.refused)
    assert all(json.dumps(t) for t in fit.refused)

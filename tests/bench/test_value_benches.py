"""The measuring parts of the value benchmarks: AUROC, how an argument's confidence is read,
and where a healing prompt is cut."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentkit import FieldConfidence
from bench.confidence import argument_confidence, auroc
from bench.healing import cut


@given(st.lists(st.tuples(st.sampled_from([0.1, 0.2, 0.5, 0.7, 0.9]), st.booleans()), min_size=2, max_size=40))
def test_auroc_is_the_chance_a_right_value_outscores_a_wrong_one(pairs):
    scores = np.array([s for s, _ in pairs])
    right = np.array([r for _, r in pairs])
    got = auroc(scores, right)
    wins = [(1.0 if a > b else 0.5 if a == b else 0.0) for a, ra in pairs if ra for b, rb in pairs if not rb]
    if not wins:
        assert np.isnan(got)
    else:
        assert got == pytest.approx(sum(wins) / len(wins))


def test_an_arguments_confidence_is_the_product_over_its_leaves():
    fields = {
        "/city": FieldConfidence(0.5, 0.5, 0.1, 2),
        "/dates/0": FieldConfidence(0.8, 0.9, 0.0, 1),
        "/dates/1": FieldConfidence(0.5, 0.6, 0.5, 1),
        "/datestamp": FieldConfidence(0.1, 0.1, 0.0, 1),
    }
    assert argument_confidence("dates", fields) == pytest.approx((0.4, 0.6, 0.5))
    assert argument_confidence("city", fields) == pytest.approx((0.5, 0.5, 0.9))
    assert argument_confidence("missing", fields) is None


@given(text=st.text(alphabet="ab cd", min_size=1, max_size=40), seed=st.integers(0, 100),
       where=st.sampled_from(["inside a word", "after a space"]))
def test_a_prompt_is_cut_where_asked_and_the_rest_of_its_word_kept(text, seed, where):
    found = cut(text, random.Random(seed), where)
    if found is None:
        return
    prompt, rest = found
    assert text.startswith(prompt + rest) and rest and rest.isalpha()
    assert len(prompt) >= 8
    assert (prompt[-1].isalpha() if where == "inside a word" else prompt[-1] == " ")
    after = text[len(prompt) + len(rest):]
    assert not after[:1].isalpha()

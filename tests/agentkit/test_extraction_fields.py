"""`Extraction.fields`: None exactly where there is no confidence to give (the runtime gave no
token scores, or scores that do not spell the answer), with `missing` saying why; otherwise one
entry per leaf of the answer's JSON, never empty (an empty object or list is a leaf itself)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agentkit import Extraction, extract
from agentkit._outputs.confidence import json_leaves
from runtimes import Generation, TokenScore, Usage
from runtimes.testing import RandomRuntime, ScriptedRuntime


class Empty(BaseModel):
    pass


class Price(BaseModel):
    amount: float
    tags: list[str]


@pytest.mark.parametrize("output_type", [Empty, Price, list[int], dict[str, int], bool, str])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fields_hold_every_leaf_of_the_answer_and_are_never_empty(output_type: Any, seed: int) -> None:
    found = extract(output_type, "x", runtime=RandomRuntime(seed=seed), confidence=True, max_tokens=200)
    assert isinstance(found, Extraction) and found.missing is None
    leaves, _ = json_leaves(found.text)
    assert found.fields is not None and found.fields
    assert set(found.fields) == {leaf.pointer for leaf in leaves}


@pytest.mark.parametrize("answer, why", [
    ('{"amount":1.5,"tags":[]}', "gave no token scores"),
    (Generation('{"amount":1.5,"tags":[]}', "stop", Usage(1, 3), token_scores=[]), "could not be matched"),
    (Generation("{}", "stop", Usage(1, 1), token_scores=[TokenScore(b"{", -0.1, 0.0)]), "could not be matched"),
])
def test_fields_are_none_where_there_is_no_confidence_and_missing_says_why(answer: Any, why: str) -> None:
    output_type = Empty if isinstance(answer, Generation) and answer.text == "{}" else Price
    # not held to the text: an empty required list held to it would be read again
    found = extract(output_type, "x", runtime=ScriptedRuntime([answer]), confidence=True, grounded=False)
    assert found.fields is None and found.doubtful() == []
    assert found.missing is not None and why in found.missing


def test_an_empty_object_answer_has_one_field_for_the_whole_value() -> None:
    answer = Generation("{}", "stop", Usage(1, 1), token_scores=[TokenScore(b"{}", -0.25, 0.0)])
    found = extract(Empty, "x", runtime=ScriptedRuntime([answer]), confidence=True)
    assert found.fields is not None and list(found.fields) == [""]
    assert found.doubtful(0.9) == [""]

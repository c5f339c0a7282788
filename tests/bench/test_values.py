"""The value benchmark's texts, its scoring rules and its runner (no model: a function answers)."""

from __future__ import annotations

import asyncio
import datetime
import json
from collections import Counter
from enum import Enum

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.value_texts import CASES, KINDS, MODELS
from bench.values import (
    ABSENT, Agentkit, Free, Unparseable, field_right, fields_right, json_in, measure, normal_text, parse_engine,
    report, select, summary, value_kind,
)
from runtimes.testing import FunctionRuntime


def test_there_are_at_least_120_texts_over_at_least_six_schemas_with_unique_ids():
    assert len(CASES) >= 120
    assert len({c.schema for c in CASES}) >= 6
    assert len({c.id for c in CASES}) == len(CASES)
    assert len({c.text for c in CASES}) == len(CASES)


def test_every_truth_validates_against_its_model_and_names_every_field():
    for case in CASES:
        assert set(case.truth) == set(KINDS[case.schema]) == set(MODELS[case.schema].model_fields), case.id
        case.model.model_validate(case.truth)


def test_the_split_is_half_and_half_in_every_schema():
    counts = Counter((c.schema, c.split) for c in CASES)
    for schema in MODELS:
        assert counts[schema, "tune"] == counts[schema, "measure"] > 0, schema


def test_the_texts_hold_names_from_many_scripts_and_leave_optional_fields_out():
    assert any(not c.text.isascii() for c in CASES if c.split == "measure")
    assert any(not c.text.isascii() for c in CASES if c.split == "tune")
    kinds = Counter(value_kind(c, f) for c in CASES for f in c.truth)
    assert {"name", "free string", "integer", "decimal", "enum", "date", "time", "email", "list", "bool",
            ABSENT} <= set(kinds)


def test_a_limit_spreads_over_every_schema():
    chosen = select("measure", 12)
    assert Counter(c.schema for c in chosen) == dict.fromkeys(MODELS, 2)
    assert len(select("measure")) == len(select("tune")) == len(CASES) // 2
    assert len(select("all")) == len(CASES)


@given(st.sampled_from(CASES))
def test_a_truth_scored_against_itself_is_all_right(case):
    assert all(fields_right(case, case.model.model_validate(case.truth)).values())


def changed(kind: str, value):
    """A value of the same type that the scoring must call different."""
    if value is None:
        return "something"
    if kind in ("integer", "decimal"):
        return value + 1
    if kind == "bool":
        return not value
    if kind == "date":
        return value + datetime.timedelta(days=1)
    if kind == "time":
        return "23:59" if value != "23:59" else "00:00"
    if kind == "list":
        return [*value, "someone else"]
    if isinstance(value, Enum):
        return next(member for member in type(value) if member != value)
    if kind == "enum":
        return "other" if value != "other" else "low"
    return value + " and more"


@given(st.sampled_from(CASES), st.data())
def test_a_changed_field_is_wrong_and_only_that_field(case, data):
    name = data.draw(st.sampled_from(sorted(KINDS[case.schema])))
    truth = case.model.model_validate(case.truth)
    value = changed(KINDS[case.schema][name], getattr(truth, name))
    got = fields_right(case, truth.model_copy(update={name: value}))
    assert got == {n: n != name for n in KINDS[case.schema]}


def test_an_optional_value_left_out_is_wrong_where_the_text_holds_one():
    case = next(c for c in CASES if c.schema == "contact" and c.truth["company"] is not None)
    truth = case.model.model_validate(case.truth)
    assert not fields_right(case, truth.model_copy(update={"company": None}))["company"]


@given(st.text(alphabet="abcXYZ é", min_size=1, max_size=12), st.sampled_from(["", " ", "  ", "\t", "\n"]),
       st.sampled_from(["", ".", "'", '"', ",", "!", "(", ")"]))
def test_strings_compare_ignoring_case_blanks_and_punctuation_around_them(text, blank, mark):
    variant = f"{mark}{blank}{(blank or ' ').join(text.upper().split())}{blank}{mark}"
    assert field_right("name", text, variant)
    assert normal_text(variant) == normal_text(text)


@pytest.mark.parametrize(("kind", "truth", "got", "right"), [
    ("name", "Müller GmbH", "müller  gmbh.", True),
    ("name", "São Paulo Coffee Co.", "São Paulo Coffee Co", True),
    ("name", "Ana Costa", "Ana Costas", False),
    ("code", "+49 30 5550 1234", "49 30 5550 1234", False),  # a sign is no punctuation
    ("free string", "cast-iron pans", "cast iron pans", False),  # only surrounding punctuation goes
    ("decimal", 12.5, 12.50, True),
    ("decimal", 12.5, 12.504, True),
    ("decimal", 12.5, 12.51, False),
    ("integer", 4, True, False),
    ("bool", False, 0, False),
    ("enum", "GBP", "USD", False),
    ("date", datetime.date(2025, 3, 14), datetime.date(2025, 3, 14), True),
    ("time", "09:30", "9:30", False),
    ("list", ["Alice", "Bob"], ["bob", "alice."], True),
    ("list", ["Elena", "Jonas"], ["Elena", "Elena"], False),
    ("list", ["Elena"], ["Elena", "Elena"], False),
    ("email", None, "", False),
    ("email", None, None, True),
    ("email", "a@b.c", None, False),
])
def test_scoring_rules(kind, truth, got, right):
    assert field_right(kind, truth, got) is right


def test_json_is_read_from_a_fence_or_bare_and_its_absence_is_a_failure():
    assert json_in('Here it is:\n```json\n{"a": 1}\n```\nDone.') == {"a": 1}
    assert json_in('Sure! {"a": {"b": [1, 2]}} hope that helps') == {"a": {"b": [1, 2]}}
    assert json_in('{oops} then {"a": 2}') == {"a": 2}
    with pytest.raises(Unparseable):
        json_in("I cannot answer that.")


def test_engines_are_named_with_options_for_agentkit_only():
    assert parse_engine("agentkit") == ("agentkit", {})
    assert parse_engine("agentkit:max_tokens=1024,grounded=auto,flag=true") == (
        "agentkit", {"max_tokens": 1024, "grounded": "auto", "flag": True})
    for bad in ("xgrammar", "free:max_tokens=3", "agentkit:max_tokens"):
        with pytest.raises(ValueError):
            parse_engine(bad)


def answering(cases):
    """A runtime that answers a third of `cases` with the truth, a third with text that is no JSON,
    and a third with the truth of another text of the same schema, in whichever JSON form the
    request's grammar takes (none: compact)."""
    by_text = {c.text: (i, c) for i, c in enumerate(cases)}

    def answer(messages, info):
        i, case = by_text[messages[-1]["content"]]
        if i % 3 == 1:
            return "I am not sure what you mean."
        if i % 3 == 2:
            case = next(c for c in CASES if c.schema == case.schema and c.id != case.id)
        compact = case.model.model_validate(case.truth).model_dump_json()
        forms = [compact, json.dumps(json.loads(compact), ensure_ascii=False)]
        return next((f for f in forms if info.grammar is None or info.grammar.accepts(f)), compact)

    return FunctionRuntime(answer)


def test_the_runner_counts_right_documents_fields_and_failures_by_kind():
    cases = select("all", 18)
    runtime = answering(cases)
    results, walls = asyncio.run(measure([Agentkit("agentkit", runtime, {"grounded": False}), Free(runtime)], cases,
                                         concurrency=4))
    truths = {c.id for i, c in enumerate(cases) if i % 3 == 0}
    others = [c for i, c in enumerate(cases) if i % 3 == 2]
    for label, failure in (("agentkit", "UnexpectedModelOutput"), ("free", "Unparseable")):
        outcomes = results[label]
        assert [o.case.id for o in outcomes] == [c.id for c in cases]
        assert {o.case.id for o in outcomes if o.right} == truths
        total = summary(outcomes)["total"]
        assert total["documents"] == 18 and total["all_right"] == 6
        assert total["failures"] == {failure: 6}
        n_fields = sum(len(c.truth) for c in cases)
        fields_of_truths = sum(len(c.truth) for c in cases if c.id in truths)
        assert total["fields"] == n_fields
        assert fields_of_truths <= total["fields_right"] < fields_of_truths + sum(len(c.truth) for c in others)
        assert all(s["documents"] == 3 for s in summary(outcomes)["by_schema"].values())
    assert set(walls) == {"agentkit", "free"}
    table = report(results, walls)
    assert "| agentkit | " in table and "| free | " in table and f"| {ABSENT} |" in table

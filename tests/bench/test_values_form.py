"""`bench.values`'s `agentkit:form=...`: each engine's output grammars in the form it names,
engines one after another in one run, and the default engine's form kept."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentkit._outputs import extract as extraction, output
from bench.value_texts import CASES
from bench.values import Agentkit, parse_engine
from runtimes.testing import FunctionRuntime


def answer_in(form: str):
    """A runtime answering every text with its true values, written in `form`."""
    separators = (", ", ": ") if form == "spaced" else (",", ":")

    def fn(messages, info):
        case = next(c for c in CASES if c.text == messages[-1]["content"])
        value = case.model.model_validate(case.truth).model_dump(mode="json", exclude_none=False)
        return json.dumps(value, ensure_ascii=False, separators=separators)

    return FunctionRuntime(fn)


def test_each_engine_holds_the_answer_to_its_own_form():
    case = CASES[0]
    default = output.JSON_FORM
    engines = {spec: Agentkit(spec, answer_in(spec.partition("=")[2] or "compact"), parse_engine(spec)[1])
               for spec in ("agentkit:form=spaced", "agentkit")}
    try:
        for spec, engine in engines.items():
            assert asyncio.run(engine.read(case)) == case.model.model_validate(case.truth), spec
            assert output.JSON_FORM == engine.form
        assert engines["agentkit"].form == default
    finally:
        output.JSON_FORM = default
        extraction._spec.cache_clear()


@pytest.mark.parametrize("spec", ["agentkit:form=wide", "agentkit:form=blanks0", "agentkit:form=3"])
def test_an_unknown_form_is_refused_when_the_engine_is_parsed(spec):
    with pytest.raises(ValueError, match="form"):
        parse_engine(spec)

"""The form of an output's JSON (`agentkit._outputs.output.JSON_FORM`), shared by every
extraction entry point and `Agent(output_type=...)`; and, on a runtime that cannot close a
document at its budget, an output grammar whose longest sentence fits `max_tokens` bytes."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import grammar
from agentkit import Agent, UnexpectedModelOutput, extract, stream_extract
from agentkit._outputs import extract as extraction, output
from agentkit._outputs.output import OutputSpec
from runtimes.testing import ScriptedRuntime

SPACED = {"separators": (", ", ": ")}


class Order(BaseModel):
    customer: str
    items: list[str]
    quantity: int
    note: str | None = None


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def spaced(value) -> str:
    return json.dumps(value, ensure_ascii=False)


ORDER = {"customer": "Müller GmbH", "items": ["bowls", "cups"], "quantity": 4, "note": None}


class ServerScripted(ScriptedRuntime):
    """A scripted runtime that, as a server, cannot close a document at its token budget."""

    steers_budget = False


@pytest.fixture
def spaced_form(monkeypatch):
    """Output grammars built while the test runs take json.dumps's separators (none built
    before is reused, and none built here outlives the test)."""
    monkeypatch.setattr(output, "JSON_FORM", SPACED)
    extraction._spec.cache_clear()
    yield
    extraction._spec.cache_clear()


def test_every_entry_point_holds_the_answer_to_the_form(spaced_form):
    class Line(BaseModel):
        item: str
        quantity: int

    value = {"item": "espresso machines", "quantity": 2}
    assert extract(Line, "two espresso machines", runtime=ScriptedRuntime([spaced(value)])) == Line(**value)
    with pytest.raises(UnexpectedModelOutput):
        extract(Line, "two espresso machines", runtime=ScriptedRuntime([compact(value)]), max_retries=0)
    *_, last = stream_extract(Line, "two espresso machines", runtime=ScriptedRuntime([spaced(value)]))
    assert last == Line(**value)
    agent = Agent([], ScriptedRuntime([spaced(value)]), output_type=Line)
    assert agent.run_sync("two espresso machines").output == Line(**value)


SHORT = {"customer": "M", "items": [], "quantity": 4}  # 45 bytes as json.dumps writes it


@pytest.mark.parametrize("max_tokens", [64, 100, 512])
def test_on_a_server_the_output_grammar_fits_max_tokens_bytes(max_tokens, spaced_form):
    rt = ServerScripted([spaced(SHORT)])
    assert extract(Order, "M ordered 4", runtime=rt, max_tokens=max_tokens) == Order(**SHORT)
    longest = grammar.longest_bytes(rt.calls[0].grammar)
    assert longest is not None and longest <= max_tokens


def test_in_process_the_output_grammar_is_sent_whole(spaced_form):
    rt = ScriptedRuntime([spaced(ORDER)])
    extract(Order, "Müller GmbH ordered 4: bowls and cups", runtime=rt)
    assert grammar.longest_bytes(rt.calls[0].grammar) is None  # the budget steering ends it


def test_on_a_server_a_streamed_extraction_fits_max_tokens_bytes(spaced_form):
    rt = ServerScripted([spaced(SHORT)])
    list(stream_extract(Order, "M ordered 4", runtime=rt, max_tokens=80))
    assert grammar.longest_bytes(rt.calls[0].grammar) <= 80


class TemplatedScripted(ScriptedRuntime):
    """A scripted runtime whose model's chat template writes JSON as json.dumps does."""

    json_separators = (", ", ": ")


@pytest.mark.parametrize("runtime_class, write, other", [
    (TemplatedScripted, spaced, compact), (ScriptedRuntime, compact, spaced)])
def test_by_default_an_extraction_is_held_to_the_form_the_models_template_shows(runtime_class, write, other,
                                                                               monkeypatch):
    monkeypatch.setattr(output, "JSON_FORM", None)
    extraction._spec.cache_clear()
    value = {"customer": "M", "items": ["a"], "quantity": 4, "note": None}
    assert extract(Order, "M ordered 4 a", runtime=runtime_class([write(value)])) == Order(**value)
    with pytest.raises(UnexpectedModelOutput):
        extract(Order, "M ordered 4 a", runtime=runtime_class([other(value)]), max_retries=0)
    grounded = runtime_class([write(value)])
    assert extract(Order, "M ordered 4 a", runtime=grounded, grounded=True) == Order(**value)


def test_a_form_set_for_every_model_overrides_the_templates(spaced_form):
    value = {"customer": "M", "items": [], "quantity": 4, "note": None}
    rt = ScriptedRuntime([spaced(value)])
    rt.json_separators = None
    # not held: its empty required list, held to the text, would be read again
    assert extract(Order, "M ordered 4", runtime=rt, grounded=False) == Order(**value)


def test_an_agents_typed_answer_is_held_to_the_form_its_runtimes_template_shows(monkeypatch):
    monkeypatch.setattr(output, "JSON_FORM", None)

    class Line(BaseModel):
        item: str
        quantity: int

    value = {"item": "bowls", "quantity": 4}
    agent = Agent([], output_type=Line, max_retries=0)
    for runtime, ok in [(TemplatedScripted([spaced(value)]), True), (ScriptedRuntime([compact(value)]), True),
                        (TemplatedScripted([compact(value)]), False)]:
        with agent.override(runtime=runtime):
            if ok:
                assert agent.run_sync("4 bowls").output == Line(**value)
            else:
                with pytest.raises(UnexpectedModelOutput):
                    agent.run_sync("4 bowls")

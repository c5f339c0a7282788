"""The right-answers benchmark: its requests are answerable from its tools alone and split
evenly, the scoring rule reads numbers and words as fixed, and a run through the agent counts
what the report says. A function of the conversation stands in for the model: nothing is
downloaded."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import agent_values
from bench.agent_values import (
    call_matches,
    numbers,
    parse_options,
    run_mode,
    select,
    states_number,
    states_word,
    summarize,
)
from bench.values_world import KINDS, REQUESTS, TOOLS, Request
from runtimes.testing import FunctionRuntime, RequestInfo

BY_NAME = {t.name: t for t in TOOLS}
WITH_CALLS = [r for r in REQUESTS if r.calls]
NUMERIC = [r for r in REQUESTS if isinstance(r.answer, (int, float))]
WORDS = [r for r in REQUESTS if isinstance(r.answer, str)]


def results_of(request: Request) -> list[Any]:
    return [asyncio.run(BY_NAME[name].call(BY_NAME[name].validate(arguments))) for name, arguments in request.calls]


# --- the data -------------------------------------------------------------------------------


def test_there_are_enough_requests_and_tools_and_ids_are_unique() -> None:
    assert len(REQUESTS) >= 40 and len(TOOLS) >= 10
    assert len({r.id for r in REQUESTS}) == len(REQUESTS)
    assert sum(r.kind == "no-tool" for r in REQUESTS) >= 8


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_splits_evenly_into_tune_and_measure(kind: str) -> None:
    halves = [sum(r.kind == kind and r.split == split for r in REQUESTS) for split in ("tune", "measure")]
    assert halves[0] == halves[1] > 0


@pytest.mark.parametrize("request_", REQUESTS, ids=[r.id for r in REQUESTS])
def test_each_kind_has_its_number_of_calls_and_an_answer(request_: Request) -> None:
    assert len(request_.calls) == {"one-step": 1, "two-step": 2, "no-tool": 0}[request_.kind]
    assert (request_.answer is None) == (request_.kind == "no-tool")


@pytest.mark.parametrize("request_", WITH_CALLS, ids=[r.id for r in WITH_CALLS])
def test_the_needed_calls_reproduce_the_expected_answer(request_: Request) -> None:
    last = json.dumps(results_of(request_)[-1])
    if isinstance(request_.answer, str):
        assert re.search(rf"\b{request_.answer}\b", last, re.IGNORECASE)
    else:
        assert any(abs(n - request_.answer) <= 0.01 for n in numbers(last)), (last, request_.answer)


@pytest.mark.parametrize("request_", WITH_CALLS, ids=[r.id for r in WITH_CALLS])
def test_each_argument_comes_from_the_request_or_an_earlier_result(request_: Request) -> None:
    seen = request_.text
    for (name, arguments), result in zip(request_.calls, results_of(request_), strict=True):
        for key, value in arguments.items():
            if isinstance(value, str) and key not in ("to", "from_unit", "to_unit"):
                assert value.lower() in seen.lower() or _currency_named(value, seen), f"{name}({key}={value!r})"
            elif isinstance(value, (int, float)):
                assert any(abs(n - value) <= 0.01 for n in numbers(seen)), f"{name}({key}={value!r})"
        seen += " " + json.dumps(result)


def _currency_named(code: str, text: str) -> bool:
    words = {"USD": "us dollars", "JPY": "yen", "CAD": "canadian dollars", "EUR": "euro", "GBP": "british pounds"}
    return words.get(code, "\0") in text.lower()


def test_no_docstring_example_is_a_key_of_a_table() -> None:
    """A call that copies an example from the tool listing fails, so it never scores."""
    listing = json.dumps([t.to_openai() for t in TOOLS])
    examples = re.findall(r'for example \\"([^\\]+)\\"', listing) + re.findall(r"for example (\d+)", listing)
    assert {"pen", "A-1", "Paris", "CHF", "SEK", "1001"} <= set(examples)
    for request in WITH_CALLS:
        for _, arguments in request.calls:
            assert not {str(v) for v in arguments.values()} & set(examples), request.id


def test_every_tool_and_parameter_is_described() -> None:
    for t in TOOLS:
        function = t.to_openai()["function"]
        assert function["description"]
        assert all(p.get("description") for p in function["parameters"]["properties"].values()), t.name


def test_no_word_answer_is_given_away_by_its_request() -> None:
    for request in WORDS:
        assert not states_word(request.text, str(request.answer)), request.id


def test_select_takes_the_split_and_a_limit_from_each_kind_in_turn() -> None:
    assert len(select("measure", None)) + len(select("tune", None)) == len(select("all", None)) == len(REQUESTS)
    assert [r.kind for r in select("measure", 4)] == ["one-step", "two-step", "no-tool", "one-step"]


# --- the scoring rule -------------------------------------------------------------------------

@given(st.sampled_from(NUMERIC), st.sampled_from(["{}", "{:,}", "{:,.2f}", "about {:.3f}", "${:,.2f}"]))
def test_a_number_is_read_however_it_is_written(request_: Request, form: str) -> None:
    assert states_number(f"The answer is {form.format(request_.answer)}.", float(request_.answer), [])


@given(st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 2)), st.floats(-0.0099, 0.0099))
def test_a_number_within_a_hundredth_is_the_expected_one(expected: float, off: float) -> None:
    assert states_number(f"It is {expected + off:.4f}.", expected, [])


@given(st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 2)), st.floats(0.011, 100.0), st.booleans())
def test_a_number_further_off_is_not(expected: float, off: float, below: bool) -> None:
    stated = expected - off if below else expected + off
    assert not states_number(f"It is {stated:.4f}.", expected, [])


@given(st.sampled_from(NUMERIC), st.integers(1, 10**7).map(lambda n: n / 100))
def test_a_number_the_conversation_does_not_hold_makes_the_answer_wrong(request_: Request, extra: float) -> None:
    answer = float(request_.answer)
    held = numbers(request_.text) + [n for r in results_of(request_) for n in numbers(json.dumps(r))]
    said = f"It is {answer}, about {extra} more or less."
    assert states_number(said, answer, held) == any(abs(abs(h) - extra) <= 0.01 for h in [*held, answer])
    assert states_number(f"It is {answer}; the request said {request_.text}", answer, held)


def test_numbers_in_ids_and_dates_read_apart_and_separators_drop() -> None:
    assert numbers("Order K-4582, placed 2024-03-18, is 1,204,557.5 or -2.5 and 3, 4") == [
        4582, 2024, 3, 18, 1204557.5, -2.5, 3, 4]


@given(st.sampled_from(WORDS), st.sampled_from(["{}", "{}.", "It is {} now.", "{} in the city", "mostly {}!"]),
       st.sampled_from([str.lower, str.upper, str.title]))
def test_a_word_is_read_in_any_case(request_: Request, form: str, case: Any) -> None:
    assert states_word(form.format(case(str(request_.answer))), str(request_.answer))


@given(st.sampled_from(WORDS), st.sampled_from(["not", "no", "isn't", "Not", "NO"]))
def test_a_negated_word_is_wrong_even_beside_the_word(request_: Request, negation: str) -> None:
    word = str(request_.answer)
    assert not states_word(f"It is {negation} {word}.", word)
    assert not states_word(f"{word}? Well, it is {negation} {word}.", word)


@given(st.sampled_from(WORDS))
def test_a_word_inside_a_longer_word_is_not_the_word(request_: Request) -> None:
    assert not states_word(f"It is {request_.answer}ish and un{request_.answer}.", str(request_.answer))


def test_calls_match_on_the_arguments_that_matter() -> None:
    assert call_matches(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": " oslo"}))
    assert not call_matches(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Paris"}))
    assert call_matches(("multiply", {"a": 4.35, "b": 12}), ("multiply", {"a": 12, "b": 4.355}))
    assert not call_matches(("multiply", {"a": 4.35, "b": 12}), ("multiply", {"a": 4.35, "b": 13}))
    assert call_matches(("convert_temperature", {"celsius": 7.5, "to": "fahrenheit"}),
                        ("convert_temperature", {"celsius": "7.50", "to": "Fahrenheit"}))
    assert not call_matches(("get_employee", {"employee_id": 3124}), ("get_population", {"employee_id": 3124}))


def test_agent_options_read_values_as_json_where_they_parse() -> None:
    assert parse_options(["tool_choice=required", "max_steps=4", "answer_on_repeat=false"]) == {
        "tool_choice": "required", "max_steps": 4, "answer_on_repeat": False}
    assert parse_options(["default"]) == {}
    with pytest.raises(ValueError, match="OPTION=VALUE"):
        parse_options(["required"])


# --- a run through the agent ------------------------------------------------------------------

MEASURE = select("measure", None)
ONE = [r for r in MEASURE if r.kind == "one-step"]
TWO = [r for r in MEASURE if r.kind == "two-step"]
NONE = [r for r in MEASURE if r.kind == "no-tool"]
BY_ID = {r.id: r for r in REQUESTS}
INVENTS = BY_ID["temp_lima"]   # makes its call, then adds a number nobody gave
SOLVES = BY_ID["graz_k"]       # makes both calls, the second from the first's result
LOOPS = BY_ID["temp_3124"]     # calls get_employee with a new id every turn until max_steps
DECLINES = NONE[:2]     # answers without a call; the other no-tool requests call get_weather("Paris")


def model(messages: Any, info: RequestInfo) -> str:
    """Solves some requests, fails others, each in a way the report counts."""
    asked = next(m["content"] for m in messages if m["role"] == "user")
    request = next(r for r in REQUESTS if r.text == asked)
    results = [m["content"] for m in messages if m["role"] == "tool"]
    done = len(results)
    if request.kind == "no-tool":
        if request in DECLINES or done:
            return "Sorry, I cannot help with that."
        return _calls(("get_weather", {"city": "Paris"}))
    name, arguments = request.calls[0]
    if request is LOOPS:
        return _calls((name, {**arguments, "employee_id": 3124 + done}))
    if done == 0:
        return _calls(request.calls[0])
    if request is SOLVES and done == 1:
        celsius = json.loads(results[0])["temperature_celsius"]
        return _calls(("convert_temperature", {"celsius": celsius, "to": request.calls[1][1]["to"]}))
    if request.kind == "two-step" and request is not SOLVES:
        return "It is 12345.6."
    return f"The result is {results[-1]}." + (" That is about 999 more than last year." if request is INVENTS else "")


def _calls(*calls: tuple[str, dict[str, Any]]) -> str:
    return json.dumps([{"name": name, "arguments": arguments} for name, arguments in calls])


def test_a_run_counts_right_answers_calls_declines_and_errors() -> None:
    # Arguments free: the scripted model's calls are the requests' own ("umbrella" for "umbrellas").
    outcomes = run_mode(MEASURE, FunctionRuntime(model), {"grounded_arguments": False})
    (summary,) = summarize(outcomes)
    assert summary.mode == "grounded_arguments=False"
    assert summary.right_by_kind == {"one-step": (9, 10), "two-step": (1, 8), "no-tool": (2, 5)}
    assert summary.right == (12, 23)
    assert summary.needed_made == (11, 18) and summary.one_step_needed_made == (10, 10)
    assert summary.spurious == (3, 23) and summary.spurious_calls == 3
    assert summary.declines == (2, 5)
    assert summary.errors == {"StepLimitExceeded": 1}
    by_id = {o.request: o for o in outcomes}
    assert by_id[LOOPS.id].steps == 8 and not by_id[LOOPS.id].needed_made
    assert by_id[SOLVES.id].calls == [f'get_weather({{"city": "{SOLVES.calls[0][1]["city"]}"}})',
                                      'convert_temperature({"celsius": -2.5, "to": "kelvin"})']
    assert summary.mean_steps == pytest.approx((10 * 2 + 3 + 8 + 6 * 2 + 2 * 1 + 3 * 2) / 23)
    assert "| grounded_arguments=False | 12/23 (52%) | 9/10 (90%) | 1/8 (12%) | 2/5 (40%) | 11/18 (61%) | 10/10 (100%) |" \
        in agent_values.report(outcomes)


def test_the_command_runs_each_agent_mode_and_writes_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(agent_values.models, "runtime", lambda name: FunctionRuntime(model))
    out = tmp_path / "out.json"
    assert agent_values.main(["--limit", "3", "--agent", "default", "--agent", "tool_choice=required",
                              "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| default |" in table and "| tool_choice=required |" in table
    written = json.loads(out.read_text())
    assert [s["mode"] for s in written["summaries"]] == ["default", "tool_choice=required"]
    assert len(written["outcomes"]) == 6 and written["split"] == "measure"

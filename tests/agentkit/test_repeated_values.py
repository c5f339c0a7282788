"""One value taken for two held fields: the extraction is read again with one of them kept from
it (a text: the later field; a number: the field the model was less sure of)."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import BaseModel

from agentkit import extract
from agentkit._outputs.grounding import FieldGrounding, grounded_grammar, keep_from, numbers_inside, repeated_values
from agentkit._outputs.output import OutputSpec
from runtimes import Generation, TokenScore, Usage
from runtimes.testing import ScriptedRuntime

TEXT = "Please bill Café Lumière for 3 espresso machines at 1249.00 euros apiece."


class OrderLine(BaseModel):
    customer: str
    item: str
    quantity: int
    unit_price: Decimal


class Local:
    steers_budget = True


def line(customer: str, item: str, quantity: int, unit_price: int) -> str:
    return json.dumps({"customer": customer, "item": item, "quantity": quantity, "unit_price": unit_price},
                      ensure_ascii=False, separators=(",", ":"))


def test_a_text_taken_twice_is_read_again_with_the_later_field_kept_from_it():
    copied = line("Café Lumière", "Café Lumière", 3, 1249)
    right = line("Café Lumière", "espresso machines", 3, 1249)
    rt = ScriptedRuntime([copied, right])
    found = extract(OrderLine, TEXT, runtime=rt, details=True)
    assert found.value.item == "espresso machines"
    again = rt.calls[1].grammar
    assert again.accepts(right) and not again.accepts(copied)
    for near in ("Café", "Lumière", "Café Lumière for 3 espresso machines"):  # a run of it, or a span holding it
        assert not again.accepts(line("Café Lumière", near, 3, 1249))
    assert found.usage.completion_tokens == len(copied.encode()) + len(right.encode())  # both readings counted


def scored(text: str, unsure: str) -> Generation:
    """`text` with every byte likely but those of the first `unsure` value (as JSON writes it)."""
    data = text.encode()
    at, size = data.index(unsure.encode()), len(unsure.encode())
    scores = [TokenScore(bytes([b]), -3.0 if at <= i < at + size else -0.01) for i, b in enumerate(data)]
    return Generation(text, "grammar_complete", Usage(10, len(scores)), token_scores=scores)


@pytest.mark.parametrize(("unsure", "kept"), [(':3,', "quantity"), (':3}', "unit_price")])
def test_a_number_taken_twice_is_kept_from_the_field_the_model_was_less_sure_of(unsure, kept):
    twice = line("Café Lumière", "espresso machines", 3, 3)
    moved = line("Café Lumière", "espresso machines", 1249, 3) if kept == "quantity" else \
        line("Café Lumière", "espresso machines", 3, 1249)
    rt = ScriptedRuntime([scored(twice, unsure), moved])
    value = extract(OrderLine, TEXT, runtime=rt)
    assert getattr(value, kept) == 1249  # the text's other number
    again = rt.calls[1].grammar
    assert rt.calls[0].grammar.accepts(twice) and not again.accepts(twice)
    other = "unit_price" if kept == "quantity" else "quantity"
    assert keep_from([(("quantity", "unit_price"), [3.0, "3"])], {kept: 0.01, other: 0.9}, set()) == {kept: [3.0, "3"]}


def test_without_scores_a_number_is_left_to_the_first_field():
    assert keep_from([(("quantity", "unit_price"), [3.0, "3"])], {}, set()) == {"unit_price": [3.0, "3"]}


def test_a_text_is_left_to_the_first_required_field_that_took_it():
    shared = [(("recipient", "city", "country"), ["Dublin"])]
    assert keep_from(shared, {}, {"city", "country"}) == {"recipient": ["Dublin"], "country": ["Dublin"]}
    assert keep_from(shared, {}, set()) == {"city": ["Dublin"], "country": ["Dublin"]}  # none required: the first
    email = [(("name", "email"), ["sofia.p@athensmail.gr"])]
    assert keep_from(email, {}, {"name"}) == {"name": ["sofia.p@athensmail.gr"]}  # its name says its shape


def test_where_the_text_holds_no_other_value_the_field_is_read_as_before():
    spec = OutputSpec(OrderLine)
    text = "Café Lumière: 3 at 3."
    g, record = grounded_grammar(spec, text, "auto", Local(), None, {"unit_price": [3.0, "3"]})
    assert g is not None and g.accepts(line("Café Lumière", "Café Lumière", 3, 3))
    assert all(r.grounded for r in record)  # never an ungrounded field for it


def test_no_repeat_no_second_reading():
    rt = ScriptedRuntime([line("Café Lumière", "espresso machines", 3, 1249)])
    extract(OrderLine, TEXT, runtime=rt)
    assert len(rt.calls) == 1


_HELD = tuple(FieldGrounding(f"/{k}", kind, True) for k, kind in
              (("a", "string"), ("b", "string"), ("c", "number"), ("d", "number"), ("e", "string")))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdef"), st.sampled_from(["Oslo", "oslo ", "Lima", 3, 3.0, "3", 4, None, True])))
def test_repeats_are_the_held_fields_whose_value_an_earlier_held_field_took(document):
    found = repeated_values(json.dumps(document), _HELD)
    held = {g.path[1:] for g in _HELD}

    def norm(v):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        if isinstance(v, str) and v.strip() == v and v.isdigit():
            return float(v)
        return " ".join(v.split()).casefold() if isinstance(v, str) else None

    expected, first = [], {}
    for key, value in document.items():
        n = norm(value)
        if key not in held or n is None:
            continue
        if n in first:
            expected.append((first[n], key))
        else:
            first[n] = key
    assert sorted((keys[0], later) for keys, _ in found for later in keys[1:]) == sorted(expected)
    assert all(list(keys) == sorted(keys, key=list(document).index) for keys, _ in found)  # in the document's order


@pytest.mark.parametrize(("text", "customer", "counted", "item", "quantity", "price", "also_refused"), [
    ("Order from Łódź Textiles: 120 cotton towels, 3.75 euros a piece.", "Łódź Textiles", "120 cotton towels",
     "cotton towels", 120, 3.75, []),
    ("Kofi Boateng ordered a dozen solar lanterns at 32 pounds each.", "Kofi Boateng", "dozen solar lanterns",
     "solar lanterns", 12, 32, ["a dozen solar lanterns"]),  # in words: refused as a word of its own
])
def test_a_text_holding_the_number_a_number_field_took_is_read_again_without_it(text, customer, counted, item, quantity,
                                                                                price, also_refused):
    first, right = line(customer, counted, quantity, price), line(customer, item, quantity, price)
    rt = ScriptedRuntime([first, right])
    assert extract(OrderLine, text, runtime=rt).item == item
    again = rt.calls[1].grammar
    assert not again.accepts(first) and again.accepts(right)
    for near in also_refused:
        assert not again.accepts(line(customer, near, quantity, price))


@pytest.mark.parametrize(("text", "taken", "inside"), [
    ("120 cotton towels", "120", True), ("towels (120)", "120", True), ("120, then more", "120", True),
    ("1,120 towels", "120", False), ("1200 towels", "120", False), ("12.5 kg", "12", False), ("3.75 each", "3.75", True),
    ("towels", "120", False), ("dozen solar lanterns", "12", True), ("two kilim rugs", "2", True),
    ("twelve mugs", "2", False), ("solar lanterns", "12", False)])
def test_a_number_is_inside_a_text_where_it_stands_as_a_number_of_its_own(text, taken, inside):
    grounding = (FieldGrounding("/item", "string", True), FieldGrounding("/quantity", "number", True))
    found = numbers_inside(json.dumps({"item": text, "quantity": taken}), grounding)
    assert bool(found) == inside


@given(st.lists(st.sampled_from(["12", "120", "1,120", "3.75", "12.5", "towels", "x12", "(12)", "12,", "12."]),
                min_size=1, max_size=5), st.sampled_from(["12", "120", "3.75", "12.5"]))
def test_what_is_refused_is_the_text_the_model_wrote(words, taken):
    text = " ".join(words)
    grounding = (FieldGrounding("/item", "string", True), FieldGrounding("/quantity", "number", True))
    found = numbers_inside(json.dumps({"item": text, "quantity": taken}), grounding)
    if found:
        assert re.search(found["item"][0]["not"]["pattern"], text)
    if taken not in text:
        assert not found

"""Grounded extraction's choices: which fields a mode holds to the text, the `Grounded` marks
that override it, the grammar built per text and the record of what was held."""

from __future__ import annotations

import datetime
import json
import re
from typing import Annotated, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from agentkit._errors import InvalidArgument, UnexpectedModelOutput
from agentkit._outputs.grounding import FieldGrounding, check_mode, grounded_grammar, marked_schema, repeated_items
from agentkit._outputs.output import OutputSpec
from agentkit._tools.grounded import Grounded

TEXT = "Order from Müller GmbH: 15 yoga mats at £18.50 each, for Ann Lee and Bo Chen."


class Order(BaseModel):
    customer: str
    item: Annotated[str, Grounded(False)]
    quantity: int
    price: float
    currency: Literal["GBP", "USD"]
    rush: bool
    people: list[str]
    note: str | None = None
    summary: str = Field(description="the subject line")


class Local:
    steers_budget = True


class Server:
    steers_budget = False


def held(mode) -> dict[str, str]:
    _, chosen = marked_schema(OutputSpec(Order).schema, TEXT, mode)
    return {path: kind for path, kind in chosen.values()}


def test_true_holds_every_plain_string_list_item_and_number_but_not_enums_bools_or_opted_out_fields():
    assert held(True) == {"/customer": "string", "/quantity": "number", "/price": "number", "/people/*": "string",
                          "/note": "string", "/summary": "string", "/currency": "enum"}


def test_false_holds_nothing_but_what_a_field_marks_itself():
    class Marked(BaseModel):
        name: Annotated[str, Grounded()]
        tags: list[Annotated[str, Grounded()]]
        code: str = Field(json_schema_extra={"grounded": True})
        free: str

    _, chosen = marked_schema(OutputSpec(Marked).schema, TEXT, False)
    assert sorted(path for path, _ in chosen.values()) == ["/code", "/name", "/tags/*"]


def test_auto_leaves_composed_fields_and_reworded_formats_free():
    chosen = held("auto")
    assert "/note" not in chosen and "/customer" in chosen and "/quantity" in chosen and "/summary" in chosen
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}, "n": {"type": "integer"}}}
    _, found = marked_schema(schema, "no numbers here", "auto")
    assert found == {}


def test_auto_holds_a_place_or_a_persons_name_to_spans_without_digits():
    class Address(BaseModel):
        recipient: str | None = None
        street: str
        city: str
        postal_code: str = Field(pattern=r"^[0-9]{5}$")

    text = "Ship to Anna Müller, Hauptstraße 5, 10115 Berlin."
    marked, chosen = marked_schema(OutputSpec(Address).schema, text, "auto")
    assert {path for path, _ in chosen.values()} == {"/recipient", "/street", "/city", "/postal_code"}
    g, _ = grounded_grammar(OutputSpec(Address), text, "auto", Local())
    document = {"recipient": "Anna Müller", "street": "Hauptstraße 5", "city": "Berlin", "postal_code": "10115"}
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    assert g.accepts(json.dumps(document, **compact))
    for field, digits in (("city", "10115 Berlin"), ("recipient", "Hauptstraße 5")):
        assert not g.accepts(json.dumps({**document, field: digits}, **compact))
    assert marked["properties"]["postal_code"]["pattern"] == "^[0-9]{5}$"  # a field's own pattern stands
    _, plain = marked_schema(OutputSpec(Address).schema, text, False)
    assert not plain  # nothing held, nothing narrowed


def test_auto_holds_an_email_to_spans_with_an_at_sign_where_the_text_writes_one():
    class Ticket(BaseModel):
        summary: str
        customer_email: str | None = None

    def shaped(text: str) -> bool:
        marked, _ = marked_schema(OutputSpec(Ticket).schema, text, "auto")
        return "pattern" in str(marked["properties"]["customer_email"])

    text = "Subject: refund. Write to me at e.dubois@orange.fr, please."
    g, _ = grounded_grammar(OutputSpec(Ticket), text, "auto", Local())
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    assert g.accepts(json.dumps({"summary": "refund", "customer_email": "e.dubois@orange.fr"}, **compact))
    assert not g.accepts(json.dumps({"summary": "refund", "customer_email": "Write to me"}, **compact))
    assert shaped(text) and not shaped("Subject: refund. No address given.")  # no "@": no shape to fall back on


class Contact(BaseModel):
    name: str
    email: str | None = None
    phone: str | None = None


COMPACT = {"ensure_ascii": False, "separators": (",", ":")}


def test_auto_writes_an_optional_email_or_phone_the_text_gives_and_none_where_it_gives_none():
    text = "Reach Jürgen Müller at j.mueller@brandt-soehne.de or +49 30 5550 1234."
    g, _ = grounded_grammar(OutputSpec(Contact), text, "auto", Local())
    given_both = {"name": "Jürgen Müller", "email": "j.mueller@brandt-soehne.de", "phone": "+49 30 5550 1234"}
    assert g.accepts(json.dumps(given_both, **COMPACT))
    for field in ("email", "phone"):
        assert not g.accepts(json.dumps({**given_both, field: None}, **COMPACT))
        assert not g.accepts(json.dumps({k: v for k, v in given_both.items() if k != field}, **COMPACT))
    assert not g.accepts(json.dumps({**given_both, "phone": "Jürgen Müller"}, **COMPACT))
    g, _ = grounded_grammar(OutputSpec(Contact), "Ask Jürgen Müller, in room 12.", "auto", Local())
    assert g.accepts(json.dumps({"name": "Jürgen Müller", "email": None, "phone": None}, **COMPACT))
    assert not g.accepts(json.dumps({"name": "Jürgen Müller", "email": None, "phone": "room 12"}, **COMPACT))
    g, _ = grounded_grammar(OutputSpec(Contact), "Ann Lee started on 2024-02-11, order 55210.", "auto", Local())
    assert g.accepts(json.dumps({"name": "Ann Lee", "email": None, "phone": None}, **COMPACT))  # no phone number


@pytest.mark.parametrize("mode", [True, False])
def test_only_auto_decides_an_optional_email_or_phone_from_the_text(mode):
    g, _ = grounded_grammar(OutputSpec(Contact), "Ask Ann Lee: ann@lee.io, 555 0192.", mode, Local())
    g = g or OutputSpec(Contact).grammar_in({"separators": (",", ":")})
    assert g.accepts(json.dumps({"name": "Ann Lee", "email": None, "phone": None}, **COMPACT))


def test_a_tools_marks_made_before_any_conversation_leave_an_optional_phone_as_it_is():
    class Args(BaseModel):
        name: str
        phone: str | None

    marked, chosen = marked_schema(OutputSpec(Args).schema, "", "auto", numbers_if_written=False,
                                   optional_held=False, text_known=False)
    assert {"type": "null"} in marked["properties"]["phone"]["anyOf"] and "/phone" in {p for p, _ in chosen.values()}


class Price(BaseModel):
    amount: float
    currency: Literal["GBP", "USD", "EUR", "CHF"]
    priority: Literal["low", "high"] = "low"


@pytest.mark.parametrize("text, amount, codes", [
    ("Nordic Wool Scarf, £35, available now.", 35, ["GBP"]),
    ("120 cotton towels, 3.75 euros a piece.", 3.75, ["EUR"]),
    ("They cost 65 Swiss francs apiece.", 65, ["CHF"]),
    ("Two standing desks, $389 each.", 389, ["USD"]),
    ("€12 here or 14 dollars there.", 12, ["USD", "EUR"]),
    ("It costs 12, as before.", 12, ["GBP", "USD", "EUR", "CHF"]),  # none written: every code stays
])
def test_auto_holds_a_currency_code_to_the_currencies_the_text_writes(text, amount, codes):
    marked, chosen = marked_schema(OutputSpec(Price).schema, text, "auto")
    assert marked["properties"]["currency"]["enum"] == codes
    assert ("/currency" in {p for p, _ in chosen.values()}) is (len(codes) < 4)
    assert marked["properties"]["priority"]["enum"] == ["low", "high"]  # not currencies: as it was
    g, record = grounded_grammar(OutputSpec(Price), text, "auto", Local())
    for code in ["GBP", "USD", "EUR", "CHF"]:
        assert g.accepts(json.dumps({"amount": amount, "currency": code, "priority": "low"}, **COMPACT)) is (
            code in codes)
    assert (FieldGrounding("/currency", "enum", True) in record) is (len(codes) < 4)


def test_a_currency_field_marked_free_or_a_tools_marks_are_not_narrowed():
    class Marked(BaseModel):
        currency: Annotated[Literal["GBP", "USD"], Grounded(False)]

    marked, _ = marked_schema(OutputSpec(Marked).schema, "£35", "auto")
    assert marked["properties"]["currency"]["enum"] == ["GBP", "USD"]
    marked, _ = marked_schema(OutputSpec(Price).schema, "", "auto", text_known=False)
    assert marked["properties"]["currency"]["enum"] == ["GBP", "USD", "EUR", "CHF"]
    marked, _ = marked_schema(OutputSpec(Price).schema, "£35", False)
    assert marked["properties"]["currency"]["enum"] == ["GBP", "USD", "EUR", "CHF"]


def test_a_field_that_marks_itself_is_not_decided_by_its_name():
    class Marked(BaseModel):
        name: str
        phone: Annotated[str | None, Grounded(False)] = None

    marked, _ = marked_schema(OutputSpec(Marked).schema, "Call Ann Lee on 555 0192.", "auto")
    assert {"type": "null"} in marked["properties"]["phone"]["anyOf"] and "phone" not in marked["required"]


@given(st.lists(st.sampled_from(["Ann", "Lee", "at", "room", "12", "+44", "20", "7946", "0958", "(0)", "-", "x@y.io",
                                 ",", "."]), max_size=12))
def test_an_optional_phone_is_none_exactly_where_the_text_writes_no_phone_number(words):
    text = " ".join(words)
    g, _ = grounded_grammar(OutputSpec(Contact), f"Ann Lee {text}", "auto", Local())
    writes_one = any(sum(c.isdigit() for c in m.group()) >= 7
                     for m in re.finditer(r"(?<!\w)[+(]?\d[\d ().-]{4,}\d(?!\w)", text))
    assert g.accepts(json.dumps({"name": "Ann Lee", "email": None, "phone": None}, **COMPACT)) is (
        not writes_one and "@" not in text)
    none_phone = g.accepts(json.dumps({"name": "Ann Lee", "email": "x@y.io", "phone": None}, **COMPACT))
    assert none_phone is (not writes_one and "x@y.io" in text)


def test_auto_holds_a_date_to_the_dates_the_text_writes_in_words():
    class Meeting(BaseModel):
        day: datetime.date

    spec = OutputSpec(Meeting)
    g, record = grounded_grammar(spec, "Budget Review on March 14th, 2025 at 9:30.", "auto", Local())
    assert g is not None and [r.grounded for r in record] == [True]
    assert g.accepts('{"day":"2025-03-14"}') and not g.accepts('{"day":"2025-03-15"}')


def test_the_mark_leaves_the_prompts_schema_alone():
    spec = OutputSpec(Order)
    before = json.dumps(spec.schema)
    marked_schema(spec.schema, TEXT, True)
    assert json.dumps(spec.schema) == before


def test_the_grammar_holds_chosen_fields_to_the_text_and_records_them():
    spec = OutputSpec(Order)
    g, record = grounded_grammar(spec, TEXT, True, Local())
    assert g is not None
    by_path = {r.path: r for r in record}
    assert by_path["/customer"] == FieldGrounding("/customer", "string", True)
    assert by_path["/summary"].grounded  # a span fits: held
    good = {"customer": "Müller GmbH", "item": "anything at all", "quantity": 15, "price": 18.50, "currency": "GBP",
            "rush": False, "people": ["Ann Lee", "Bo Chen"], "note": None, "summary": "yoga mats"}
    assert g.accepts(json.dumps(good, ensure_ascii=False, separators=(",", ":")))
    for field, wrong in (("customer", "Mueller"), ("quantity", 16), ("people", ["Ann Lee", "Eve"])):
        assert not g.accepts(json.dumps({**good, field: wrong}, ensure_ascii=False, separators=(",", ":")))


def test_a_field_no_value_fits_is_recorded_with_its_reason():
    class Timed(BaseModel):
        start: Annotated[str, Field(pattern=r"^[0-9]{2}:[0-9]{2}$"), Grounded()]

    _, record = grounded_grammar(OutputSpec(Timed), "no time is written here", False, Local())
    assert record == (FieldGrounding("/start", "string", False, "no span of the source fits the field's constraints"),)


def test_a_server_gets_the_types_own_grammar_and_the_record_says_why():
    g, record = grounded_grammar(OutputSpec(Order), TEXT, True, Server())
    assert g is None and record and all(not r.grounded and "server" in r.reason for r in record)


def test_no_field_held_gives_no_grammar_of_its_own():
    assert grounded_grammar(OutputSpec(Order), TEXT, False, Local()) == (None, ())


@pytest.mark.parametrize("bad", ["yes", 1, None, "Auto"])
def test_grounded_must_be_true_false_or_auto(bad):
    with pytest.raises(InvalidArgument, match="grounded"):
        check_mode(bad)


def test_a_decimal_holds_its_number_and_its_string_spelling_to_the_texts_numbers():
    from decimal import Decimal

    class Priced(BaseModel):
        price: Decimal

    spec = OutputSpec(Priced)
    _, chosen = marked_schema(spec.schema, TEXT, True)
    assert list(chosen.values()) == [("/price", "number")]
    g, record = grounded_grammar(spec, TEXT, True, Local())
    assert record == (FieldGrounding("/price", "number", True),)
    assert g.accepts('{"price":18.50}') and not g.accepts('{"price":19}')
    assert g.accepts('{"price":"18.50"}') and g.accepts('{"price":"18.5"}')  # its string form: the same numbers
    assert not g.accepts('{"price":"£18.50"}') and not g.accepts('{"price":"19"}')


def test_a_tool_parameter_can_carry_the_mark():
    from pydantic import TypeAdapter

    schema = TypeAdapter(Annotated[float, Grounded()]).json_schema()
    assert schema == {"type": "number", "grounded": True}
    with pytest.raises(TypeError):
        Grounded("yes")  # type: ignore[arg-type]


# --- the entry points --------------------------------------------------------------------------

class Person(BaseModel):
    name: str
    age: int
    city: str | None = None


PERSON_TEXT = "Ann Lee is 31 years old and lives in Recife."
RIGHT = '{"name":"Ann Lee","age":31,"city":"Recife"}'
MADE_UP = '{"name":"Ann Lee","age":25,"city":"Rafia"}'


def test_extract_holds_values_to_the_text_only_when_asked():
    from agentkit import UnexpectedModelOutput, extract
    from runtimes.testing import ScriptedRuntime

    assert extract(Person, PERSON_TEXT, runtime=ScriptedRuntime([MADE_UP]), grounded=False).age == 25
    for mode in (True, "auto"):
        with pytest.raises(UnexpectedModelOutput):
            extract(Person, PERSON_TEXT, runtime=ScriptedRuntime([MADE_UP]), grounded=mode)
    with pytest.raises(UnexpectedModelOutput):  # "auto" is the default
        extract(Person, PERSON_TEXT, runtime=ScriptedRuntime([MADE_UP]))
    found = extract(Person, PERSON_TEXT, runtime=ScriptedRuntime([RIGHT]), grounded=True, details=True)
    assert found.value == Person(name="Ann Lee", age=31, city="Recife")
    assert {g.path: g.grounded for g in found.grounding} == {"/name": True, "/age": True, "/city": True}
    assert extract(Person, PERSON_TEXT, runtime=ScriptedRuntime([RIGHT]), grounded=False, details=True).grounding == ()


def test_every_entry_point_takes_grounded():
    from agentkit import UnexpectedModelOutput, extract_iter, stream_extract
    from runtimes.testing import ScriptedRuntime

    *_, last = stream_extract(Person, PERSON_TEXT, runtime=ScriptedRuntime([RIGHT]), grounded=True)
    assert last.age == 31
    with pytest.raises(UnexpectedModelOutput):
        list(stream_extract(Person, PERSON_TEXT, runtime=ScriptedRuntime([MADE_UP]), grounded="auto"))
    items = list(extract_iter(Person, PERSON_TEXT, runtime=ScriptedRuntime(["[" + RIGHT + "]"]), grounded=True))
    assert items == [Person(name="Ann Lee", age=31, city="Recife")]
    with pytest.raises(UnexpectedModelOutput):
        list(extract_iter(Person, PERSON_TEXT, runtime=ScriptedRuntime(["[" + MADE_UP + "]"]), grounded=True))
    with pytest.raises(InvalidArgument, match="grounded"):
        list(stream_extract(Person, PERSON_TEXT, runtime=ScriptedRuntime([RIGHT]), grounded="sometimes"))


@pytest.mark.parametrize("seed", range(4))
def test_a_local_decode_writes_spans_of_the_text_and_its_numbers(seed):
    from agentkit import IncompleteOutput, extract
    from runtimes.testing import RandomRuntime

    try:
        found = extract(Person, PERSON_TEXT, runtime=RandomRuntime(seed=seed), grounded=True, max_tokens=256,
                        details=True)
    except IncompleteOutput:
        return  # a random model may wander: nothing to check
    assert found.value.name in PERSON_TEXT and found.value.age == 31
    assert found.value.city is None or found.value.city in PERSON_TEXT


@given(st.text(alphabet="ab ,", max_size=20), st.integers(0, 6), st.one_of(st.none(), st.integers(0, 9)))
def test_a_held_list_has_no_more_items_than_the_text_has_distinct_words(text, least, most):
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                        "minItems": least}}}
    if most is not None:
        schema["properties"]["tags"]["maxItems"] = most
    marked, _ = marked_schema(schema, text, True)
    tags = marked["properties"]["tags"]
    words = len(set(re.findall(r"\w+", text.casefold())))
    if words:
        assert tags["maxItems"] == max(min(words, most if most is not None else words), least)
    else:
        assert tags.get("maxItems") == most


def test_a_model_repeating_a_held_item_closes_its_list_within_the_bound():
    from agentkit import extract
    from runtimes.testing import ScriptedRuntime

    class Product(BaseModel):
        name: str
        tags: list[str]

    text = "Linen duvet, tagged linen, bedroom."
    repeated = '{"name":"Linen duvet","tags":[' + ",".join(['"linen"'] * 5) + "]}"
    with pytest.raises(UnexpectedModelOutput):
        extract(Product, text, runtime=ScriptedRuntime([repeated]))
    four = '{"name":"Linen duvet","tags":[' + ",".join(['"linen"'] * 4) + "]}"
    rt = ScriptedRuntime([four, '{"name":"Linen duvet","tags":["linen"]}'])  # within the bound; then read again
    assert extract(Product, text, runtime=rt).tags == ["linen"] and rt.calls[0].grammar.accepts(four)


class Product(BaseModel):
    name: str
    tags: list[str]
    sizes: list[int] = []


PRODUCT_TEXT = "Rain Jacket, tags: outdoor, rainwear. Sizes 38, 40."


def test_a_held_list_that_repeats_an_item_is_read_again_bounded_to_its_distinct_items():
    from agentkit import extract
    from runtimes.testing import ScriptedRuntime

    looping = '{"name":"Rain Jacket","tags":["outdoor","rainwear","outdoor","outdoor"],"sizes":[38,38]}'
    closed = '{"name":"Rain Jacket","tags":["outdoor","rainwear"],"sizes":[38,38]}'
    rt = ScriptedRuntime([looping, closed])
    found = extract(Product, PRODUCT_TEXT, runtime=rt, details=True)
    assert found.value.tags == ["outdoor", "rainwear"] and found.value.sizes == [38, 38]  # numbers: as written
    first, again = (r.grammar for r in rt.calls)
    assert first.accepts(looping) and not again.accepts(looping) and again.accepts(closed)
    once = extract(Product, PRODUCT_TEXT, runtime=ScriptedRuntime([closed]), details=True).usage
    assert found.usage.prompt_tokens == 2 * once.prompt_tokens  # both readings are counted


def test_without_a_repeat_or_without_holding_there_is_no_second_reading():
    from agentkit import extract
    from runtimes.testing import ScriptedRuntime

    rt = ScriptedRuntime(['{"name":"Rain Jacket","tags":["outdoor","rainwear"],"sizes":[]}'])
    assert extract(Product, PRODUCT_TEXT, runtime=rt).tags == ["outdoor", "rainwear"] and len(rt.calls) == 1
    rt = ScriptedRuntime(['{"name":"Rain Jacket","tags":["outdoor","outdoor"],"sizes":[]}'])
    assert extract(Product, PRODUCT_TEXT, runtime=rt, grounded=False).tags == ["outdoor", "outdoor"]
    assert len(rt.calls) == 1


@given(st.lists(st.sampled_from(["a", "A", "b", " b", "c"]), max_size=8))
def test_the_bound_is_the_count_before_the_first_repeat(items):
    grounding = (FieldGrounding("/tags/*", "string", True),)
    bounds = repeated_items(json.dumps({"name": "x", "tags": items}), grounding)
    folded = [" ".join(i.split()).casefold() for i in items]
    first = next((i for i in range(len(folded)) if folded[i] in folded[:i]), None)
    assert bounds == ({} if first is None else {"tags": first})
    assert repeated_items(json.dumps({"name": "x", "tags": items}), ()) == {}  # not held: never bounded


def test_auto_holds_a_street_to_spans_with_a_number_where_the_text_writes_one():
    class Address(BaseModel):
        street: str
        city: str

    text = "Our Dublin office: 3 Grand Canal Square, Dublin, Ireland."
    g, _ = grounded_grammar(OutputSpec(Address), text, "auto", Local())
    assert g.accepts('{"street":"3 Grand Canal Square","city":"Dublin"}')
    assert not g.accepts('{"street":"Grand Canal Square","city":"Dublin"}')
    unnumbered, _ = marked_schema(OutputSpec(Address).schema, "Grand Canal Square, Dublin.", "auto")
    assert "pattern" not in unnumbered["properties"]["street"]  # no number written: any span


def test_a_required_held_list_left_empty_is_read_again_with_one_item_at_least():
    from agentkit import extract
    from runtimes.testing import ScriptedRuntime

    empty, full = '{"name":"Rain Jacket","tags":[],"sizes":[]}', '{"name":"Rain Jacket","tags":["outdoor"],"sizes":[]}'
    rt = ScriptedRuntime([empty, full])
    assert extract(Product, PRODUCT_TEXT, runtime=rt).tags == ["outdoor"]
    first, again = (r.grammar for r in rt.calls)
    assert first.accepts(empty) and not again.accepts(empty) and again.accepts(full)
    rt = ScriptedRuntime([full])  # the optional list may stay empty: no second reading for it
    assert extract(Product, PRODUCT_TEXT, runtime=rt).sizes == [] and len(rt.calls) == 1


def test_a_list_left_empty_is_read_again_only_where_it_is_held():
    from agentkit import extract
    from runtimes.testing import ScriptedRuntime

    rt = ScriptedRuntime(['{"name":"Rain Jacket","tags":[],"sizes":[]}'])
    assert extract(Product, PRODUCT_TEXT, runtime=rt, grounded=False).tags == [] and len(rt.calls) == 1

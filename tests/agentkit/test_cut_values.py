"""A held field that took a piece of another's value: an optional field is read again as null, a
required one kept from the value; a text that writes the date or time another field took is read
again without it; what each reading refused holds in the next."""

from __future__ import annotations

import datetime
import json

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import BaseModel

from agentkit import extract
from agentkit._outputs.grounding import FieldGrounding, cut_values, dates_inside
from runtimes.testing import ScriptedRuntime

TEXT = "Return address: Bahnhofstrasse 21, 8001 Zürich, Switzerland."


class Address(BaseModel):
    recipient: str | None = None
    street: str
    city: str
    country: str


class Contact(BaseModel):
    name: str
    email: str
    company: str | None = None


def address(recipient: str | None, street: str, city: str = "Zürich", country: str = "Switzerland") -> str:
    return json.dumps({"recipient": recipient, "street": street, "city": city, "country": country},
                      ensure_ascii=False, separators=(",", ":"))


def contact(name: str, email: str, company: str | None) -> str:
    return json.dumps({"name": name, "email": email, "company": company}, ensure_ascii=False, separators=(",", ":"))


def test_an_optional_field_that_took_the_head_of_a_required_value_is_read_as_null():
    split = address("Bahnhofstrasse", "21")
    right = address(None, "Bahnhofstrasse 21")
    rt = ScriptedRuntime([split, right])
    assert extract(Address, TEXT, runtime=rt) == Address(street="Bahnhofstrasse 21", city="Zürich", country="Switzerland")
    again = rt.calls[1].grammar
    assert again.accepts(right)
    assert not again.accepts(address("Switzerland", "Bahnhofstrasse 21"))  # null, not another span
    assert len(rt.calls) == 2  # the second reading holds no piece: no third


def test_an_optional_value_inside_a_required_one_is_read_as_null():
    inside = address("Bahnhofstrasse", "Bahnhofstrasse 21")
    rt = ScriptedRuntime([inside, address(None, "Bahnhofstrasse 21")])
    assert extract(Address, TEXT, runtime=rt).recipient is None


def test_a_field_cut_from_an_email_address_is_kept_from_it_and_a_company_in_the_domain_is_not():
    text = "Email hannah.schmidt@uni-heidelberg.de, Hannah Schmidt of PolMarket."
    held = tuple(FieldGrounding(f"/{k}", "string", True) for k in ("name", "email", "company"))
    cut = contact("hannah.schmidt@uni-heidelberg.", "hannah.schmidt@uni-heidelberg.de", None)
    assert cut_values(cut, held, text, {"name", "email"}) == [
        (("name", "email"), ["hannah.schmidt@uni-heidelberg.de", "hannah.schmidt@uni-heidelberg."])]
    domain = contact("Hannah Schmidt", "hannah.schmidt@polmarket.de", "PolMarket")
    assert cut_values(domain, held, text, {"name", "email"}) == []


def test_a_required_value_inside_another_required_one_is_left_alone():
    class Product(BaseModel):
        name: str
        brand: str

    text = "The Ωmega Blender X2 by Ωmega."
    held = (FieldGrounding("/name", "string", True), FieldGrounding("/brand", "string", True))
    document = json.dumps({"name": "Ωmega Blender X2", "brand": "Ωmega"}, ensure_ascii=False, separators=(",", ":"))
    assert cut_values(document, held, text, {"name", "brand"}) == []
    rt = ScriptedRuntime([document])
    assert extract(Product, text, runtime=rt).brand == "Ωmega" and len(rt.calls) == 1


def test_an_email_in_its_own_field_is_no_piece_of_a_longer_text():
    class Ticket(BaseModel):
        summary: str
        customer_email: str | None = None

    text = "No rush. yusuf.demir@posteo.net"
    held = (FieldGrounding("/summary", "string", True), FieldGrounding("/customer_email", "string", True))
    document = json.dumps({"summary": text, "customer_email": "yusuf.demir@posteo.net"})
    assert cut_values(document, held, text, {"summary"}) == []


def test_an_optional_field_kept_from_a_value_once_is_read_as_null_when_it_takes_another():
    text = "Contact: Hannah Schmidt. hannah.schmidt@uni-heidelberg.de"
    first = contact("Hannah Schmidt", "hannah.schmidt@uni-heidelberg.de", "Hannah Schmidt")
    second = contact("Hannah Schmidt", "hannah.schmidt@uni-heidelberg.de", "hannah.schmidt@uni-heidelberg.de")
    third = contact("Hannah Schmidt", "hannah.schmidt@uni-heidelberg.de", None)
    rt = ScriptedRuntime([first, second, third])
    assert extract(Contact, text, runtime=rt).company is None
    assert rt.calls[1].grammar.accepts(second) and not rt.calls[1].grammar.accepts(first)
    assert not rt.calls[2].grammar.accepts(second) and rt.calls[2].grammar.accepts(third)


def test_readings_end_after_the_third():
    from decimal import Decimal

    class OrderLine(BaseModel):
        customer: str
        item: str
        quantity: int
        unit_price: Decimal

    def line(customer: str, item: str, quantity: int, unit_price: int) -> str:
        return json.dumps({"customer": customer, "item": item, "quantity": quantity, "unit_price": unit_price},
                          ensure_ascii=False, separators=(",", ":"))

    text = "Please bill Café Lumière for 3 espresso machines at 1249.00 euros apiece."
    readings = [line("Café Lumière", "Café Lumière", 3, 1249), line("espresso machines", "espresso machines", 3, 1249),
                line("Café Lumière", "Please bill", 3, 3)]  # each gives two fields one value again
    rt = ScriptedRuntime(readings)
    value = extract(OrderLine, text, runtime=rt)
    assert len(rt.calls) == 3 and value.item == "Please bill"
    assert not rt.calls[2].grammar.accepts(readings[1]) and not rt.calls[2].grammar.accepts(readings[0])


_WORDS = st.sampled_from(["Bahnhofstrasse", "21", "Zürich", "8001", "Switzerland", "Return", "address:"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=3), st.lists(_WORDS, min_size=1, max_size=3))
def test_a_cut_is_an_optional_value_inside_or_beside_a_required_one(piece_words, whole_words):
    piece, whole = " ".join(piece_words), " ".join(whole_words)
    held = (FieldGrounding("/recipient", "string", True), FieldGrounding("/street", "string", True))
    found = cut_values(json.dumps({"recipient": piece, "street": whole}), held, TEXT, {"street"})
    folded_piece, folded_whole = piece.casefold(), whole.casefold()
    inside = folded_piece != folded_whole and folded_piece in folded_whole
    beside = folded_piece != folded_whole and (f"{piece} {whole}" in TEXT or f"{whole} {piece}" in TEXT)
    assert bool(found) == (inside or beside)
    for keys, values in found:
        assert keys == ("recipient", "street") and values[-1] == piece
    both_required = cut_values(json.dumps({"recipient": piece, "street": whole}), held, TEXT, {"street", "recipient"})
    assert both_required == []  # read off an optional field only (neither name says a shape)


def test_an_optional_field_that_admits_no_null_is_kept_from_the_value_instead():
    class Labelled(BaseModel):
        recipient: str = "nobody"
        street: str

    split = json.dumps({"recipient": "Bahnhofstrasse", "street": "21"}, separators=(",", ":"))
    other = json.dumps({"recipient": "Return address", "street": "Bahnhofstrasse 21"}, separators=(",", ":"))
    rt = ScriptedRuntime([split, other])
    assert extract(Labelled, TEXT, runtime=rt).street == "Bahnhofstrasse 21"
    again = rt.calls[1].grammar
    assert not again.accepts(json.dumps({"recipient": None, "street": "Bahnhofstrasse 21"}, separators=(",", ":")))
    assert not again.accepts(json.dumps({"recipient": "Bahnhofstrasse", "street": "Bahnhofstrasse 21"},
                                        separators=(",", ":")))


class Meeting(BaseModel):
    title: str
    date: datetime.date
    start_time: str


def meeting(title: str, date: str = "2025-12-09", start_time: str = "15:30") -> str:
    return json.dumps({"title": title, "date": date, "start_time": start_time}, separators=(",", ":"))


def test_a_title_that_writes_the_date_the_date_field_took_is_read_again_without_it():
    text = "Security Training on December 9th, 2025, 15:30, for the whole ops team."
    with_date, right = meeting("Security Training on December 9th"), meeting("Security Training")
    rt = ScriptedRuntime([with_date, right])
    assert extract(Meeting, text, runtime=rt).title == "Security Training"
    again = rt.calls[1].grammar
    for near in (with_date, meeting("Security Training on December"), meeting("Security Training on"),
                 meeting("December 9th")):
        assert not again.accepts(near)
    assert again.accepts(right)


def test_a_time_in_the_title_is_refused_too_and_other_numbers_are_not():
    held = tuple(FieldGrounding(f"/{k}", "string", True) for k in ("title", "date", "start_time"))
    found = dates_inside(meeting("On the 1st of July 2025 at 10:45", "2025-07-01", "10:45"), held)
    assert set(found) == {"title"}
    patterns = [s["not"]["pattern"] for s in found["title"]]
    assert any("10:45" in p for p in patterns) and any("1st" in p for p in patterns)
    assert any("July" in p for p in patterns)
    assert dates_inside(meeting("Room 10 review", "2025-07-01", "10:00"), held) == {}
    assert dates_inside(meeting("Team Lunch"), held) == {}


class Gathering(BaseModel):
    title: str
    date: datetime.date
    attendees: list[str]


@pytest.mark.parametrize("month", ["May", "may", "May,"])
def test_a_list_item_that_is_the_taken_dates_month_is_read_again_without_it(month):
    text = "Office Yoga on the 5th of May 2025; Nadia and Felix signed up."
    first = json.dumps({"title": "Office Yoga", "date": "2025-05-05", "attendees": ["Nadia", "Felix", month]},
                       separators=(",", ":"))
    right = json.dumps({"title": "Office Yoga", "date": "2025-05-05", "attendees": ["Nadia", "Felix"]},
                       separators=(",", ":"))
    held = (FieldGrounding("/title", "string", True), FieldGrounding("/date", "string", True),
            FieldGrounding("/attendees/*", "string", True))
    assert list(dates_inside(first, held)) == ["attendees"]
    if month == "May":
        rt = ScriptedRuntime([first, right])
        assert extract(Gathering, text, runtime=rt).attendees == ["Nadia", "Felix"]
        assert not rt.calls[1].grammar.accepts(first)


def test_a_month_name_is_refused_only_as_the_taken_dates_month_and_never_inside_a_name():
    held = (FieldGrounding("/date", "string", True), FieldGrounding("/attendees/*", "string", True))
    for attendees in (["June"], ["Marco", "Mayra"], ["Maya May"]):
        document = json.dumps({"date": "2025-05-05", "attendees": attendees})
        assert dates_inside(document, held) == {}

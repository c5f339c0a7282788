"""A value the text writes after a label naming its field: the field is held to it, ending at a
mark that ends a clause, a bracket or the end of its line."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from agentkit._outputs.grounding import grounded_grammar, marked_schema
from agentkit._outputs.labels import candidates, labelled_values
from agentkit._outputs.output import OutputSpec


class Ticket(BaseModel):
    summary: str = Field(description="the subject line of the message")
    customer_email: str | None = None


class Order(BaseModel):
    customer: str
    order_number: str
    note: str = Field(description="anything else the text says")


TICKET = "Subject: Charged twice for order 5521\nHi, my card was billed two times. Please fix this urgently."


def test_a_label_names_a_field_by_its_name_its_last_word_or_a_word_of_its_description():
    assert labelled_values(TICKET, "summary", "the subject line of the message") == ["Charged twice for order 5521"]
    text = "Customer: Polar Outfitters (placed by Per). Order number: A-77. Email: per@polar.se"
    assert labelled_values(text, "customer", "") == ["Polar Outfitters (placed by Per). Order number: A-77. Email: per@polar.se"]
    assert labelled_values(text, "order_number", "") == ["A-77. Email: per@polar.se"]
    assert labelled_values(text, "customer_email", "") == ["per@polar.se"]
    assert labelled_values(text, "number", "") == []  # the label's last word is not the field's name


def test_a_word_that_fills_a_description_or_a_time_is_no_label():
    assert labelled_values("The line: busy all day.", "summary", "the subject line of the message") == []
    assert labelled_values("We meet at 10:45 today.", "start", "") == []
    assert labelled_values("Reminder: 'Kickoff: Project Łódź' on Monday.", "kickoff", "") == []


def test_a_labelled_value_ends_at_a_clause_or_sentence_mark_a_bracket_or_its_lines_end():
    assert candidates(["Where is my order?"]) == ["Where is my order?", "Where is my order"]
    assert candidates(["Polar Outfitters (placed by Per). 6 jackets, $210 each."]) == [
        "Polar Outfitters", "Polar Outfitters (placed by Per).", "Polar Outfitters (placed by Per)",
        "Polar Outfitters (placed by Per). 6 jackets,", "Polar Outfitters (placed by Per). 6 jackets",
        "Polar Outfitters (placed by Per). 6 jackets, $210 each.", "Polar Outfitters (placed by Per). 6 jackets, $210 each"]
    assert candidates(["per@polar.se", "ul. Piotrkowska 104"]) == ["per@polar.se", "ul.", "ul", "ul. Piotrkowska 104"]


def test_auto_holds_a_labelled_field_to_its_value_and_leaves_the_others():
    marked, _ = marked_schema(Ticket.model_json_schema(), TICKET, "auto")
    pattern = marked["properties"]["summary"]["pattern"]
    assert re.search(pattern, "Charged twice for order 5521") and not re.search(pattern, "Charged twice")
    assert not re.search(pattern, "Please fix this urgently.") and not re.search(pattern, "order 5521")
    for mode in (True, False):  # a rule of "auto" alone
        assert "pattern" not in marked_schema(Ticket.model_json_schema(), TICKET, mode)[0]["properties"]["summary"]
    plain, _ = marked_schema(Ticket.model_json_schema(), "Hi, my card was billed two times.", "auto")
    assert "pattern" not in plain["properties"]["summary"]


def test_the_grammar_writes_only_the_labelled_value():
    g, record = grounded_grammar(OutputSpec(Ticket), TICKET, "auto", runtime=None)
    assert g is not None and [r.grounded for r in record if r.path == "/summary"] == [True]
    assert g.accepts('{"summary":"Charged twice for order 5521","customer_email":null}')
    assert not g.accepts('{"summary":"Charged twice","customer_email":null}')
    assert not g.accepts('{"summary":"Please fix this urgently.","customer_email":null}')
    assert not g.accepts('{"summary":"Subject: Charged twice for order 5521","customer_email":null}')


words = st.text(alphabet="bcdfgjk", min_size=1, max_size=6)  # no article ("a"): no span starts on one


@given(st.lists(st.lists(words, min_size=1, max_size=4), min_size=1, max_size=3), st.lists(words, min_size=1, max_size=8))
def test_a_labelled_value_is_held_to_its_first_clause_and_nothing_else(clauses, other):
    labelled, text = ", ".join(" ".join(c) for c in clauses), " ".join(other)
    source = f"{text}.\nSubject: {labelled}\n{text}"
    g, _ = grounded_grammar(OutputSpec(Ticket), source, "auto", runtime=None)
    assert g is not None
    longer = {", ".join(" ".join(c) for c in clauses[:i]) for i in range(1, len(clauses) + 1)}
    spans = {" ".join(c[:i]) for c in clauses for i in range(1, len(c) + 1)}
    for candidate in longer | spans | {" ".join(other[:i]) for i in range(1, len(other) + 1)}:
        document = f'{{"summary":"{candidate}","customer_email":null}}'
        # a held span never reads a blank after a comma: the value up to its first clause's end
        assert g.accepts(document) == (candidate == " ".join(clauses[0]))

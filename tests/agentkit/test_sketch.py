"""The type shown to a model as the JSON it describes (`SCHEMA_PROMPT = "sketch"`): every key,
enum value, bound and description of the schema is said, nothing raises on schemas nobody here
wrote, and a type whose sketch would outgrow its schema is shown as the schema."""

from __future__ import annotations

import datetime
import json
import random
from typing import Annotated, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model

from agentkit._outputs import output
from agentkit._outputs.output import OutputSpec
from agentkit._outputs.sketch import sketch
from bench.coverage import jsonl

NAMES = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True)
WORDS = st.from_regex(r"[a-z]{1,8}", fullmatch=True)


@st.composite
def field_types(draw):
    kind = draw(st.sampled_from(["str", "int", "float", "bool", "date", "enum", "list", "bounded"]))
    if kind == "enum":
        return Literal[tuple(draw(st.lists(WORDS, min_size=1, max_size=4, unique=True)))]
    if kind == "bounded":
        return Annotated[int, Field(ge=draw(st.integers(-5, 5)), le=draw(st.integers(6, 99)))]
    tp = {"str": str, "int": int, "float": float, "bool": bool, "date": datetime.date, "list": list[str]}[kind]
    return Optional[tp] if draw(st.booleans()) else tp


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(NAMES, field_types(), min_size=1, max_size=6), st.text(max_size=30))
def test_every_key_and_enum_value_and_bound_is_said(fields, description):
    model = create_model("T", __doc__=description, **{name: (tp, ...) for name, tp in fields.items()})
    schema = OutputSpec(model).schema
    written = sketch(schema)
    for name, node in schema["properties"].items():
        assert json.dumps(name) + ":" in written
        for value in node.get("enum", ()):
            assert json.dumps(value) in written
        for bound in ("minimum", "maximum"):
            if bound in node:
                assert str(node[bound]) in written


def test_the_value_benchmarks_types_read_as_their_json():
    class Line(BaseModel):
        customer: str
        quantity: int = Field(ge=1)
        currency: Literal["GBP", "EUR"]
        note: Optional[str] = Field(None, description="anything  else\nsaid")

    assert sketch(OutputSpec(Line).schema) == (
        '{"customer": <string>, "quantity": <integer (at least 1)>, "currency": <one of "GBP", "EUR">, '
        '"note": <string, or null where the text does not say (anything else said)>}'
    )


def test_a_recursive_type_ends():
    class Node(BaseModel):
        name: str
        children: list["Node"] = []

    assert "<...>" in sketch(OutputSpec(Node).schema)


def test_the_instructions_fall_back_to_the_schema_where_the_sketch_outgrows_it(monkeypatch):
    defs = {f"D{i}": {"type": "object", "properties": {k: {"$ref": f"#/$defs/D{i + 1}"} for k in "abcdef"}}
            for i in range(8)}
    defs["D8"] = {"type": "string"}
    spec = OutputSpec(dict)
    monkeypatch.setattr(spec, "schema", {"$ref": "#/$defs/D0", "$defs": defs})
    monkeypatch.setattr(output, "SCHEMA_PROMPT", "sketch")
    assert "JSON Schema" in spec.instructions()


def test_sketch_takes_every_schema_of_the_corpus(corpus):
    bench = corpus / "jsonschemabench"
    dev = set((bench / "DEV.txt").read_text().split())
    rng = random.Random(3)
    for subset in ("Glaiveai2K", "Github_easy", "Github_medium", "Github_hard", "Kubernetes", "JsonSchemaStore"):
        entries = [e for e in jsonl(bench / f"{subset}.jsonl.gz") if e["id"] in dev]
        for entry in rng.sample(entries, min(40, len(entries))):
            assert isinstance(sketch(entry["schema"]), str)

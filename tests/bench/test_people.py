"""The extraction workload is written twice, as a JSON Schema (for engines and servers that take
one) and as the pydantic model `extract` takes: both must hold the model to one language."""

from __future__ import annotations

import grammar
from agentkit._outputs.extract import output_spec
from bench._people import SCHEMA, Person


def test_the_schema_and_the_model_are_one_grammar() -> None:
    assert output_spec(Person).grammar.to_gbnf() == grammar.from_json_schema(SCHEMA).to_gbnf()

"""The untuned benchmark schemas: DEV ids only, bounded strings, patterns or formats, and a
document each that the schema's validator and our grammar both accept."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from bench._dev_schemas import dev_schemas
from bench.coverage import corpus_dir, dev_ids


def test_fifty_schemas_each_with_a_valid_document_the_grammar_holds() -> None:
    if corpus_dir() is None:
        pytest.skip("../shared/corpus is not beside the clone")
    chosen = dev_schemas(50)
    assert len(chosen) == 50
    dev = dev_ids(corpus_dir())
    assert set(chosen) <= dev
    assert len({ident.split("/")[0] for ident in chosen}) >= 4  # drawn from several subsets
    for ident, (schema, document) in chosen.items():
        text = json.dumps(schema)
        assert any(f'"{keyword}":' in text for keyword in ("pattern", "maxLength", "minLength", "format")), ident
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        assert cls(schema).is_valid(json.loads(document)), ident
        assert grammar.from_json_schema(schema).accepts(document.decode()), ident
    assert dev_schemas(50) == chosen  # the same run every time


def test_closing_shuts_every_object_that_declares_its_keys_and_keeps_data_alone() -> None:
    from bench._dev_schemas import closed

    schema = {"type": "object", "properties": {"a": {"properties": {"b": {}}}, "c": {"additionalProperties": True,
              "properties": {}}}, "const": {"properties": {"x": 1}}, "items": [{"properties": {}}]}
    shut = closed(schema)
    assert shut["additionalProperties"] is False
    assert shut["properties"]["a"]["additionalProperties"] is False
    assert shut["properties"]["c"]["additionalProperties"] is True  # it said so
    assert shut["const"] == {"properties": {"x": 1}}  # a value, not a schema
    assert shut["items"][0]["additionalProperties"] is False
    assert "additionalProperties" not in schema  # a copy
    named = closed({"properties": {"properties": {"type": "string"}}})
    assert named == {"properties": {"properties": {"type": "string"}}, "additionalProperties": False}  # a key, not a schema


def test_closed_dev_schemas_hold_their_documents() -> None:
    if corpus_dir() is None:
        pytest.skip("../shared/corpus is not beside the clone")
    from bench._dev_schemas import closed_dev_schemas

    shut = closed_dev_schemas(50)
    assert 25 <= len(shut) <= 50
    for ident, (schema, document) in shut.items():
        assert ident.endswith(" (closed)")
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        assert cls(schema).is_valid(json.loads(document)), ident
        assert grammar.from_json_schema(schema).accepts(document.decode()), ident
        if schema.get("additionalProperties") is False and document.startswith(b"{") and len(document) > 2:
            assert not grammar.from_json_schema(schema).accepts(document.decode()[:-1] + ',"zz-extra":1}'), ident

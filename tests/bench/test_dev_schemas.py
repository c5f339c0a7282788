"""The untuned benchmark schemas: DEV ids only, bounded strings, patterns or formats, and a
document each that the schema's validator and our grammar both accept."""

from __future__ import annotations

import json

import jsonschema
import pytest

import grammar
from bench._dev_schemas import dev_schemas
from bench.coverage import corpus_dir


def test_fifty_schemas_each_with_a_valid_document_the_grammar_holds() -> None:
    if corpus_dir() is None:
        pytest.skip("../shared/corpus is not beside the clone")
    chosen = dev_schemas(50)
    assert len(chosen) == 50
    dev = set((corpus_dir() / "jsonschemabench" / "DEV.txt").read_text().split())
    assert set(chosen) <= dev
    assert len({ident.split("/")[0] for ident in chosen}) >= 4  # drawn from several subsets
    for ident, (schema, document) in chosen.items():
        text = json.dumps(schema)
        assert any(f'"{keyword}":' in text for keyword in ("pattern", "maxLength", "minLength", "format")), ident
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        assert cls(schema).is_valid(json.loads(document)), ident
        assert grammar.from_json_schema(schema).accepts(document.decode()), ident
    assert dev_schemas(50) == chosen  # the same run every time

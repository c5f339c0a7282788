"""The in-product checker agrees with the `jsonschema` package (the dev-only oracle) on the
official JSON Schema Test Suite, wherever the checker claims to evaluate every keyword."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit._jsoncheck import CHECKED, FORMATS, KNOWN_FORMATS, check
from agentkit._schema import subschemas

_ANNOTATIONS = {
    "$schema", "$defs", "definitions", "title", "description", "default", "examples",
    "$comment", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
    "contentSchema",
}
DRAFTS = {
    "draft2020-12": (jsonschema.Draft202012Validator, None),
    "draft2019-09": (jsonschema.Draft201909Validator, "https://json-schema.org/draft/2019-09/schema"),
    "draft7": (jsonschema.Draft7Validator, "http://json-schema.org/draft-07/schema#"),
    "draft6": (jsonschema.Draft6Validator, "http://json-schema.org/draft-06/schema#"),
    "draft4": (jsonschema.Draft4Validator, "http://json-schema.org/draft-04/schema#"),
}
# Where the checker is knowingly stricter than the oracle (never looser): jsonschema's
# date-time check lets a trailing newline through ("$" in a Python regex), and its uuid check
# a trailing hyphen.
STRICTER = {"a trailing newline is invalid", "trailing hyphen after a complete UUID is invalid"}


def _in_scope(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    for key, value in schema.items():
        if key not in CHECKED and key not in _ANNOTATIONS:
            return False
        if key == "$ref" and not value.startswith("#"):
            return False
        if key == "format" and value in KNOWN_FORMATS and value not in FORMATS:
            return False
    return all(_in_scope(sub) for _, sub in subschemas(schema))


def _cases(corpus: Path):
    for draft, (cls, uri) in DRAFTS.items():
        root = corpus / "json-schema-test-suite" / draft
        for path in sorted([*root.glob("*.json"), *(root / "optional" / "format").glob("*.json")]):
            for case in json.loads(path.read_text()):
                schema = case["schema"]
                if uri and isinstance(schema, dict):
                    schema = {**schema, "$schema": uri}
                if _in_scope(schema) and "$id" not in json.dumps(schema):
                    yield draft, path.name, case, schema, cls


def test_agrees_with_jsonschema_on_the_official_suite(corpus: Path) -> None:
    compared = 0
    disagreements = []
    for draft, name, case, schema, cls in _cases(corpus):
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        for test in case["tests"]:
            try:
                expected = validator.is_valid(test["data"])
            except (re.error, jsonschema.exceptions.SchemaError):
                continue  # a schema the oracle itself cannot evaluate (e.g. an ECMA-only regex)
            compared += 1
            mine = not check(schema, test["data"])
            if mine != expected and not (test["description"] in STRICTER and not mine):
                disagreements.append((draft, name, case["description"], test["description"], mine))
    assert compared > 2500
    assert disagreements == []


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=8,
)
_SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"], "additionalProperties": False},
    {"type": "array", "items": {"type": ["string", "null"]}, "uniqueItems": True, "maxItems": 2},
    {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "number", "multipleOf": 0.5}]},
    {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 1}]},
    {"type": "object", "patternProperties": {"^a": {"type": "boolean"}}, "propertyNames": {"enum": ["a", "b"]}},
    {"if": {"type": "object"}, "then": {"required": ["b"]}, "else": {"not": {"type": "null"}}},
    {"prefixItems": [{"const": 1}], "items": {"type": "object"}, "contains": {"type": "object"}},
    {"$defs": {"n": {"anyOf": [{"type": "null"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}}, "$ref": "#/$defs/n"},
]


@pytest.mark.parametrize("schema", _SCHEMAS)
@settings(max_examples=150, deadline=None)
@given(value=_json)
def test_property_agrees_on_random_values(schema: dict[str, Any], value: Any) -> None:
    oracle = jsonschema.Draft202012Validator(schema)
    assert (not check(schema, value)) == oracle.is_valid(value)


def test_problems_name_field_keyword_and_pointer() -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    [problem] = check(schema, {"tags": ["x", "x"]})
    assert (problem.path, problem.keyword, problem.pointer) == ("tags", "uniqueItems", "/properties/tags/uniqueItems")

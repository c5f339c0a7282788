"""The check after decoding (`jsonschema` through `SchemaValidator`): the dialect comes from
`$schema`, formats are checked, and each problem names its field, keyword and schema pointer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit._tools.validator import SchemaValidator

DRAFTS = {
    "draft2020-12": (jsonschema.Draft202012Validator, None),
    "draft2019-09": (jsonschema.Draft201909Validator, "https://json-schema.org/draft/2019-09/schema"),
    "draft7": (jsonschema.Draft7Validator, "http://json-schema.org/draft-07/schema#"),
    "draft6": (jsonschema.Draft6Validator, "http://json-schema.org/draft-06/schema#"),
    "draft4": (jsonschema.Draft4Validator, "http://json-schema.org/draft-04/schema#"),
}


def _local(schema: Any) -> bool:
    """Whether the schema needs no other document (the official suite's remotes)."""
    text = json.dumps(schema)
    return "$id" not in text and "http://localhost" not in text and '"$ref": "http' not in text


def _cases(corpus: Path):
    for draft, (cls, uri) in DRAFTS.items():
        root = corpus / "json-schema-test-suite" / draft
        for path in sorted([*root.glob("*.json"), *(root / "optional" / "format").glob("*.json")]):
            for case in json.loads(path.read_text()):
                schema = case["schema"]
                if uri and isinstance(schema, dict):
                    schema = {**schema, "$schema": uri}
                if _local(schema):
                    yield draft, path.name, case, schema, cls


def test_agrees_with_jsonschema_on_the_official_suite(corpus: Path) -> None:
    """The dialect named by `$schema` (2020-12 when none) and its format checker decide, and
    the keywords that name a missing key keep the verdicts of jsonschema's own."""
    compared = 0
    disagreements = []
    for draft, name, case, schema, cls in _cases(corpus):
        oracle = cls(schema, format_checker=cls.FORMAT_CHECKER)
        try:
            mine = SchemaValidator(schema)
        except jsonschema.exceptions.SchemaError:
            continue
        for test in case["tests"]:
            try:
                expected = oracle.is_valid(test["data"])
                valid = not mine.problems(test["data"])
            except (re.error, jsonschema.exceptions.SchemaError):
                continue  # a schema jsonschema cannot evaluate (e.g. an ECMA-only regex)
            compared += 1
            if valid != expected:
                disagreements.append((draft, name, case["description"], test["description"], valid))
    assert compared > 4000
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
    {"dependentRequired": {"a": ["b", "c"]}, "unevaluatedProperties": {"type": "integer"}},
    {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"], "b": {"required": ["c"]}}},
]


@pytest.mark.parametrize("schema", _SCHEMAS)
@settings(max_examples=150, deadline=None)
@given(value=_json)
def test_property_agrees_on_random_values(schema: dict[str, Any], value: Any) -> None:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    oracle = cls(schema, format_checker=cls.FORMAT_CHECKER)
    assert (not SchemaValidator(schema).problems(value)) == oracle.is_valid(value)


def test_problems_name_field_keyword_and_pointer() -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    [problem] = SchemaValidator(schema).problems({"tags": ["x", "x"]})
    assert (problem.path, problem.keyword, problem.pointer) == ("tags", "uniqueItems", "/properties/tags/uniqueItems")


def test_a_missing_key_is_the_field_of_its_problem() -> None:
    schema = {"type": "object", "required": ["a", "b"], "dependentRequired": {"a": ["c"]}}
    found = {(p.path, p.keyword, p.pointer) for p in SchemaValidator(schema).problems({"a": 1})}
    assert found == {("b", "required", "/required"), ("c", "dependentRequired", "/dependentRequired")}


def test_a_referenced_keyword_has_the_pointer_where_it_stands() -> None:
    schema = {"$defs": {"n": {"type": "integer", "minimum": 0}}, "properties": {"x": {"$ref": "#/$defs/n"}}}
    [problem] = SchemaValidator(schema).problems({"x": -1})
    assert (problem.path, problem.keyword, problem.pointer) == ("x", "minimum", "/$defs/n/minimum")


def test_the_one_alternative_of_the_value_kind_says_what_is_wrong() -> None:
    schema = {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"n": {"maximum": 3}}}]}
    [problem] = SchemaValidator(schema).problems({"n": 5})
    assert (problem.path, problem.keyword, problem.pointer) == ("n", "maximum", "/anyOf/1/properties/n/maximum")
    [whole] = SchemaValidator({"anyOf": [{"type": "string"}, {"type": "null"}]}).problems(3)
    assert whole.keyword == "anyOf" and {c.keyword for c in whole.causes} == {"type"}


def test_formats_are_checked_in_the_dialect_that_defines_them() -> None:
    assert SchemaValidator({"format": "date-time"}).problems("2024-13-01T00:00:00Z")
    assert not SchemaValidator({"format": "date-time"}).problems("2024-12-01T00:00:00Z")
    draft4 = SchemaValidator({"$schema": "http://json-schema.org/draft-04/schema#", "format": "uuid"})
    assert not draft4.checks("format", "uuid") and draft4.checks("format", "x-custom")

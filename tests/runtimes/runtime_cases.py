"""Schemas and prompts for constrained generations with a real model (varied on purpose)."""

from __future__ import annotations

import itertools
from typing import Any

SCHEMAS: dict[str, dict[str, Any]] = {
    "person": {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 40}, "age": {"type": "integer", "minimum": 0, "maximum": 130},
                       "email": {"type": "string", "maxLength": 60}},
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "weather": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 30},
                       "unit": {"enum": ["celsius", "fahrenheit"]},
                       "days": {"type": "integer", "minimum": 1, "maximum": 14}},
        "required": ["city", "unit", "days"],
        "additionalProperties": False,
    },
    "order": {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 1},
            "items": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
                "type": "object",
                "properties": {"sku": {"type": "string", "maxLength": 12}, "qty": {"type": "integer", "minimum": 1, "maximum": 99}},
                "required": ["sku", "qty"], "additionalProperties": False}},
            "gift": {"type": "boolean"},
            "note": {"type": "string", "maxLength": 30},
        },
        "required": ["id", "items"],
        "additionalProperties": False,
    },
    "flags": {
        "type": "object",
        "properties": {"done": {"type": "boolean"}, "priority": {"enum": ["low", "medium", "high"]},
                       "score": {"type": "number", "minimum": 0, "maximum": 10}},
        "required": ["done", "priority", "score"],
        "additionalProperties": False,
    },
    "tags": {
        "type": "object",
        "properties": {"title": {"type": "string", "maxLength": 30},
                       "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4}},
        "required": ["title", "tags"],
        "additionalProperties": False,
    },
    "answer": {"type": "string", "enum": ["yes", "no", "maybe"]},
    "numbers": {"type": "array", "items": {"type": "integer", "minimum": -100, "maximum": 100}, "minItems": 2, "maxItems": 5},
    "nullable": {
        "type": "object",
        "properties": {"value": {"type": ["integer", "null"]}, "label": {"type": "string", "pattern": "^[A-Z][a-z]{1,10}$"}},
        "required": ["value", "label"],
        "additionalProperties": False,
    },
}

PROMPTS: dict[str, list[str]] = {
    "person": ["Describe Ada Lovelace as JSON.", "Invent a customer record.", "Who wrote Hamlet? Answer as a person object."],
    "weather": ["Forecast request for Paris for a week, in JSON.", "I need the weather in Tokyo in fahrenheit."],
    "order": ["Create an order with two items.", "Write an order for three pencils."],
    "flags": ["Is the task finished? Give status flags.", "Rate this movie with flags."],
    "tags": ["Tag this article about cooking pasta.", "Give a title and tags for a post about Rust."],
    "answer": ["Is the sky blue?", "Will it rain tomorrow?"],
    "numbers": ["List a few small numbers.", "Give me some temperatures."],
    "nullable": ["Give a label and maybe a value.", "Name a fruit with a count."],
}


def cases(n: int) -> list[tuple[str, str, int]]:
    """`n` (schema name, prompt, seed) triples, cycling through every schema and prompt."""
    pairs = [(name, prompt) for name in SCHEMAS for prompt in PROMPTS[name]]
    ordered = sorted(pairs, key=lambda p: PROMPTS[p[0]].index(p[1]))  # one prompt of each schema first
    cycle = itertools.cycle(ordered)
    return [(*next(cycle), seed) for seed in range(n)]


# An extraction that copies from its prompt (names, emails, cities): where drafting pays.
CONTACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 30}, "email": {"type": "string", "maxLength": 40},
                   "city": {"type": "string", "maxLength": 20}},
    "required": ["name", "email", "city"],
    "additionalProperties": False,
}
CONTACT_TEXTS = [
    "Maria Gonzalez (maria.gonzalez@example.org) moved to Valencia last year.",
    "Write to Tom Baker at tom@baker.example, he lives in Cardiff.",
    "Our new colleague Ana Lima, ana.lima@example.com, works from Lisbon.",
]


def contact_chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Extract the contact as JSON: {text}"}]



def hostile_listings(pieces: list[str]) -> tuple[Any, Any]:
    """Hypothesis strategies of texts made of `pieces` (control-token texts among them) and of
    tool listings holding such texts anywhere: names, descriptions, property names at any
    depth, and the values under them (enums, titles, defaults, examples, nested objects)."""
    from hypothesis import strategies as st

    texts = st.lists(st.sampled_from(pieces), max_size=5).map("".join)
    values = st.recursive(
        st.none() | st.booleans() | st.integers(-3, 3) | texts,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
        max_leaves=12,
    )
    tools = st.lists(st.builds(
        lambda name, description, properties: {"type": "function", "function": {
            "name": name, "description": description, "parameters": {"type": "object", "properties": properties}}},
        texts, texts, st.dictionaries(texts, values, max_size=4)), min_size=1, max_size=3)
    return texts, tools

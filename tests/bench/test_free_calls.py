"""The free baseline's parser takes a call in every form models write it, and nothing else."""

from __future__ import annotations

import pytest

from bench.free_calls import parse_free_calls

TOOLS = {"get_weather": ["city", "unit"], "math.hypot": ["x", "y"]}
PARIS = [{"name": "get_weather", "arguments": {"city": "Paris"}}]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}',  # tag never closed
        'Sure!\n```json\n{"name": "get_weather", "parameters": {"city": "Paris"}}\n```',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',
        '{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}',
        '{"tool_calls": [{"function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}]}',
        '{"get_weather": {"city": "Paris"}}',
        "{'name': 'get_weather', 'arguments': {'city': 'Paris'}}",
        'get_weather(city="Paris")',
        "[get_weather(city='Paris')]",
        '```python\nget_weather(\n    city="Paris",\n)\n```',
        'I will call get_weather("Paris") for you.',
        '<tool_call>\nget_weather(city="Paris")\n</tool_call>',
        'print(get_weather(city="Paris"))',
    ],
)
def test_every_form_of_one_call(text: str) -> None:
    assert parse_free_calls(text, TOOLS) == PARIS


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {"city": "Rome"}}]',
        '[get_weather(city="Paris"), get_weather(city="Rome")]',
        'get_weather(city="Paris")\nget_weather(city="Rome")',
    ],
)
def test_several_calls_in_order(text: str) -> None:
    assert [c["arguments"]["city"] for c in parse_free_calls(text, TOOLS)] == ["Paris", "Rome"]


def test_python_syntax_details() -> None:
    assert parse_free_calls("math.hypot(3, y=4.5)", TOOLS) == [{"name": "math.hypot", "arguments": {"x": 3, "y": 4.5}}]
    assert parse_free_calls('get_weather(city="a)b", unit=null)', TOOLS) == [
        {"name": "get_weather", "arguments": {"city": "a)b", "unit": None}}
    ]
    assert parse_free_calls("get_weather(city=true)", TOOLS)[0]["arguments"] == {"city": True}
    assert parse_free_calls("f(a=1)") == [{"name": "f", "arguments": {"a": 1}}]  # no tool list: any name


@pytest.mark.parametrize(
    "text",
    [
        "I cannot help with that.",
        "The weather (in Paris) is mild.",
        'get_weather(city=some_variable)',  # not a literal
        'get_weather("Paris", "celsius", "extra")',  # more positional arguments than parameters
        'unknown_tool(city="Paris")',  # Python syntax is read only for offered tools
        '{"city": "Paris"}',  # arguments without a tool name
        '{"name": "get_weather", "arguments": "not json"}',
    ],
)
def test_no_call(text: str) -> None:
    assert parse_free_calls(text, TOOLS) == []

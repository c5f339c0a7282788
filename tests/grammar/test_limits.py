"""Bounded work and typed errors: every input gives a grammar or a `GrammarError`, never a
`RecursionError`, a private exception, non-UTF-8 output or a silently wrong mask.

Each case that was once slow or deep runs in a subprocess with a timeout, so a regression fails
the test instead of hanging the suite (pytest-timeout is not a dependency).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import grammar
from grammar import CompileError, LimitError, Vocabulary, allocate_token_bitmask, apply_token_bitmask

ROOT = Path(__file__).resolve().parents[2]
CASE_TIMEOUT_S = 60


def outcome(code: str) -> str:
    """The type name of what `code` (which sets `result`) ends in, run in a fresh interpreter:
    "ok", or the exception's class name."""
    program = textwrap.dedent(
        """
        import json, grammar
        try:
        {body}
            print("ok")
        except Exception as e:
            print(type(e).__module__ + "." + type(e).__qualname__)
        """
    ).format(body=textwrap.indent(textwrap.dedent(code), "    "))
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=CASE_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


# --- enums and consts compile in time linear in their size -----------------------------------


@pytest.mark.parametrize(
    "values",
    [
        "[f'v{i}' for i in range(100_000)]",
        "[f'v{i}' for i in range(10_000)]",
        "list(range(4_000))",
    ],
)
def test_large_enums_compile(values):
    assert outcome(f"grammar.from_json_schema({{'enum': {values}}})") == "ok"


def test_enum_membership_is_exact():
    g = grammar.from_json_schema({"enum": [1, "1", True, [1], {"a": 1}], "not": {"const": 1.0}})
    assert not g.accepts("1") and not g.accepts("1.0")
    assert g.accepts('"1"') and g.accepts("true") and g.accepts("[1]") and g.accepts('{"a":1}')
    both = grammar.from_json_schema({"allOf": [{"enum": [1, 2.0, "x"]}, {"enum": [2, "x", False]}]})
    assert both.accepts("2") and both.accepts('"x"') and not both.accepts("1") and not both.accepts("false")


@pytest.mark.parametrize("depth", [3, 4])
def test_nested_const_objects_compile(depth):
    assert outcome(
        f"""
        def obj(d):
            return 1 if d == 0 else {{k: obj(d - 1) for k in "abcd"}}
        value = obj({depth})
        g = grammar.from_json_schema({{"const": value}})
        assert g.accepts(json.dumps(value, separators=(",", ":")))
        """
    ) == "ok"


def test_const_object_has_its_own_key_order():
    g = grammar.from_json_schema({"const": {"a": 1, "b": 2}})
    assert g.accepts('{"a":1,"b":2}')
    assert not g.accepts('{"b":2,"a":1}')  # fewer spellings, never more


# --- depth limits are LimitErrors ------------------------------------------------------------


DEEP_CASES = {
    "prefixItems of 200": "grammar.from_json_schema({'type': 'array', 'prefixItems': [{'type': 'integer'}] * 200})",
    "anyOf 600 deep": """
        s = {'type': 'integer'}
        for _ in range(600):
            s = {'anyOf': [s]}
        grammar.from_json_schema(s)
        """,
    "const of 900 nested arrays": """
        v = []
        for _ in range(900):
            v = [v]
        grammar.from_json_schema({'const': v})
        """,
    "schema text 100k deep": "grammar.from_json_schema('[' * 100_000 + ']' * 100_000)",
    "schema object text 100k deep": "grammar.from_json_schema('{\"a\":' * 100_000 + '1' + '}' * 100_000)",
    "items 300 deep": """
        s = {'type': 'integer'}
        for _ in range(300):
            s = {'type': 'array', 'items': s}
        grammar.from_json_schema(s)
        """,
    "long string with pattern": """
        g = grammar.from_json_schema({'type': 'string', 'minLength': 4000, 'maxLength': 5000, 'pattern': '^[ab]+$'})
        vocab = grammar.Vocabulary.from_tokens([b'a', b'b', b'"', b'ab' * 8, b''], eos_ids=(4,))
        grammar.Matcher(grammar.compile(g, vocab)).next_token_mask()
        """,
    "GBNF groups 500 deep": "grammar.from_gbnf('root ::= ' + '(' * 500 + '\"a\"' + ')' * 500)",
}


@pytest.mark.parametrize("case", list(DEEP_CASES))
def test_deep_inputs_give_typed_results(case):
    result = outcome(DEEP_CASES[case])
    assert result in ("ok", "grammar._errors.LimitError"), result


def test_prefix_items_keep_their_language():
    g = grammar.from_json_schema({"type": "array", "prefixItems": [{"const": i} for i in range(200)], "items": False})
    assert g.accepts(json.dumps(list(range(200)), separators=(",", ":")))
    assert g.accepts("[0,1,2]")
    assert not g.accepts("[0,2]")


def test_well_formed_reports_deep_groups():
    message = grammar.well_formed("root ::= " + "(" * 500 + '"a"' + ")" * 500)
    assert message is not None and "nest deeper" in message
    assert grammar.well_formed("root ::= " + "(" * 50 + '"a"' + ")" * 50) is None


def test_deep_const_is_a_limit_error():
    value: list = []
    for _ in range(900):
        value = [value]
    with pytest.raises(LimitError):
        grammar.from_json_schema({"const": value})


# --- no private exception escapes ------------------------------------------------------------


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
def test_branches_back_to_themselves_are_a_compile_error(keyword):
    schema = {"$defs": {"a": {keyword: [{"$ref": "#/$defs/a"}, {"type": "integer"}]}}, "$ref": "#/$defs/a"}
    with pytest.raises(CompileError, match="lead back to themselves"):
        grammar.from_json_schema(schema)
    with pytest.raises(CompileError):
        grammar.from_json_schema({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})


# --- lone surrogates -------------------------------------------------------------------------


def _vocab(tokens: list[bytes]) -> Vocabulary:
    return Vocabulary.from_tokens([*tokens, b""], eos_ids=(len(tokens),))


def _only_document(compiled) -> bytes:
    """The one document a single-value grammar lets a byte-level matcher write."""
    matcher = grammar.Matcher(compiled)
    out = b""
    while not matcher.is_complete():
        allowed = matcher.next_token_mask().allowed_ids()
        token = int(allowed[0])
        out += bytes(compiled.tables.token_bytes[token])
        assert matcher.accept_token(token)
    return out


def test_lone_surrogate_is_escaped_and_agrees_with_the_matcher():
    g = grammar.from_json_schema({"const": "\ud800"})
    vocab = _vocab([bytes([b]) for b in range(128)])
    document = _only_document(grammar.compile(g, vocab))
    text = document.decode("utf-8")  # valid UTF-8
    assert json.loads(text) == "\ud800"
    assert g.accepts(text) and g.accepts(document)


def test_surrogate_pair_in_a_string_has_no_json_text():
    # JSON decoders join the escapes of a high and a low surrogate into one code point.
    g = grammar.from_json_schema({"enum": ["\ud83d\ude00", "x"]})
    assert g.accepts('"x"')
    assert not g.accepts('"\\ud83d\\ude00"')


# --- empty languages are a CompileError at compile --------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: grammar.from_gbnf('root ::= "a" root'),
        lambda: grammar.from_json_schema(
            {"$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}, "minItems": 1}}, "$ref": "#/$defs/a"}
        ),
    ],
)
def test_recursive_empty_language_is_a_compile_error(make):
    with pytest.raises(CompileError, match="matches no text"):
        grammar.compile(make(), _vocab([b"a", b"[", b"]"]))


def test_empty_recursive_part_is_never_entered():
    schema = {
        "$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}, "minItems": 1}},
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/a"}},
    }
    tokens = [b"{", b"}", b'"p"', b":", b"[", b"]"]
    matcher = grammar.Matcher(grammar.compile(grammar.from_json_schema(schema), _vocab(tokens)))
    assert matcher.accept_token(0)
    assert matcher.next_token_mask().allowed_ids().tolist() == [1]
    assert matcher.can_complete_within(1)


# --- wrong arguments to the matcher and the bitmask functions are ValueErrors ---------------


@pytest.fixture
def matcher():
    return grammar.Matcher(grammar.compile(grammar.from_regex("a+"), _vocab([b"a", b"b"] + [b"c"] * 40)))


@pytest.mark.parametrize(
    "bitmask, index, expected",
    [
        (np.zeros((1, 2), np.float64), 0, "int32"),
        (np.zeros((1, 3), np.int32), 0, "2 int32 words"),
        (np.zeros((1, 1), np.int32), 0, "2 int32 words"),
        (np.zeros((2, 4), np.int32)[:, ::2], 0, "C-contiguous"),
        (np.zeros((2, 2), np.int32), 2, "outside"),
        (np.zeros((2, 2), np.int32), -1, "outside"),
        (np.zeros(2, np.int32), 1, "only row 0"),
        (np.zeros((1, 1, 2), np.int32), 0, "dimensions"),
    ],
)
def test_fill_rejects_wrong_bitmasks(matcher, bitmask, index, expected):
    with pytest.raises(ValueError, match=expected):
        matcher.fill_next_token_bitmask(bitmask, index)


def test_fill_batch_rejects_too_few_rows(matcher):
    with pytest.raises(ValueError, match="outside"):
        grammar.fill_next_token_bitmasks([matcher, matcher.fork()], allocate_token_bitmask(1, 43))
    bitmask = allocate_token_bitmask(2, 43)
    grammar.fill_next_token_bitmasks([matcher, matcher.fork()], bitmask)
    assert bitmask[0, 0] == bitmask[1, 0] == 1


def test_apply_rejects_wrong_arguments():
    with pytest.raises(ValueError, match="int32"):
        apply_token_bitmask(np.zeros(40, np.float32), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="2 int32 words"):
        apply_token_bitmask(np.zeros(40, np.float32), np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="at least as many rows"):
        apply_token_bitmask(np.zeros((2, 40), np.float32), np.zeros((1, 2), np.int32))
    with pytest.raises(ValueError, match="float"):
        apply_token_bitmask(np.zeros(40, np.int32), np.zeros(2, np.int32))


@pytest.mark.parametrize("keyword", ["maxLength", "maxItems"])
def test_a_maximum_past_the_counted_limit_narrows_the_grammar_never_loosens_it(keyword):
    """A bound above what the grammar counts is held at that count: longer values are refused
    (the schema allows them, but none will be written), shorter ones still accepted."""
    g = grammar.from_json_schema({"type": "string" if keyword == "maxLength" else "array", keyword: 200_000})
    short, long_ = {
        "maxLength": ('"ab"', '"' + "a" * 200_001 + '"'),
        "maxItems": ("[1,2]", "[" + ",".join(["1"] * 200_001) + "]"),
    }[keyword]
    assert g.accepts(short)
    assert not g.accepts(long_)


def test_a_member_count_past_the_limit_is_refused():
    with pytest.raises(LimitError, match="maxProperties"):
        grammar.from_json_schema({"type": "object", "maxProperties": 200_000})

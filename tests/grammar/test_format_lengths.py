"""Formats with length bounds: every checked format with a `minLength` or `maxLength` compiles
within the usual limits (past 64 the length counted beside the format's automaton, not
multiplied into it), random walks of the matcher finish documents the validator accepts, no
text outside the bounds or the format is accepted, and every value the validator takes within a
bound is accepted."""

from __future__ import annotations

import json
import random
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import grammar
from grammar import CompileError, Vocabulary
from grammar._jsonschema.formats import CHECKED, format_language
from grammar._jsonschema.lengths import node_lengths
from ir_sampling import tokens_that_step
from test_matcher import _budget_steered

EOS = 0
FORMATS = sorted(CHECKED["draft2020-12"])
BOUNDS = [1, 60, 255, 2083, 100_000]
# Every byte alone (a walk can spell anything) and long runs, so a walk can reach 100,000
# characters in a few thousand tokens.
VOCAB = Vocabulary.from_tokens(
    [b""] + [bytes([b]) for b in range(1, 256)]
    + [b"a" * 64, b"1" * 64, b"a" * 8, b"1" * 8, b"ab.", b"http://", b"example.com", b'"'],
    eos_ids=[EOS],
)
WALKS = 2
RANDOM_STEPS = 30
STEERING = 4_000
LONGEST_WALK = 10_000  # minLength past which a walk is not tried


def _schema(name: str, keyword: str, bound: int) -> dict:
    return {"type": "string", "format": name, keyword: bound}


def _valid(schema: dict, value: object) -> bool:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER).is_valid(value)


def _walk(compiled: grammar.CompiledGrammar, rng: random.Random) -> str:
    """One matcher walk to EOS: a few random tokens, then steered to the shortest completion."""
    m = grammar.Matcher(compiled)
    taken: list[int] = []
    for step in range(RANDOM_STEPS + STEERING):
        allowed = m.next_token_mask().allowed_ids()
        assert allowed.size, "dead end: " + m.describe()
        token = int(allowed[rng.randrange(allowed.size)]) if step < RANDOM_STEPS else m.shortest_completion_token()
        assert m.accept_token(token)
        taken.append(token)
        if m.is_terminated():
            return VOCAB.decode([t for t in taken if t != EOS]).decode("utf-8")
    raise AssertionError("the walk did not finish")


def _empty(name: str, keyword: str, bound: int) -> bool:
    """Whether no string of the format meets the bound (so the schema has no string)."""
    shortest, longest = node_lengths(format_language(name))
    return shortest > bound if keyword == "maxLength" else longest is not None and longest < bound


@pytest.mark.parametrize("keyword", ["minLength", "maxLength"])
@pytest.mark.parametrize("bound", BOUNDS)
@pytest.mark.parametrize("name", FORMATS)
def test_every_format_with_every_length_bound_compiles_and_walks_valid(name, keyword, bound):
    schema = _schema(name, keyword, bound)
    if _empty(name, keyword, bound):
        with pytest.raises(CompileError, match="matches no text"):
            grammar.compile(grammar.from_json_schema(schema), VOCAB)
        return
    compiled = grammar.compile(grammar.from_json_schema(schema), VOCAB)
    if keyword == "minLength" and bound > LONGEST_WALK:
        # A walk that long visits more states than the matcher keeps (as for a plain string
        # of that minLength): check a text at the bound instead.
        value = _near(name, bound + 16)
        assert compiled.grammar.accepts(json.dumps(value))
        # The IRI checker takes some 20 s on 100,000 characters; its URI twin checks the same text.
        assert _valid(_schema(name.replace("iri", "uri"), keyword, bound), value)
        assert not compiled.grammar.accepts(json.dumps(value[: bound - 1]))
        return
    rng = random.Random(f"{name} {keyword} {bound}")
    for _ in range(WALKS):
        text = _walk(compiled, rng)
        value = json.loads(text)
        assert _valid(schema, value), f"walked {text[:200]!r} under {schema}"


@lru_cache(maxsize=None)
def _grammar(name: str, keyword: str, bound: int) -> grammar.Grammar | None:
    try:
        return grammar.from_json_schema(_schema(name, keyword, bound))
    except CompileError:
        return None


def _near(name: str, length: int) -> str:
    """A string of (about) `length` characters shaped like the format, valid or not."""
    k = max(length, 0)
    run = "a" * k
    shapes = {
        "email": "x@" + run[2:],
        "idn-email": "x@" + run[2:],
        "hostname": ".".join(run[i : i + 30] for i in range(0, k, 31)) or "a",
        "idn-hostname": ".".join(run[i : i + 30] for i in range(0, k, 31)) or "a",
        "json-pointer": "/" + run[1:],
        "relative-json-pointer": "0/" + run[2:],
        "time": "12:00:00." + "1" * max(k - 10, 1) + "Z",
        "date-time": "2024-02-29T12:00:00." + "1" * max(k - 21, 1) + "Z",
        "duration": "P" + "1" * max(k - 2, 1) + "D",
        "date": "2024-02-29",
        "uuid": "123e4567-e89b-12d3-a456-426614174000",
        "ipv4": "192.168.100.200",
        "ipv6": "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
        "uri-template": "{" + run[2:] + "}",
        "regex": "^" + run[1:],
    }
    return shapes.get(name, "http://x.org/#" + run[14:])


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(FORMATS),
    keyword=st.sampled_from(["minLength", "maxLength"]),
    bound=st.sampled_from(BOUNDS[:4]),
    offset=st.integers(-3, 3),
    cut=st.integers(0, 8),
)
def test_no_text_outside_the_bound_or_the_format_is_accepted(name, keyword, bound, offset, cut):
    g = _grammar(name, keyword, bound)
    if g is None:
        return
    value = _near(name, bound + offset)
    for candidate in (value, value[cut:], value[: len(value) - cut]):
        text = json.dumps(candidate, ensure_ascii=False)
        if g.accepts(text):
            assert _valid(_schema(name, keyword, bound), candidate), f"accepted {text[:120]!r}"


def test_an_http_url_bound_keeps_every_url_within_it():
    """pydantic's `HttpUrl` schema: the length is counted beside the URI's automaton, so a URL
    of any shape fits up to the bound, however its characters fall between its parts; one past
    the bound does not."""
    g = grammar.from_json_schema({"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083})
    for url in ("https://example.com", "https://docs.example.org/products/electronics?id=5&q=a%20b#top",
                "http://user@host.example:8080/a/b/c.html", "ftp://your-dcos-url.com",
                "http://x.org/" + "a" * 2070, "a:" + "b" * 2081, "https://" + "h" * 2075,
                "x://h?" + "q" * 2077):
        assert g.accepts(json.dumps(url)), url[:80]
    assert not g.accepts(json.dumps("http://x.org/" + "a" * 2071))
    assert not g.accepts(json.dumps("no scheme"))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), budget=st.integers(8, 80), bound=st.sampled_from([65, 300, 2083]))
def test_a_counted_format_closes_within_any_budget_it_promises(seed, budget, bound):
    """The fewest tokens to close a document inside a counted language (found layer by layer,
    not state by state) are a bound a decoder can trust: steered by random scores, a document
    whose first state promised to close within the budget closes within it, and validates."""
    schema = {"type": "object", "properties": {"url": {"type": "string", "format": "uri", "maxLength": bound}},
              "required": ["url"], "additionalProperties": False}
    compiled = grammar.compile(grammar.from_json_schema(schema), VOCAB)
    m = grammar.Matcher(compiled)
    if not m.can_complete_within(budget):
        return
    scores = np.random.default_rng(seed).normal(size=(64, VOCAB.size))
    written = [t for t in _budget_steered(m, scores, budget) if t != EOS]  # EOS is not counted against the budget
    assert len(written) <= budget, "the budget ran out"
    assert _valid(schema, json.loads(VOCAB.decode(written).decode("utf-8")))


_URI_PARTS = st.sampled_from(["http", "https", "ftp", "x", "://", ":", "/", "?", "#", "@", "%20", "%", "a.b",
                              "docs", "example.org", "8080", "-", "_", "~", "=", "&", " ", "[", "é", "\"\"", "\n"])


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_URI_PARTS, max_size=12), name=st.sampled_from(["uri", "uri-reference", "json-pointer"]),
       bound=st.sampled_from([65, 100, 255, 2083]), pad=st.integers(-4, 4))
def test_a_format_under_a_long_bound_is_held_exactly(parts, name, bound, pad):
    """Past the exact product's bound, a format's strings of every length up to the bound are
    the validator's (URIs without IP literals, which the grammar leaves out; an IRI is held as a
    URI, so it is not asked here): values built of URI
    pieces, padded to about the bound, are accepted exactly where the validator accepts them."""
    text = "".join(parts)
    if "[" in text:
        return  # an IP literal: outside the URI language the grammar holds (see docs/limits.md)
    text += "p" * max(bound - len(text) + pad, 0)
    g = _grammar(name, "maxLength", bound)
    assert g is not None
    schema = _schema(name, "maxLength", bound)
    assert g.accepts(json.dumps(text, ensure_ascii=False)) == _valid(schema, text), (name, bound, len(text), text[:80])


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="aZ9-.", max_size=70),
    bound=st.integers(1, 63),
)
def test_a_hostname_within_a_label_is_held_exactly(text, bound):
    """Up to `maxLength` 63 a hostname's labels and its length need no bound of their own: the
    grammar takes exactly the names the validator takes within the bound (any number of
    labels, each as long as the bound allows)."""
    g = _grammar("hostname", "maxLength", bound)
    assert g is not None
    assert g.accepts(json.dumps(text)) == _valid(_schema("hostname", "maxLength", bound), text), (text, bound)


@settings(max_examples=300, deadline=None)
@given(labels=st.lists(st.tuples(st.integers(0, 70), st.sampled_from(["a", "Z9", "-", "x-y"])), min_size=1, max_size=9),
       dot=st.booleans(), bound=st.sampled_from([64, 100, 255, 300, 2083]), pad=st.integers(-2, 2))
def test_a_hostname_under_a_longer_bound_is_held_exactly(labels, dot, bound, pad):
    """Past 63, a hostname's labels are counted to the label limit and its length to the
    bound and the name's limit of 253 together: any number of labels of any length the checker
    takes (names of 254 with a final dot aside, which the grammar leaves out)."""
    names = [(fill * n)[:n] for n, fill in labels]
    if len(names) > 1:  # one long label brings the name to about the bound
        names[-1] += "b" * max(min(bound, 253) - len(".".join(names)) + pad, 0)
    text = ".".join(names) + ("." if dot else "")
    if len(text) == 254 and dot:
        return
    g = _grammar("hostname", "maxLength", bound)
    assert g is not None
    assert g.accepts(json.dumps(text)) == _valid(_schema("hostname", "maxLength", bound), text), (bound, text)


def test_one_counted_language_used_by_many_tools_is_built_once():
    """Tools compiled apart may share an argument's counted language (a URL under 2,083): it
    is built once and called, so nine such tools fit where nine copies would not."""
    schema = {"type": "object", "properties": {"url": {"type": "string", "format": "uri", "maxLength": 2083}},
              "required": ["url"], "additionalProperties": False}
    tools = [grammar.ToolSchema(f"fetch_{i}", schema) for i in range(9)]
    compiled = grammar.compile(grammar.tool_calls_or_text(tools), VOCAB)
    assert grammar.Matcher(compiled).next_token_mask().count > 0
    assert len(compiled.automaton.nfa.counted_blocks) == 1


def test_a_large_pattern_under_a_long_bound_is_spread_not_cut_short():
    """A pattern whose automaton times the bound would not fit the count keeps its length
    spread over its parts, not a count cut down to a few dozen characters."""
    g = grammar.from_json_schema({"type": "string", "pattern": "^(?:[a-z]{1,30}[0-9]{1,30}-){1,50}$", "maxLength": 5000})
    assert g.accepts(json.dumps("abc123-" * 40))
    assert not g.accepts(json.dumps("abc123-" * 40 + "!"))


def test_a_hostname_bound_keeps_a_three_label_name():
    g = grammar.from_json_schema({"type": "string", "format": "hostname", "maxLength": 60})
    assert g.accepts('"www.example.com"')
    assert g.accepts('"p.Ala100Gly"') and g.accepts(json.dumps("a." * 29 + "bc"))
    assert not g.accepts(json.dumps("a" * 30 + "." + "b" * 30))


@settings(max_examples=60, deadline=None)
@given(
    run=st.sampled_from(["[a-z]", "[A-Z0-9_-]", "[0-9]"]),
    head=st.sampled_from(["", "ID-", "x"]),
    star=st.booleans(),
    bound=st.sampled_from([65, 100, 255, 300, 5000]),
    offset=st.integers(-3, 3),
    newline=st.booleans(),
)
def test_an_anchored_pattern_with_a_long_bound_is_held_exactly(run, head, star, bound, offset, newline):
    """A pattern's run beside the newline `$` allows (Python's `re`, as the validator reads
    it) takes exactly the room the newline leaves under a `maxLength` past the exact product's
    64: every length up to the bound is written, and the grammar and the validator agree on
    each text around it."""
    schema = {"type": "string", "pattern": f"^{head}{run}{'*' if star else '+'}$", "maxLength": bound}
    g = grammar.from_json_schema(schema)
    letter = {"[a-z]": "q", "[A-Z0-9_-]": "Q", "[0-9]": "7"}[run]
    n = max(bound + offset - len(head) - newline, 0)
    text = head + letter * n + ("\n" if newline else "")
    assert g.accepts(json.dumps(text)) == Draft202012Validator(schema).is_valid(text), (schema, len(text))


@settings(max_examples=60, deadline=None)
@given(
    run=st.sampled_from(["[a-zA-Z0-9_.-]", "[a-z]", "\\d", "x"]),
    plus=st.booleans(),
    least=st.integers(0, 5),
    bound=st.sampled_from([3, 8, 60, 255]),
    before=st.integers(0, 6),
    length=st.one_of(st.integers(0, 12), st.integers(50, 70), st.integers(250, 260)),
    other=st.sampled_from([" ", "!", "é", "\n"]),
)
def test_an_unanchored_class_with_bounds_holds_each_place_of_its_first_occurrence(
        run, plus, least, bound, before, length, other):
    """`pattern: "[a-z]+"` (no anchors) means "holds a letter somewhere"; under a length bound a
    text whose first letter stands among its first four characters is held at every length the
    bounds allow, and nothing the validator refuses is held, wherever that letter stands."""
    schema = {"type": "string", "pattern": run + ("+" if plus else ""), "minLength": least, "maxLength": bound}
    g = grammar.from_json_schema(schema)
    letter = {"[a-zA-Z0-9_.-]": "k", "[a-z]": "k", "\\d": "4", "x": "x"}[run]
    text = (other * before + letter * length)[:bound + 1]
    valid = Draft202012Validator(schema).is_valid(text)
    held = g.accepts(json.dumps(text, ensure_ascii=False))
    assert valid or not held, (schema, text)
    if before < 4:
        assert held == valid, (schema, len(text))


@pytest.mark.parametrize(
    "name, prefix",
    [
        ("uri", "https://docs.example.org/guides/structured"),
        ("uri", "urn:isbn:0451450523"),
        ("email", "ann.lee"),
        ("json-pointer", "/definitions/a"),
        ("uri-reference", "../guides/x"),
    ],
)
def test_a_counted_format_far_from_its_bound_agrees_with_every_token(smollm2_vocabulary, name, prefix):
    """Far from the bound every count of a state allows the same tokens, and a class that
    leads it on a count is taken to go on past any token without being followed: a real
    vocabulary's tokens, each stepped, say whether that was right."""
    schema = {"type": "string", "format": name, "maxLength": 2083}
    m = grammar.Matcher(grammar.compile(grammar.from_json_schema(schema), smollm2_vocabulary))
    assert m.accept_bytes(b'"' + prefix.encode())
    assert set(m.next_token_mask().allowed_ids().tolist()) == tokens_that_step(m, smollm2_vocabulary.size)

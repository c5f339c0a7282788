"""The recognizer against grammars with known languages and against independent oracles.

Oracles: Python `re.fullmatch` on a regex built from the same IR (for grammars without rule
references), a least-fixed-point span table computed straight from the IR (any grammar, short
texts), and `json.loads` (for a JSON grammar). Sentences generated from a grammar must be accepted.
"""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grammar._errors import CompileError, LimitError
from grammar._ir import (
    EMPTY,
    NOTHING,
    Alt,
    Chars,
    Lit,
    Node,
    Ref,
    Repeat,
    Rules,
    Seq,
    alt,
    char_set,
    chars,
    lit,
    negate,
    opt,
    plus,
    ref,
    repeat,
    seq,
    shallow,
    star,
)
from grammar._ir.nodes import RULE_HEIGHT, height
from grammar._recognize import accepts

# --- oracles -------------------------------------------------------------------------------


def to_regex(node: Node) -> str:
    """A Python regex with the same language as a reference-free IR node."""
    if isinstance(node, Lit):
        return re.escape(node.text)
    if isinstance(node, Chars):
        if not node.ranges:
            return "(?!)"
        body = "".join(
            f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in node.ranges
        )
        return f"[{body}]"
    if isinstance(node, Seq):
        return "".join(f"(?:{to_regex(item)})" for item in node.items)
    if isinstance(node, Alt):
        if not node.items:
            return "(?!)"
        return "(?:" + "|".join(to_regex(item) for item in node.items) + ")"
    if isinstance(node, Repeat):
        most = "" if node.max is None else str(node.max)
        return f"(?:{to_regex(node.item)}){{{node.min},{most}}}"
    raise AssertionError(f"no regex for {node!r}")


def spans_oracle(rules: Rules, text: str) -> bool:
    """Membership by the least fixed point of 'rule r derives text[i:j]', computed from the IR."""
    n = len(text)
    table: dict[str, dict[int, frozenset[int]]] = {name: {} for name in rules.rules}

    def ends(node: Node, i: int) -> set[int]:
        if isinstance(node, Lit):
            return {i + len(node.text)} if text.startswith(node.text, i) else set()
        if isinstance(node, Chars):
            return {i + 1} if i < n and ord(text[i]) in node else set()
        if isinstance(node, Ref):
            return set(table[node.name].get(i, ()))
        if isinstance(node, Seq):
            here = {i}
            for item in node.items:
                here = {e for p in here for e in ends(item, p)}
            return here
        if isinstance(node, Alt):
            return {e for item in node.items for e in ends(item, i)}
        if isinstance(node, Repeat):
            here, out, count = {i}, set(), 0
            if node.min == 0:
                out |= here
            while here and (node.max is None or count < node.max):
                here = {e for p in here for e in ends(node.item, p)}
                count += 1
                if count >= node.min:
                    if node.max is None and here <= out:
                        break
                    out |= here
            return out
        raise AssertionError(node)

    changed = True
    while changed:
        changed = False
        for name, node in rules.rules.items():
            row = table[name]
            for i in range(n + 1):
                new = frozenset(ends(node, i))
                if new != row.get(i, frozenset()):
                    row[i] = new
                    changed = True
    return n in table[rules.root].get(0, ())


class Stuck(Exception):
    """A random derivation ran out of depth."""


def generate(rules: Rules, node: Node, rng: random.Random, depth: int = 0) -> str:
    """A random sentence derived from `node`."""
    if depth > 30:
        raise Stuck
    if isinstance(node, Lit):
        return node.text
    if isinstance(node, Chars):
        if not node.ranges:
            raise Stuck
        lo, hi = rng.choice(node.ranges)
        return chr(rng.randint(lo, min(hi, lo + 3)))
    if isinstance(node, Ref):
        return generate(rules, rules.rules[node.name], rng, depth + 1)
    if isinstance(node, Seq):
        return "".join(generate(rules, item, rng, depth + 1) for item in node.items)
    if isinstance(node, Alt):
        if not node.items:
            raise Stuck
        return generate(rules, rng.choice(node.items), rng, depth + 1)
    if isinstance(node, Repeat):
        top = node.min + 3 if node.max is None else node.max
        count = rng.randint(node.min, top)
        return "".join(generate(rules, node.item, rng, depth + 1) for _ in range(count))
    raise AssertionError(node)


# --- strategies ----------------------------------------------------------------------------

ALPHABET = "abc"


def nodes(names: tuple[str, ...] = ()) -> st.SearchStrategy[Node]:
    """Small IR trees over ALPHABET, in normalised and raw shapes; references to `names`."""
    leaves = [
        st.text(ALPHABET, min_size=1, max_size=3).map(lit),
        st.text(ALPHABET, min_size=1, max_size=3).map(Lit),
        st.lists(st.tuples(st.integers(97, 100), st.integers(0, 2)), max_size=2).map(
            lambda rs: chars((lo, lo + w) for lo, w in rs)
        ),
        st.sampled_from([EMPTY, NOTHING, Chars(())]),
    ]
    if names:
        leaves.append(st.sampled_from(names).map(ref))

    def grow(inner: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
        bounds = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 4)))
        return st.one_of(
            st.lists(inner, max_size=3).map(lambda xs: seq(*xs)),
            st.lists(inner, max_size=3).map(lambda xs: Seq(tuple(xs))),
            st.lists(inner, max_size=3).map(lambda xs: alt(*xs)),
            st.lists(inner, max_size=3).map(lambda xs: Alt(tuple(xs))),
            st.tuples(inner, bounds).map(lambda t: repeat(t[0], t[1][0], t[1][1])),
            st.tuples(inner, bounds).map(
                lambda t: Repeat(t[0], t[1][0], t[1][1])
                if t[1][1] is None or t[1][1] >= t[1][0]
                else Repeat(t[0], t[1][1], t[1][0])
            ),
        )

    return st.recursive(st.one_of(*leaves), grow, max_leaves=8)


NAMES = ("root", "r1", "r2")
texts = st.text(ALPHABET + "d", max_size=8)


@st.composite
def rule_sets(draw) -> Rules:
    return Rules({name: draw(nodes(NAMES)) for name in NAMES}, "root")


# --- properties ----------------------------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes(), texts)
def test_regular_grammars_agree_with_python_re(node, text):
    rules = Rules({"root": node})
    assert accepts(rules, text) == bool(re.fullmatch(to_regex(node), text))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes(), st.randoms(use_true_random=False))
def test_regular_grammars_accept_their_sentences(node, rng):
    rules = Rules({"root": node})
    try:
        sentence = generate(rules, node, rng)
    except Stuck:
        assume(False)
    assert re.fullmatch(to_regex(node), sentence)
    assert accepts(rules, sentence)


class_runs = st.builds(
    lambda cls, others, bounds, tail: seq(
        repeat(alt(char_set(cls), *map(lit, others)), bounds[0], bounds[1]), tail
    ),
    st.text("abc", min_size=1, max_size=3),
    st.lists(st.text("abc", min_size=1, max_size=3), max_size=2),
    st.tuples(st.integers(0, 6), st.one_of(st.none(), st.integers(6, 20))),
    st.sampled_from([EMPTY, lit("a"), lit("c"), star(char_set("ab")), opt(lit("bc"))]),
)


@settings(max_examples=300, deadline=None)
@given(
    class_runs, st.text("abc", max_size=30), st.randoms(use_true_random=False), st.integers(0, 40)
)
def test_repeats_of_classes_scan_runs_exactly(node, text, rng, cut):
    rules = Rules({"root": node})
    sentence = generate(rules, node, rng)
    shorter = sentence[:cut] + sentence[cut + 1 :]
    longer = sentence[:cut] + sentence[cut // 2 :]
    for candidate in (text, sentence, shorter, longer):
        assert accepts(rules, candidate) == bool(re.fullmatch(to_regex(node), candidate))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule_sets(), texts)
def test_recursive_grammars_agree_with_the_span_fixpoint(rules, text):
    assert accepts(rules, text) == spans_oracle(rules, text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rule_sets(), st.randoms(use_true_random=False))
def test_recursive_grammars_accept_their_sentences(rules, rng):
    try:
        sentence = generate(rules, rules.rules["root"], rng)
    except (Stuck, RecursionError):
        assume(False)
    assume(len(sentence) <= 40)
    assert accepts(rules, sentence)


# --- a JSON grammar ------------------------------------------------------------------------

DIGIT = chars([(0x30, 0x39)])
WS = star(char_set(" \t\n\r"))
JSON = Rules(
    {
        "root": seq(WS, ref("value"), WS),
        "value": alt(
            ref("object"), ref("array"), ref("string"), ref("number"),
            lit("true"), lit("false"), lit("null"),
        ),
        "object": seq(
            lit("{"), WS,
            opt(seq(ref("member"), star(seq(WS, lit(","), WS, ref("member"))))),
            WS, lit("}"),
        ),
        "member": seq(ref("string"), WS, lit(":"), WS, ref("value")),
        "array": seq(
            lit("["), WS,
            opt(seq(ref("value"), star(seq(WS, lit(","), WS, ref("value"))))),
            WS, lit("]"),
        ),
        "string": seq(
            lit('"'),
            star(
                alt(
                    negate([(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C)]),
                    seq(
                        lit("\\"),
                        alt(
                            char_set('"\\/bfnrt'),
                            seq(lit("u"), repeat(chars([(48, 57), (65, 70), (97, 102)]), 4, 4)),
                        ),
                    ),
                )
            ),
            lit('"'),
        ),
        "number": seq(
            opt(lit("-")),
            alt(lit("0"), seq(chars([(0x31, 0x39)]), star(DIGIT))),
            opt(seq(lit("."), plus(DIGIT))),
            opt(seq(char_set("eE"), opt(char_set("+-")), plus(DIGIT))),
        ),
    }
)


def is_json(text: str) -> bool:
    def refuse(name: str):
        raise ValueError(name)

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError:
        return False
    return True


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([None, 1, 2]), st.booleans())
def test_json_grammar_accepts_serialized_values(value, indent, ascii_only):
    assert accepts(JSON, json.dumps(value, indent=indent, ensure_ascii=ascii_only))


@settings(max_examples=300, deadline=None)
@given(json_values, st.data())
def test_json_grammar_agrees_with_json_loads_on_mutations(value, data):
    text = json.dumps(value, ensure_ascii=False)
    pieces = '{}[]",:.-+0123456789eEtrufalsn \\ux\t'
    at = data.draw(st.integers(0, len(text)))
    cut = data.draw(st.integers(0, 2))
    insert = data.draw(st.text(pieces, max_size=2))
    mutated = text[:at] + insert + text[at + cut :]
    assume(not any(0xD800 <= ord(c) <= 0xDFFF for c in mutated))
    assert accepts(JSON, mutated) == is_json(mutated)


def test_json_grammar_examples():
    good = ['{}', '[]', ' 0 ', '-0.5e+10', '"a\\u00e9\\n"', '{"a": [1, {"b": null}], "c": true}']
    bad = ['', '{', '01', '1.', '"\x01"', '{"a" 1}', '[1,]', 'nul', '"\\x"', '{"a":1,}']
    assert all(accepts(JSON, text) for text in good)
    assert not any(accepts(JSON, text) for text in bad)


def test_large_json_document_stays_within_the_work_bound():
    rng = random.Random(7)
    rows = [
        {"id": i, "name": f"item {i}", "tags": ["x", "y\\z"][: i % 3], "price": rng.random() * 100,
         "ok": i % 2 == 0, "nested": {"deep": [[i], {"k": None}]}}
        for i in range(150)
    ]
    text = json.dumps({"rows": rows}, indent=1)
    assert len(text) > 20_000
    assert accepts(JSON, text)
    assert not accepts(JSON, text[:-1])
    assert not accepts(JSON, text.replace('"ok"', '"ok', 1))


# --- examples ------------------------------------------------------------------------------


def test_balanced_parentheses():
    rules = Rules({"root": star(seq(lit("("), ref("root"), lit(")")))})
    for text in ["", "()", "(())()", "((()())())"]:
        assert accepts(rules, text)
    for text in ["(", ")", "(()", "())(", ")("]:
        assert not accepts(rules, text)


def test_left_recursion():
    rules = Rules(
        {
            "root": alt(seq(ref("root"), char_set("+-"), ref("term")), ref("term")),
            "term": alt(seq(ref("term"), lit("*"), ref("atom")), ref("atom")),
            "atom": alt(plus(DIGIT), seq(lit("("), ref("root"), lit(")"))),
        }
    )
    for text in ["1", "1+2*3", "(1+2)*3-4", "((7))", "1*2*3+4-5"]:
        assert accepts(rules, text)
    for text in ["", "+1", "1+", "(1", "1**2", "()"]:
        assert not accepts(rules, text)


def test_hidden_left_recursion_through_nullable_rules():
    rules = Rules(
        {
            "root": alt(seq(ref("nil"), ref("root"), lit("x")), lit("y")),
            "nil": alt(EMPTY, seq(ref("nil"), ref("nil"))),
        }
    )
    assert accepts(rules, "y")
    assert accepts(rules, "yxxx")
    assert not accepts(rules, "xy")
    assert not accepts(rules, "")


def test_nullable_rules_complete_at_every_depth():
    rules = Rules(
        {
            "root": seq(ref("a"), ref("a"), lit("!"), ref("a")),
            "a": alt(ref("b"), lit("a")),
            "b": alt(EMPTY, ref("c")),
            "c": seq(ref("b"), ref("b")),
        }
    )
    for text in ["!", "a!", "aa!", "!a", "aa!a"]:
        assert accepts(rules, text)
    for text in ["", "aaa!", "!aa", "a"]:
        assert not accepts(rules, text)


@pytest.mark.parametrize(
    "node, good, bad",
    [
        (repeat(lit("ab"), 2, 3), ["abab", "ababab"], ["ab", "abababab", "aba"]),
        (repeat(char_set("xy"), 1, 2), ["x", "yx"], ["", "xyx"]),
        (repeat(alt(lit("a"), lit("bc")), 0, 2), ["", "a", "bca", "bcbc"], ["aaa", "b"]),
        (repeat(opt(lit("a")), 2, 3), ["", "a", "aaa"], ["aaaa"]),
        (repeat(alt(lit("a"), lit("bc")), 2, None), ["aa", "abcbca"], ["a", "bc", "ab"]),
        (repeat(repeat(lit("a"), 2, 2), 1, None), ["aa", "aaaa"], ["a", "aaa", ""]),
    ],
)
def test_bounded_repeats(node, good, bad):
    rules = Rules({"root": node})
    assert all(accepts(rules, text) for text in good)
    assert not any(accepts(rules, text) for text in bad)


def test_large_repeat_counts_are_counted_not_expanded():
    word = alt(lit("a"), lit("bc"))
    rules = Rules({"root": seq(repeat(word, 0, 5000), lit("!"))})
    assert accepts(rules, "a" * 5000 + "!")
    assert accepts(rules, "bc" * 2500 + "a" * 2500 + "!")
    assert not accepts(rules, "a" * 5001 + "!")
    exact = Rules({"root": repeat(word, 3000, 3000)})
    assert accepts(exact, "bc" * 3000)
    assert not accepts(exact, "bc" * 2999)
    run = Rules({"root": repeat(chars([(97, 122)]), 4000, 5000)})
    assert accepts(run, "q" * 4500)
    assert not accepts(run, "q" * 3999)
    assert not accepts(run, "q" * 5001)


def test_empty_languages():
    for rules in [
        Rules({"root": NOTHING}),
        Rules({"root": Chars(())}),
        Rules({"root": seq(lit("a"), ref("loop")), "loop": seq(ref("loop"), lit("b"))}),
        Rules({"root": repeat(NOTHING, 1, None)}),
    ]:
        for text in ["", "a", "ab", "abb"]:
            assert not accepts(rules, text)


def test_code_points_beyond_the_basic_plane():
    rules = Rules({"root": seq(lit("\U0001F600"), plus(chars([(0x10000, 0x10FFFF)])))})
    assert accepts(rules, "\U0001F600\U00010000\U0010FFFF")
    assert not accepts(rules, "\U0001F600")
    assert not accepts(rules, "\U0001F600\uffff")


def test_undefined_references_are_compile_errors():
    with pytest.raises(CompileError, match="'nowhere'"):
        accepts(Rules({"root": ref("nowhere")}), "")
    with pytest.raises(CompileError, match="'start'"):
        accepts(Rules({"root": EMPTY}, "start"), "")


def test_work_beyond_the_bound_raises_instead_of_answering():
    ambiguous = Rules({"root": alt(seq(ref("root"), ref("root")), lit("a"), EMPTY)})
    assert accepts(ambiguous, "a" * 20)
    with pytest.raises(LimitError):
        accepts(ambiguous, "a" * 60, work_limit=2_000)


def test_rules_edited_after_a_call_are_lowered_again():
    rules = Rules({"root": lit("a")})
    assert accepts(rules, "a")
    rules.rules["root"] = lit("b")
    assert accepts(rules, "b")
    assert not accepts(rules, "a")


@st.composite
def deep_nodes(draw) -> Node:
    """A random node nested well past `RULE_HEIGHT` levels, subtrees shared between levels."""
    leaves = draw(st.lists(nodes(), min_size=1, max_size=4))
    node = leaves[0]
    for level in range(draw(st.integers(RULE_HEIGHT - 4, 3 * RULE_HEIGHT))):
        other = leaves[level % len(leaves)]
        node = Seq((other, node)) if draw(st.booleans()) else Alt((node, other))
    return node


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deep_nodes(), st.lists(texts, max_size=4), st.randoms(use_true_random=False))
def test_shallow_rules_keep_the_language_under_the_height_bound(node, words, rng):
    """`shallow` cuts a deep body into rules no higher than the bound (a shallow body kept as
    it is) and the language is the one the deep body had (the recognizer on the deep body as
    the oracle: a regular expression that deep backtracks too long)."""
    short = seq(lit("x"), star(char_set("ab")))
    rules = shallow({"root": node, "short": short})
    assert rules["short"] is short and all(height(body) <= RULE_HEIGHT for body in rules.values())
    cut, deep = Rules(rules, "root"), Rules({"root": node})
    try:
        words.append(generate(deep, node, rng)[:12])  # a prefix, often outside: both kinds
    except Stuck:
        pass
    for text in words:
        assert accepts(cut, text) == accepts(deep, text)

"""The regex front end against its oracle, Python's `re`: `regex_node` accepts exactly the strings
`re.search` matches, `from_regex` exactly those `re.fullmatch` matches."""

from __future__ import annotations

import random
import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_sampling import edited, sentence

from grammar._errors import CompileError, LimitError
from grammar._grammar import Grammar
from grammar._regex import MAX_EXPANDED_SIZE, from_regex, regex_node

# Characters where Python's classes, anchors and `.` disagree with naive readings.
ALPHABET = "ab_-]\n\t 1٣é\u2028\u00a0\U0001d7d8Z"
TEXT_CHARS = st.characters(exclude_categories=["Cs"])


def search_grammar(pattern: str) -> Grammar:
    return Grammar({"root": regex_node(pattern)})


def python_accepts(pattern: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            re.compile(pattern)
        except re.error:
            return False
    return True


def assert_agrees(pattern: str, text: str) -> None:
    assert search_grammar(pattern).accepts(text) == bool(re.search(pattern, text)), (pattern, text)
    assert from_regex(pattern).accepts(text) == bool(re.fullmatch(pattern, text)), (pattern, text)


# --- generated patterns -------------------------------------------------------------------

ATOMS = st.sampled_from(
    [
        "a", "b", "ab", "\\n", "\\.", ".", "-", "]", "}", "{", "é", "\\u00e9", "\\x61", "\\141",
        "\\0", "\\t", "[ab]", "[^a]", "[a-c]", "[]a]", "[^]\\n]", "[a-]", "[\\]b]", "[.]",
        "\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "[\\d_]", "[^\\W\\d]", "[\\s-]",
        "^", "$", "\\A", "\\Z", "(?#note)",
    ]
)  # fmt: skip
QUANTIFIERS = st.sampled_from(
    ["", "", "", "?", "*", "+", "{2}", "{1,2}", "{0,}", "{,2}", "{1,}", "??", "*?", "+?", "{1,3}?"]
)


def _group(inner: str, quantifier: str, kind: int) -> str:
    opening = ["(", "(?:", "(?P<g>"][kind]
    return f"{opening}{inner}){quantifier}"


PATTERNS = st.recursive(
    st.builds(lambda atom, q: atom + q, ATOMS, QUANTIFIERS),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4).map("".join),
        st.lists(inner, min_size=2, max_size=3).map("|".join),
        st.builds(_group, inner, QUANTIFIERS, st.integers(0, 2)),
    ),
    max_leaves=8,
)


def _distinct_names(pattern: str) -> str:
    """Python refuses a group name used twice; generated patterns may repeat one."""
    counter = iter(range(1000))
    return re.sub(r"\(\?P<g>", lambda _: f"(?P<g{next(counter)}>", pattern)


# The recognizer bounds its work; highly ambiguous patterns on long texts would exceed it.
MAX_TEXT = 48
# Python's backtracking `re` takes exponential time on a quantified group (`(a|a)*b`, `(a+)+`),
# and high polynomial time on many unbounded repeats (`.*.*.*.*$`), given a long text that
# almost matches: there the oracle gets short texts only.
MAX_BACKTRACKING_TEXT = 12
QUANTIFIED_GROUP = re.compile(r"\)(\?|\*|\+|\{)")
UNBOUNDED = re.compile(r"[*+]|\{\d*,\}")


def backtracks_badly(pattern: str) -> bool:
    return bool(QUANTIFIED_GROUP.search(pattern)) or len(UNBOUNDED.findall(pattern)) >= 3

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(PATTERNS.map(_distinct_names).filter(python_accepts), st.data())
def test_generated_patterns_agree_with_python(pattern, data):
    rng = data.draw(st.randoms(use_true_random=False))
    matching = data.draw(st.from_regex(pattern, alphabet=TEXT_CHARS))
    full = data.draw(st.from_regex(pattern, fullmatch=True, alphabet=TEXT_CHARS))
    candidates = [matching, full, edited(matching, ALPHABET, rng), edited(full, ALPHABET, rng)]
    candidates += [
        "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6))) for _ in range(6)
    ]
    for rules in (search_grammar(pattern).rule_set(), from_regex(pattern).rule_set()):
        produced = sentence(rules, rng)
        if produced is not None:
            candidates.append(produced)
    limit = MAX_BACKTRACKING_TEXT if backtracks_badly(pattern) else MAX_TEXT
    for text in candidates:
        if len(text) <= limit:
            assert_agrees(pattern, text)


# --- chosen patterns ---------------------------------------------------------------------

TRICKY = [
    ("a$", ["a", "a\n", "a\n\n", "ba", "ab", "a\nb"]),
    ("^$", ["", "\n", "\n\n", "a"]),
    ("a\\Z", ["a", "a\n"]),
    ("\\Aa|b$", ["a", "xa", "xb", "xb\n", "b\nx"]),
    ("a?^b", ["b", "ab", "bc", "cb"]),
    ("(^|,)x", ["x", ",x", "ax", "a,x"]),
    ("a$\\n?", ["a", "a\n", "a\nb", "a\n\n"]),
    ("x*^y", ["y", "yz", "xy"]),
    ("$^", ["", "\n", "a", "\n\n"]),
    ("$\\n", ["\n", "a\n", "\n\n"]),
    ("(?:^|a|$)*b", ["b", "ab", "cb", "aab", "b\n", "xab"]),
    ("(a|^)+b", ["b", "ab", "xb", "xaab"]),
    ("(a$|b)+", ["a", "ba", "ab", "a\n", "bb\n"]),
    ("^(?:\\S+\\s+){0,3}\\S+$", ["a b c d", "a b c d e", "a  b\n", " a"]),
    ("[]a]", ["]", "a", "b"]),
    ("[^]a]", ["]", "b", "\n"]),
    ("[a-]", ["-", "a", "b"]),
    ("[\\]-]", ["]", "-", "a"]),
    ("a{,2}b", ["b", "aab", "aaab"]),
    ("x{", ["x{", "x"]),
    ("a{}", ["a{}", "a"]),
    ("a{1,2", ["a{1,2", "a"]),
    ("\\141\\0\\07", ["a\x00\x07", "a"]),
    ("[\\1-\\3]", ["\x02", "2"]),
    ("\\N{EM DASH}", ["\u2014", "-"]),
    ("\\U0001F600", ["\U0001f600", "x"]),
    ("(?P<year>\\d{4})-(?P<m>\\d\\d)", ["2024-01", "٢٠٢٤-٠١", "24-01"]),
    ("a(?#comment)*", ["", "aaa", "b"]),
    ("a+?b*?", ["a", "ab", "b"]),
    ("\\d", ["٣", "³", "a", "\U0001d7d8"]),
    ("\\w+", ["ß", "_", "²", "·", "-"]),
    ("\\s", ["\x1c", "\u2028", "\u00a0", "\u200b", "\x85"]),
    ("[^\\W\\d_]", ["a", "1", "_", "é", "-"]),
    (".", ["\n", "\r", "a"]),
    ("", ["", "anything"]),
    ("\\ud800", ["", "a"]),
]


@pytest.mark.parametrize("pattern,texts", TRICKY)
def test_tricky_patterns_agree_with_python(pattern, texts):
    for text in texts:
        assert_agrees(pattern, text)


@settings(max_examples=200, deadline=None)
@given(TEXT_CHARS, st.sampled_from(["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "."]))
def test_unicode_classes_follow_python(char, escape):
    assert from_regex(escape).accepts(char) == bool(re.fullmatch(escape, char))


def test_search_wraps_unanchored_sides_with_any_text():
    g = search_grammar("b")
    assert g.accepts("\n\U0010ffffb\n\n")
    assert not g.accepts("\n\n")


def test_surrogates_are_never_accepted():
    # Python matches a lone surrogate; no UTF-8 text can hold one, so the grammar never does.
    assert re.fullmatch(".", "\ud800")
    assert not from_regex(".").accepts("\ud800")


# --- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern,cause",
    [
        ("a(?=b)", "lookaround"),
        ("a(?!b)", "lookaround"),
        ("(?<=a)b", "lookaround"),
        ("(?<!a)b", "lookaround"),
        ("(a)\\1", "backreference"),
        ("(?P<x>a)(?P=x)", "backreference"),
        ("(a)?(?(1)b|c)", "conditional"),
        ("(?>a)", "atomic"),
        ("a*+", "possessive"),
        ("a{1,2}+", "possessive"),
        ("(?i)a", "flags"),
        ("(?s:.)", "flags"),
        ("\\bword", "word boundaries"),
        ("a\\B", "word boundaries"),
        ("(^a){9}", "anchor"),
    ],
)
def test_unsupported_constructs_are_refused_with_place(pattern, cause):
    assert python_accepts(pattern)
    with pytest.raises(CompileError) as info:
        regex_node(pattern, pointer="/properties/x/pattern")
    assert info.value.keyword == "pattern"
    assert info.value.pointer == "/properties/x/pattern"
    assert cause in str(info.value)


@pytest.mark.parametrize(
    "pattern", ["(", "a)", "[a", "a**", "*a", "\\", "(?<n>a)", "x{3,2}", "\\p{L}"]
)
def test_patterns_python_rejects_are_refused(pattern):
    assert not python_accepts(pattern)
    with pytest.raises(CompileError) as info:
        from_regex(pattern)
    assert "not a valid regular expression" in str(info.value)


def test_counted_repeats_are_bounded():
    with pytest.raises(LimitError) as info:
        regex_node("(?:a{100}){200}", pointer="/pattern")
    assert str(MAX_EXPANDED_SIZE) in str(info.value)
    assert info.value.pointer == "/pattern"
    assert from_regex("^.{1,256}$").accepts("x" * 256)


def test_deep_nesting_is_bounded():
    with pytest.raises(LimitError):
        from_regex("(" * 150 + "a" + ")" * 150)


def test_large_counts_match_exactly():
    g = from_regex("[0-9]{3,1200}")
    rng = random.Random(7)
    for n in (2, 3, 1200, 1201, rng.randint(3, 1200)):
        assert g.accepts("7" * n) == (3 <= n <= 1200)

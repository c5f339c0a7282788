"""GBNF both ways: rendered text means what the IR means, parses back to the same language, is
well formed, and is accepted by llama.cpp's own grammar parser; `gbnf_problem` names each defect."""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_sampling import edited, sentence

import grammar
from grammar._errors import CompileError, LimitError
from grammar._gbnf_parse import from_gbnf, gbnf_problem
from grammar._gbnf_render import to_gbnf
from grammar._grammar import Grammar
from grammar._ir import (
    ANY_CHAR,
    EMPTY,
    MAX_CODE_POINT,
    NOTHING,
    Alt,
    Chars,
    Lit,
    Repeat,
    Rules,
    Seq,
    alt,
    chars,
    lit,
    negate,
    ref,
    repeat,
    seq,
)
from grammar._regex import from_regex

ALPHABET = 'ab"\\\n\r\t-^][#|() é\x00\x7f\u2028\U0001f600'

# --- random IR grammars ------------------------------------------------------------------

RULE_NAMES = ["start", "item_1", "Item.2", "root"]  # the start rule is not named root

CODE_POINTS = st.one_of(
    st.sampled_from(
        [
            0,
            9,
            10,
            34,
            45,
            92,
            93,
            94,
            97,
            122,
            0xE9,
            0xD7FF,
            0xE000,
            0xFFFF,
            0x10000,
            MAX_CODE_POINT,
        ]
    ),
    st.integers(0, MAX_CODE_POINT),
)
RANGES = st.lists(
    st.tuples(CODE_POINTS, CODE_POINTS).map(sorted).map(tuple), min_size=1, max_size=4
)
# llama.cpp expands every bounded repeat into copies of its rule: large counts nested in large
# counts make its parser run for minutes, so its own check draws small counts only (large ones
# are checked there one at a time, in test_llama_cpp_parses_rendered_regex_and_texts_we_accept).
SMALL_COUNTS = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))).map(
    lambda c: (c[0], None if c[1] is None else c[0] + c[1])
)
COUNTS = st.one_of(
    SMALL_COUNTS,
    st.sampled_from([(0, 1000), (999, 1001), (1000, None), (0, 2500), (2, 2001)]),
)


def leaves(later_rules: tuple[str, ...]):
    options = [
        st.text(ALPHABET, min_size=1, max_size=3).map(lit),
        RANGES.map(chars),
        RANGES.map(negate),
        st.sampled_from([EMPTY, ANY_CHAR, NOTHING, Lit(""), Chars(())]),
    ]
    if later_rules:
        options.append(st.sampled_from(later_rules).map(ref))
    return st.one_of(*options)


@functools.cache  # building a recursive strategy is costly; one per set of names
def nodes(later_rules: tuple[str, ...], counts=COUNTS):
    return st.recursive(
        leaves(later_rules),
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=4).map(lambda items: seq(*items)),
            st.lists(inner, min_size=2, max_size=3).map(lambda items: alt(*items)),
            st.tuples(inner, counts).map(lambda x: repeat(x[0], *x[1])),
            # shapes the constructors would have normalised away
            st.lists(inner, min_size=1, max_size=3).map(lambda items: Seq(tuple(items))),
            st.lists(inner, min_size=1, max_size=2).map(lambda items: Alt(tuple(items))),
            st.tuples(inner, counts).map(lambda x: Repeat(x[0], *x[1])),
        ),
        max_leaves=6,
    )


@st.composite
def grammars(draw, counts=COUNTS) -> Rules:
    """Rules that reference only later rules, plus right recursion: never left-recursive."""
    count = draw(st.integers(1, len(RULE_NAMES)))
    names = RULE_NAMES[:count]
    rules = {}
    for i, name in enumerate(names):
        body = draw(nodes(tuple(names[i + 1 :]), counts))
        if draw(st.booleans()):
            body = alt(body, seq(lit(draw(st.text("ab{", min_size=1, max_size=2))), ref(name)))
        rules[name] = body
    return Rules(rules, names[0])


# The recognizer bounds its work, and ambiguous random grammars make long texts costly;
# counts past the chunk size are checked exactly by test_large_counts_render_exactly.
MAX_TEXT = 120

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(grammars(), st.randoms(use_true_random=False))
def test_rendered_text_parses_back_to_the_same_language(rules, rng):
    text = to_gbnf(rules)
    assert gbnf_problem(text) is None, text
    back = from_gbnf(text)
    original = Grammar(rules.rules, rules.root)
    samples = []
    for _ in range(4):
        for source in (rules, back.rule_set()):
            produced = sentence(source, rng)
            if produced is not None:
                samples += [produced, edited(produced, ALPHABET, rng)]
    samples += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 4))) for _ in range(4)]
    for s in samples:
        if len(s) <= MAX_TEXT:
            try:
                same = original.accepts(s) == back.accepts(s)
            except LimitError:
                continue  # the recognizer's work bound: a very ambiguous grammar, no verdict
            assert same, (s, text)


@SETTINGS
@given(grammars())
def test_rendered_names_follow_gbnf_rules(rules):
    text = to_gbnf(rules)
    defined = re.findall(r"^([^ \n]+) ::=", text, flags=re.MULTILINE)
    assert defined[0] == "root"
    assert all(re.fullmatch(r"[a-z0-9-]+", name) for name in defined)
    assert len(defined) == len(set(defined))
    assert to_gbnf(rules) == text


def test_escapes_and_classes_render_exactly():
    rules = Rules(
        {
            "root": seq(
                lit('"\\\n\r\t\x00\x7f\u2028é'), chars([(45, 45), (93, 94), (0xE000, 0xE001)])
            )
        }
    )
    text = to_gbnf(rules)
    assert text == 'root ::= "\\"\\\\\\n\\r\\t\\x00\\x7F\\u2028é" [\\x2D\\]\\x5E\\uE000\\uE001]\n'
    g = from_gbnf(text)
    assert g.accepts('"\\\n\r\t\x00\x7f\u2028é^') and not g.accepts('"\\\n\r\t\x00\x7f\u2028é[')


@pytest.mark.parametrize(
    "low,high", [(0, 1000), (999, 1001), (1000, None), (2, 2001), (1500, 3700), (2000, 2000)]
)
def test_large_counts_render_exactly(low, high):
    rules = Rules({"root": seq(repeat(alt(lit("ab"), lit("c")), low, high), lit("."))})
    back = from_gbnf(to_gbnf(rules))
    for n in {max(low - 1, 0), low, low + 1, high or low + 1500, (high or low) + 1}:
        text = "ab" * (n // 2) + "c" * (n - n // 2) + "."  # n items
        assert back.accepts(text) == (low <= n and (high is None or n <= high)), n


def test_a_counted_format_renders_its_length_spread_over_its_parts(llama_grammar_check):
    """GBNF cannot count beside a language: a URI under `maxLength` 2083 is rendered with the
    length spread over its parts, narrower than the grammar (never looser), and llama.cpp
    reads it."""
    g = grammar.from_json_schema({"type": "string", "format": "uri", "maxLength": 2083})
    text = g.to_gbnf()
    assert llama_grammar_check(text)
    back = from_gbnf(text)
    assert back.accepts('"https://example.org/a?b=c#d"') and g.accepts('"https://example.org/a?b=c#d"')
    long_segment = '"http://x.org/' + "a" * 500 + '"'
    assert g.accepts(long_segment) and not back.accepts(long_segment)
    assert not back.accepts('"http://x.org/' + "a" * 2071 + '"')


def test_nothing_and_empty_render_as_gbnf_can_state_them():
    assert from_gbnf(to_gbnf(Rules({"root": NOTHING}))).accepts("") is False
    g = from_gbnf(to_gbnf(Rules({"root": alt(EMPTY, lit("a"))})))
    assert g.accepts("") and g.accepts("a")


def test_nullable_loops_are_rewritten_without_changing_the_language():
    rules = Rules(
        {
            "root": seq(repeat(alt(lit("a"), EMPTY, ref("n")), 0, None), lit("b")),
            "n": alt(EMPTY, lit("c"), seq(lit("d"), ref("n"))),
        }
    )
    text = to_gbnf(rules)
    assert gbnf_problem(text) is None
    g, back = Grammar(rules.rules), from_gbnf(text)
    for s in ["b", "ab", "cdcb", "ddb", "dcab", "ba", "dd"]:
        assert g.accepts(s) == back.accepts(s)


def test_left_recursive_grammars_are_refused():
    rules = Rules({"root": alt(lit("x"), seq(repeat(lit("a"), 0, 1), ref("root"), lit("+")))})
    with pytest.raises(CompileError, match="left-recursive"):
        to_gbnf(rules)


def test_regex_grammars_render():
    for pattern in [r"^\w+@[^\s@]+\.[a-z]{2,}$", r"(?:^|,)\d{1,3}$", r"[\]\-^]\u00e9.\n"]:
        g = from_regex(pattern)
        back = from_gbnf(g.to_gbnf())
        for s in ["ab@c.de", ",123", "]é\t\n", "1,22"]:
            assert g.accepts(s) == back.accepts(s) == bool(re.fullmatch(pattern, s))


# --- reading GBNF ---------------------------------------------------------------------------

ARITHMETIC = """\
# integer arithmetic, spread over lines as llama.cpp's examples are
root ::= expr
expr ::= term (ws [-+] ws term)*   # sums
term ::= factor (ws [*/] ws factor)*
factor ::=
    number |
    "(" ws expr ws ")"
number ::= "-"? [0-9]{1,4}
ws ::= [ \\t]{0,2}
"""

JSONISH = (
    "root ::= value\r\n"
    'value ::= object | array | string | [0-9]+ | ("true" | "false" | "null")\r\n'
    'object ::= "{" (\r\n'
    '    string ":" value\r\n'
    '    ("," string ":" value)*\r\n'
    '  )? "}"\r\n'
    'array ::= "[" (value ("," value)*)? "]"\r\n'
    'string ::= "\\"" ([^"\\\\\\x00-\\x1F] | "\\\\" ["\\\\/bfnrt] | "\\\\u" [0-9a-fA-F]{4})* "\\""\r\n'
)


@pytest.mark.parametrize(
    "text,accepted,rejected",
    [
        (
            ARITHMETIC,
            ["1", "-12 + 3*(4-5)", "(((7)))", "1 +  2"],
            ["", "1 +", "12345", "1   + 2", "(1"],
        ),
        (
            JSONISH,
            ['{"a":[1,true,{}],"b\\n":"\\u00e9"}', "[]", '"x"'],
            ["{", '{"a"}', "[1,]", '"\\x"'],
        ),
        ('root ::= "ab"* "c"', ["c", "ababc"], ["abac", "abc "]),
        ('root ::= "a"{2}*', ["", "aaaa"], ["aaa"]),
        ("root ::= [^a] . [a-] [\\]\\[]", ["\nb-]", "xxa["], ["ab-]", "\nbb]"]),
        ('root ::= "\\x41\\u00e9\\U0001F600\\"\\\\\\[\\]"', ['Aé😀"\\[]'], ["Ae"]),
        ('root ::= x | y\nx ::= "x" # a comment\ny ::= x{1,3}', ["x", "xxx"], ["xxxx", ""]),
        ('root ::= "a" ( # comment in a group\n  "b" |\n  "c" )', ["ab", "ac"], ["a"]),
        ('root ::= "\\uD800" | "ok"', ["ok"], ["\ud800"]),
    ],
)
def test_gbnf_texts_mean_what_llama_cpp_reads(text, accepted, rejected):
    assert gbnf_problem(text) is None
    g = from_gbnf(text)
    for s in accepted:
        assert g.accepts(s), s
    for s in rejected:
        assert not g.accepts(s), s


# Each defect, where it is reported, and whether llama.cpp's parser refuses the text too.
DEFECTS = [
    ('root ::= "abc\nnext ::= "x"\n', "line 2, column 12: string literal is never closed", True),
    ("root ::= [a-z\n", "line 1, column 10: character class is never closed", True),
    ('root ::= ("a" | "b"\n', "line 1, column 10: '(' is never closed", True),
    ('root ::= "a")\n', "line 1, column 13: ')' closes no open group", True),
    ('root ::= item\nitem ::= "a" tail\n', "line 2, column 14: undefined rule 'tail'", True),
    ('start ::= "a"\n', "no rule named 'root'", True),
    ('root "a"\n', "line 1, column 6: expected '::='", True),
    ('root ::= "a"\n  | "b"\n', "line 2, column 3: expected a rule name", True),
    ('root ::= "\\q"\n', "line 1, column 11: unknown escape", True),
    ('root ::= "\\x4"\n', "line 1, column 11: expected 2 hex digits", True),
    ('root ::= *"a"\n', "line 1, column 10: '*' has nothing before it to repeat", True),
    ('root ::= "a"{2001}\n', "above llama.cpp's limit", True),
    ('root ::= ("a"{0,100}){0,30}\n', "past llama.cpp's limit", True),
    (
        'root ::= expr\nexpr ::= expr "+" t | t\nt ::= [0-9]\n',
        "line 2, column 1: left recursion",
        True,
    ),
    ('root ::= ws*\nws ::= | " "\n', "line 1, column 12: an unbounded repetition", True),
    (
        'root ::= "a"{3,2}\n',
        "line 1, column 13: repetition maximum 2 is below its minimum 3",
        False,
    ),
    ("root ::= []\n", "line 1, column 10: empty character class", False),
    (
        'root ::= "a"\nroot ::= "b"\n',
        "line 2, column 1: rule 'root' is defined twice (first on line 1)",
        False,
    ),
    ("root ::= <[42]>\n", "line 1, column 10: token references", False),
]


@pytest.mark.parametrize("text,problem,_llama_refuses", DEFECTS)
def test_gbnf_problem_names_each_defect_and_its_line(text, problem, _llama_refuses):
    found = gbnf_problem(text)
    assert found is not None and problem in found, found
    assert grammar.well_formed(text) == found  # the earlier name still works
    with pytest.raises(CompileError) as info:
        from_gbnf(text)
    assert info.value.reason == found


# --- llama.cpp's own parser -----------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_grammar_check(smollm2_gguf):
    """Whether llama.cpp builds a grammar sampler from a text (its parser and its checks)."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(smollm2_gguf).encode(), params)
    assert model, "llama.cpp could not load the SmolLM2 vocabulary"
    vocab = llama_cpp.llama_model_get_vocab(model)

    def parses(text: str) -> bool:
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode(), b"root")
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True

    yield parses
    llama_cpp.llama_model_free(model)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(rules=grammars(SMALL_COUNTS))
def test_llama_cpp_parses_every_rendered_grammar(llama_grammar_check, rules):
    text = to_gbnf(rules)
    assert llama_grammar_check(text), text


def test_llama_cpp_parses_rendered_regex_and_texts_we_accept(llama_grammar_check):
    for pattern in [r"\w+\s\d*", r"(?:^|,)x$", r"[^\]\-^\\]{2,5}.", "a{1500,2600}"]:
        assert llama_grammar_check(from_regex(pattern).to_gbnf()), pattern
    for text in [ARITHMETIC, JSONISH, 'root ::= "a"{2}*\n']:
        assert llama_grammar_check(text)


@pytest.mark.parametrize("text,problem,llama_refuses", DEFECTS)
def test_llama_cpp_refuses_the_defects_it_shares(llama_grammar_check, text, problem, llama_refuses):
    if llama_refuses:
        assert not llama_grammar_check(text), problem

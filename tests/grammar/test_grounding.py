"""Grounded values (`from_json_schema(..., grounding=Grounding(text))`): a string held to a span
of the source, a number to one it writes; sound against the plain grammar and the validator,
never empty, and a field that cannot be held keeps its plain grammar and says why."""

from __future__ import annotations

import gc
import json
import random
import re
import weakref
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

import grammar
from grammar import Grounding, Vocabulary, from_json_schema
from grammar._jsonschema.grounding import clause_break, numbers_in, singulars, word_ends, word_starts
from grammar._jsonschema.substrings import span_automaton
from ir_sampling import sentence

ALPHABET = 'ab 1,."\\\n\té€:'
EOS = 0
WALK_VOCAB = Vocabulary.from_tokens(
    [b""] + [bytes([b]) for b in range(1, 256)] + [b'"a', b'b"', b"ab", b'\\"', b"\\n", "é€".encode(), b'":"'],
    eos_ids=[EOS],
)
PATTERNS = [None, "^[a-z ]+$", "^[0-9]+$", "a", "^[^ ]*$", "^b", "x"]


def grounded(schema: dict) -> dict:
    return {**schema, "grounded": True}


def substrings(text: str) -> set[str]:
    return {text[i:j] for i in range(len(text) + 1) for j in range(i, len(text) + 1)}


def spans_of(text: str) -> set[str]:
    """The substrings a grounded string may be: those starting and ending where a word does,
    within one clause of one line (and the empty one)."""
    starts, ends = word_starts(text), word_ends(text)
    return {text[i:j] for i in range(len(text) + 1) for j in range(i, len(text) + 1)
            if i == j or (starts[i] and ends[j] and within_a_clause(text[i:j]))}


def within_a_clause(span: str) -> bool:
    return not any(clause_break(a, ord(b)) for a, b in zip([-1, *map(ord, span)], span))


@given(st.text(st.sampled_from(ALPHABET), max_size=30), st.text(st.sampled_from(ALPHABET), max_size=6))
def test_the_span_automaton_reads_exactly_the_substrings(source, probe):
    dfa = span_automaton(source)
    assert dfa.size <= max(1, 2 * len(source) - 1) + 1  # the suffix automaton's bound: one state per end-set
    for text in substrings(source) | {probe}:
        assert dfa.matches(text) == (text in source)


@given(st.text(st.sampled_from(ALPHABET), max_size=30), st.data())
def test_with_starts_and_ends_the_automaton_reads_the_substrings_with_an_occurrence_between_two(source, data):
    starts = data.draw(st.lists(st.booleans(), min_size=len(source), max_size=len(source)))
    ends = data.draw(st.lists(st.booleans(), min_size=len(source) + 1, max_size=len(source) + 1))
    dfa = span_automaton(source, starts, ends)
    for text in substrings(source):
        held = any(source.startswith(text, i) and starts[i] and ends[i + len(text)] for i in range(len(source)))
        assert dfa.matches(text) == (text == "" or held)


@given(st.text(st.sampled_from(ALPHABET), max_size=30), st.sets(st.tuples(st.sampled_from(ALPHABET), st.sampled_from(ALPHABET))))
def test_apart_leaves_out_exactly_the_substrings_that_read_a_pair_in_a_row(source, pairs):
    dfa = span_automaton(source, apart=lambda a, b: (chr(a) if a >= 0 else "", chr(b)) in pairs)
    for text in substrings(source):
        assert dfa.matches(text) == (text == "" or not any((a, b) in pairs for a, b in zip(text, text[1:])))


@pytest.mark.parametrize("value, longer", [
    ("Av. Paulista 1578", "Av. Paulista 1578, São Paulo"), ("Zürich", "Zürich,"), ("Kickoff: Project Łódź", None),
    ("1,249.00", None), ("Anna Müller", "Anna Müller\nHauptstraße 5"), ("Really", "Really? Yes"),
])
def test_a_span_stays_within_one_clause_of_one_line(value, longer):
    text = "Ship to Anna Müller\nHauptstraße 5, Av. Paulista 1578, São Paulo. Zürich, 1,249.00 each. " \
           "Kickoff: Project Łódź. Really? Yes."
    g = from_json_schema(grounded({"type": "string"}), grounding=Grounding(text))
    assert g.accepts(json.dumps(value, ensure_ascii=False))
    if longer is not None:
        assert not g.accepts(json.dumps(longer, ensure_ascii=False))


@pytest.mark.parametrize("cut, whole", [
    ("maria", "maria.gonzalez@correo.mx"), ("maria.gonzalez@correo", "maria.gonzalez@correo.mx"),
    ("Sach", "Sachs"), ("Jona", "Jonas"), ("K", "K-4410"), ("O", "O'Brien"), ("Ann Le", "Ann Lee"),
])
def test_a_span_ends_where_a_word_ends_not_inside_one_nor_at_a_mark_joining_its_parts(cut, whole):
    g = from_json_schema(grounded({"type": "string"}),
                         grounding=Grounding(f"Write to {whole}. Later: {whole}, and {whole}!"))
    assert g.accepts(json.dumps(whole)) and not g.accepts(json.dumps(cut))
    assert g.accepts(json.dumps(f"{whole}.")) and g.accepts(json.dumps(f"Write to {whole}"))


@pytest.mark.parametrize("text, singular", [
    ("How many umbrellas are in stock?", "umbrella"), ("What would 4 desk lamps cost?", "desk lamp"),
    ("Two watches and three boxes.", "watch"), ("Two watches and three boxes.", "box"),
    ("At 2.5 dollars each, what are all the staplers worth?", "stapler"),
])
def test_a_lowercase_plural_may_end_at_its_singular(text, singular):
    g = from_json_schema(grounded({"type": "string"}), grounding=Grounding(text))
    assert g.accepts(json.dumps(singular)) and g.accepts(json.dumps(singular.rsplit(" ", 1)[0]))


@given(st.text(st.sampled_from("abcdehilnorsuxz"), min_size=1, max_size=8), st.sampled_from(["s", "es"]),
       st.booleans())
def test_a_span_ends_inside_a_word_only_at_a_lowercase_plurals_singular(stem, ending, capital):
    word = stem + ending
    word = word.capitalize() if capital else word
    ends = word_ends(f"Ask for {word} today")
    inside = [j - len("Ask for ") for j in range(len("Ask for ") + 1, len("Ask for ") + len(word)) if ends[j]]
    assert [word[:j] for j in inside] == sorted(singulars(word), key=len)
    assert singulars(word) == [] or (not capital and len(word) >= 4 and word.endswith("s")
                                     and not word.endswith(("is", "us", "ss")) and word not in {"does", "goes"})


@pytest.mark.parametrize("cut, whole", [
    ("bject", "Subject"), ("gonzalez@correo.mx", "maria.gonzalez@correo.mx"), ("4410", "K-4410"),
    (" Amsterdam", "1015 CJ Amsterdam"),
])
def test_a_span_starts_where_a_word_starts_not_inside_one_nor_on_a_blank(cut, whole):
    g = from_json_schema(grounded({"type": "string"}), grounding=Grounding(f"Re: {whole}. Later: {whole}!"))
    assert g.accepts(json.dumps(whole)) and not g.accepts(json.dumps(cut))


@pytest.mark.parametrize("text, kept, refused", [
    ("What is the price of the kettle?", "kettle", "the kettle"),
    ("How many umbrellas are in stock?", "umbrellas", "many umbrellas"),
    ("How many umbrellas are in stock?", "umbrellas", "How many umbrellas"),
    ("Order A-1 and an Oslo pen.", "A-1", "an Oslo pen"),
    ("The Hague office", "Hague office", "The Hague office"),  # the cost: a name that opens with one
])
def test_a_span_never_starts_on_an_article_or_a_question_word(text, kept, refused):
    g = from_json_schema(grounded({"type": "string"}), grounding=Grounding(text))
    assert g.accepts(json.dumps(kept)) and not g.accepts(json.dumps(refused))


@given(st.lists(st.sampled_from(["the", "The", "a", "an", "how", "What", "many", "kettle", "Oslo", "pen", "A-1"]),
                min_size=1, max_size=8))
def test_no_span_opens_with_an_article_or_question_word_and_a_blank(words):
    text = " ".join(words)
    starts = word_starts(text)
    for match in re.finditer(r"\S+", text):
        opener = match.group().casefold() in {"the", "a", "an", "how", "what", "many"}
        assert starts[match.start()] is (not opener or match.end() == len(text))


def test_a_span_never_ends_on_a_blank_even_where_the_pattern_refuses_what_follows():
    g = from_json_schema(grounded({"type": "string", "pattern": "^[^0-9]*$"}),
                         grounding=Grounding("Ship to Av. Paulista 1578, São Paulo."))
    assert g.accepts(json.dumps("Av. Paulista")) and not g.accepts(json.dumps("Av. Paulista "))
    assert g.accepts(json.dumps("São Paulo", ensure_ascii=False))


def test_a_span_of_a_text_without_spaces_between_words_may_end_anywhere():
    g = from_json_schema(grounded({"type": "string"}), grounding=Grounding("東京都に住んでいます。"))
    assert g.accepts(json.dumps("東京", ensure_ascii=False)) and g.accepts(json.dumps("東京都", ensure_ascii=False))


@st.composite
def string_schemas(draw) -> dict:
    schema: dict = {"type": "string"}
    if draw(st.booleans()):
        schema["minLength"] = draw(st.integers(0, 4))
    if draw(st.booleans()):
        schema["maxLength"] = draw(st.integers(0, 12))
    pattern = draw(st.sampled_from(PATTERNS))
    if pattern is not None:
        schema["pattern"] = pattern
    return schema


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.sampled_from(ALPHABET), max_size=40), string_schemas(), st.randoms(use_true_random=False))
def test_a_grounded_string_is_a_span_the_plain_grammar_accepts_or_the_plain_grammar_itself(source, schema, rng):
    plain = from_json_schema(schema)
    g = from_json_schema(grounded(schema), grounding=Grounding(source))
    (note,) = g.grounding
    assert note.kind == "string" and note.pointer == ""
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    spans = spans_of(source)
    # Every span the schema allows is written as json.dumps writes it; nothing else, when held.
    fits = [s for s in spans if validator.is_valid(s)]
    if note.grounded:
        assert fits, "held to the source, yet no span fits"
        for s in fits:
            assert g.accepts(json.dumps(s, ensure_ascii=False))
        for s in ["zz", "a\u00e9b", source + "!"]:
            assert g.accepts(json.dumps(s, ensure_ascii=False)) == (s in spans and validator.is_valid(s))
    else:
        assert note.reason
        assert not fits or "too large" in note.reason or "counted" in note.reason
    # Each sentence of the grounded grammar is one of the plain grammar, a span, and valid.
    if sentence(plain.rule_set(), rng) is None:  # the schema allows no string at all
        return
    for _ in range(12):
        text = sentence(g.rule_set(), rng)
        assert text is not None, "the grounded language is empty"
        assert plain.accepts(text)
        value = json.loads(text)
        assert validator.is_valid(value)
        if note.grounded:
            assert value in spans


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.sampled_from(ALPHABET), min_size=1, max_size=30), st.randoms(use_true_random=False))
def test_a_token_walk_under_a_grounded_object_writes_spans_and_source_numbers(source, rng):
    schema = {
        "type": "object",
        "properties": {"name": grounded({"type": "string"}), "n": grounded({"type": "number"}),
                       "tags": {"type": "array", "items": grounded({"type": "string"}), "maxItems": 3}},
        "required": ["name", "n", "tags"], "additionalProperties": False,
    }
    g = from_json_schema(schema, grounding=Grounding(source))
    m = grammar.Matcher(grammar.compile(g, WALK_VOCAB))
    taken: list[int] = []
    for step in range(200):
        allowed = m.next_token_mask().allowed_ids()
        assert allowed.size > 0, "dead end"
        token = int(allowed[rng.randrange(allowed.size)]) if step < 12 else m.shortest_completion_token()
        assert m.accept_token(token)
        taken.append(token)
        if m.is_terminated():
            break
    value = json.loads(WALK_VOCAB.decode([t for t in taken if t != EOS]).decode("utf-8"))
    assert value["name"] in source and all(tag in source for tag in value["tags"])
    numbers = {Decimal(str(v)) for v in numbers_in(source)}
    n_note = next(n for n in g.grounding if n.pointer == "/properties/n")
    if n_note.grounded:
        assert Decimal(str(value["n"])) in numbers
    else:
        assert n_note.reason == "the source writes no number"


def test_a_span_is_written_as_json_writes_it_non_ascii_as_itself():
    source = 'He said "hi\\there"\nthen\tleft: café\x01.'
    g = from_json_schema(grounded({"type": "string"}), grounding=Grounding(source))
    for span in ['"hi\\there"', "said \"hi", "then\tleft", "café", "\x01.", "then\tleft: café\x01."]:
        assert g.accepts(json.dumps(span, ensure_ascii=False)), span
    assert not g.accepts(json.dumps("\n")) and not g.accepts(json.dumps(source))  # one line
    assert not g.accepts(json.dumps("café", ensure_ascii=True))  # \u00e9: another spelling
    assert not g.accepts('"caf"')  # a span ends where a word ends
    assert not g.accepts(json.dumps("cafe"))


def test_a_field_no_span_fits_keeps_its_plain_grammar_and_says_why():
    schema = {"type": "object", "properties": {
        "time": grounded({"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"}),
        "code": grounded({"type": "string", "pattern": "^[A-Z]{5}$"}),
    }}
    g = from_json_schema(schema, grounding=Grounding("We meet at 09:30 in room 4."))
    notes = {n.pointer: n for n in g.grounding}
    assert notes["/properties/time"].grounded and not notes["/properties/code"].grounded
    assert notes["/properties/code"].reason == "no span of the source fits the field's constraints"
    assert g.accepts('{"time":"09:30","code":"ABCDE"}')  # the plain grammar's value
    assert not g.accepts('{"time":"10:30"}')


def test_numbers_are_read_with_thousands_separators_and_decimal_commas():
    assert numbers_in("1,250.50") == [Decimal("1250.50")]
    assert numbers_in("1.250,50") == [Decimal("1250.50")]
    assert numbers_in("15 mats") == [Decimal("15")]
    assert numbers_in("3,5 kg") == [Decimal("3.5"), Decimal(3), Decimal(5)]  # or two numbers: "A(3,4)"
    assert set(numbers_in("1,250")) == {Decimal("1250"), Decimal("1.250")}
    assert numbers_in("1\u202f250,5") == [Decimal("1250.5")]
    assert numbers_in("on 2025-03-14 at 09:30") == [Decimal(2025), Decimal(3), Decimal(14), Decimal(9), Decimal(30)]
    assert numbers_in("it was -4 outside") == [Decimal(-4)]
    assert numbers_in("version 1.2.3") == [Decimal(1), Decimal(2), Decimal(3)]


def test_numbers_a_comma_parts_and_scales_written_after_them_are_read():
    assert numbers_in("points A(3,4) and B(1,2)") == [Decimal("3.4"), 3, 4, Decimal("1.2"), 1, 2]
    assert numbers_in("at 46.603354,1.8883340 on") == [Decimal("46.603354"), Decimal("1.8883340")]
    assert numbers_in("$1M in 2019 and $1.2M in 2020") == [1, 1_000_000, 2019, Decimal("1.2"), 1_200_000, 2020]
    assert numbers_in("1.2 million people, 15k units, 2.5bn") == [
        Decimal("1.2"), 1_200_000, 15, 15_000, Decimal("2.5"), 2_500_000_000]
    assert numbers_in("5 Kelvin, 3 kg, 10 MB") == [5, 3, 10]  # a unit is no scale


def test_a_grounded_number_is_one_the_text_writes_within_the_fields_bounds():
    text = "15 yoga mats at £1,250.50, 3 left, 2025."
    schema = {"type": "object", "properties": {
        "quantity": grounded({"type": "integer", "maximum": 100}),
        "price": grounded({"type": "number", "exclusiveMinimum": 20}),
        "far": grounded({"type": "integer", "minimum": 10**6}),
    }}
    g = from_json_schema(schema, grounding=Grounding(text))
    for value, ok in [('{"quantity":15}', True), ('{"quantity":3}', True), ('{"quantity":16}', False),
                      ('{"quantity":2025}', False), ('{"price":1250.50}', True), ('{"price":1250.5}', True),
                      ('{"price":15}', False), ('{"price":2025}', True), ('{"far":1000000}', True)]:
        assert g.accepts(value) == ok, value
    notes = {n.pointer: n for n in g.grounding}
    assert not notes["/properties/far"].grounded  # no number the text writes is a million
    assert notes["/properties/far"].reason == "no number the source writes fits the field's constraints"


def test_without_a_source_grounded_is_an_annotation():
    schema = {"type": "object", "properties": {"a": grounded({"type": "string"})}}
    g = from_json_schema(schema)
    assert g.grounding == ()
    assert g.accepts('{"a":"anything"}')


def test_equal_grounded_fields_each_get_a_note():
    schema = {"type": "object", "properties": {"a": grounded({"type": "string"}), "b": grounded({"type": "string"}),
                                               "c": {"type": "string"}}}
    g = from_json_schema(schema, grounding=Grounding("alpha beta"))
    assert {n.pointer for n in g.grounding if n.grounded} == {"/properties/a", "/properties/b"}
    assert g.accepts('{"a":"alpha","b":"beta","c":"gamma"}') and not g.accepts('{"a":"gamma"}')


def test_grounding_must_be_a_grounding():
    with pytest.raises(grammar.CompileError, match="grounding must be a Grounding"):
        from_json_schema({"type": "string"}, grounding="some text")  # type: ignore[arg-type]


def test_a_grammar_per_text_leaves_no_compiled_grammar_behind():
    """Each text's grammar is new: the compile cache keeps only the most recent ones (a compiled
    grammar holds its grammar, so a cache keyed weakly by grammar kept every one), and the
    caches the compile fills on the way are bounded."""
    from grammar._ir.counted import _liveness
    from grammar._masks.compiled import MAX_CACHED_COMPILES
    from grammar._jsonschema.grounding import _encoded

    schema = {"type": "object", "properties": {"a": grounded({"type": "string"}), "n": grounded({"type": "integer"})}}
    refs = []
    for i in range(300):
        g = from_json_schema(schema, grounding=Grounding(f"text {i} number {i * 7} and {i / 3}"))
        grammar.compile(g, WALK_VOCAB)
        refs.append(weakref.ref(g))
        del g
    gc.collect()
    assert sum(r() is not None for r in refs) <= MAX_CACHED_COMPILES
    assert _liveness.cache_info().maxsize is not None and _encoded.cache_info().maxsize is not None


@pytest.mark.parametrize("fmt, value", [("email", "j.mueller@brandt-soehne.de"), ("date", "2025-03-14"),
                                        ("uri", "https://example.com/x?y=1"), ("ipv4", "10.0.0.1")])
def test_a_format_is_intersected_with_the_sources_spans(fmt, value):
    text = "Mail j.mueller@brandt-soehne.de or see https://example.com/x?y=1 on 2025-03-14, ip 10.0.0.1."
    validator = Draft202012Validator({"format": fmt}, format_checker=Draft202012Validator.FORMAT_CHECKER)
    for bound in (None, 40):
        schema = {"type": "string", "format": fmt, **({"maxLength": bound} if bound else {})}
        g = from_json_schema(grounded(schema), grounding=Grounding(text))
        assert g.grounding[0].grounded
        assert g.accepts(json.dumps(value))
        spans = substrings(text)
        assert not any(g.accepts(json.dumps(s)) for s in ["x@y.io", "2024-01-01", "10.0.0.2"])
        rng = random.Random(fmt)
        for _ in range(10):
            written = json.loads(sentence(g.rule_set(), rng))
            assert written in spans and validator.is_valid(written)


def test_a_string_held_to_the_numbers_writes_their_spellings():
    text = "4 bowls at £12.50 each, €1,249.00 apiece"
    schema = {"anyOf": [{"type": "number", "grounded": True}, {"type": "string", "grounded": "numbers"}]}
    g = from_json_schema(schema, grounding=Grounding(text))
    for value, ok in [('12.50', True), ('"12.50"', True), ('"12.5"', True), ('"1249"', True), ('"£12.50"', False),
                      ('"5"', False), ('"bowls"', False)]:
        assert g.accepts(value) == ok, value
    short = from_json_schema({"type": "string", "maxLength": 3, "grounded": "numbers"}, grounding=Grounding(text))
    assert short.accepts('"4"') and not short.accepts('"12.5"')
    none = from_json_schema({"type": "string", "grounded": "numbers"}, grounding=Grounding("no digits"))
    assert none.grounding[0].reason == "the source writes no number" and none.accepts('"anything"')


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.sampled_from("Ann Lee, Oslo. 12 ab-c"), max_size=30),
       facets=st.sampled_from([{}, {"minLength": 1}, {"minLength": 3, "maxLength": 6}, {"pattern": "^[A-Z]"},
                               {"pattern": "[0-9]$"}]))
def test_a_grounded_strings_gbnf_form_is_a_sub_language_of_its_grammar(text, facets):
    """GBNF cannot count beside a language: a held string is given its language's shortest
    text there, which the full grammar accepts (never the empty string its constraints refuse)."""
    g = from_json_schema(grounded({"type": "string", **facets}), grounding=Grounding(text))
    rendered = grammar.from_gbnf(g.to_gbnf()).rule_set()
    for sample in {sentence(rendered, random.Random(seed)) for seed in range(3)}:
        assert sample is not None and g.accepts(sample), (sample, text, facets)
        assert Draft202012Validator({"type": "string", **facets}).is_valid(json.loads(sample))

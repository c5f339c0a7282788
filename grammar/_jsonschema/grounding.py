"""Grounded values: a string held to a span of a source text, a number to one the text writes.

A subschema marked `"grounded": true` (`GROUNDED`), compiled with a `Grounding`, gets as its
string language the source's spans (its substrings that start and end where a word does,
within one clause of one line: `substrings.span_automaton`) intersected with its own lengths, pattern
and format, written through the JSON-escaping homomorphism like every string; and as its
numbers the values the source writes (`numbers_in`: thousands separators and decimal commas
read; `written_numbers`: "two", "a dozen"), each in the spellings the field's plain grammar
accepts. A grounded string may
also be a date or time the source writes in other words, in its ISO spelling
(`written_dates`). Marked `"grounded":
"numbers"`, its strings are those numbers' spellings (a decimal written as a string). Where the two cannot be
composed exactly, or leave no value, the field keeps its plain grammar and says why: grounding
only ever narrows a field, never widens it, never empties it, never fails a compile.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cached_property, lru_cache
from operator import itemgetter

from .._errors import LimitError
from .._ir import NOTHING, Counted, Node, Ref, Rules, alt, chars, counted, lit, one_char_ranges, seq, walk
from . import lang
from .facets import Facets
from .limits import MAX_RULES
from .strings import encode, escape_text, quoted
from .substrings import span_automaton
from .vocabulary import NUMBERS, _ANY_DECODED
from .written_dates import written_dates, written_times
from .written_numbers import written_numbers

# Characters of a source past which its spans are not grounded (the automaton's rules, about
# one per character, would crowd the rule limit; a compile this large is past any latency goal).
MAX_SOURCE = 20_000


@dataclass(frozen=True)
class Grounding:
    """The text whose spans and numbers a grammar's grounded fields are held to.

    Passed to `from_json_schema(schema, grounding=Grounding(text))`; a subschema is grounded
    where it says `"grounded": true`. A grammar is built per source, so the automaton of its
    substrings is built once per `Grounding` however many fields and compiles use it.
    """

    source: str

    @cached_property
    def substrings(self) -> lang.DFA:
        """The source's spans: its substrings that start and end where a word does, within one
        clause of one line (`word_starts`, `word_ends`, `clause_break`), the empty one included."""
        return span_automaton(self.source, word_starts(self.source), word_ends(self.source), clause_break)

    @cached_property
    def numbers(self) -> tuple[Decimal, ...]:
        """The numbers the source writes, each once: in digits, in order, then in words ("a
        dozen" is 12)."""
        return tuple(dict.fromkeys(numbers_in(self.source) + written_numbers(self.source)))

    @cached_property
    def spelled(self) -> tuple[str, ...]:
        """The dates and times the source writes, in ISO spellings (`2025-03-14`, `14:00`):
        values a grounded string may take besides the source's spans."""
        return tuple(written_dates(self.source) + written_times(self.source))


# A letter or digit of a script written with spaces between words (not CJK's), and the offsets
# inside a word: between two such, or before a mark that joins two parts of one (an email's dot,
# `K-4410`'s hyphen).
_LETTER = r"[^\W_\u2E80-\U0010FFFF]"
_JOINS_BUT_A_POINT = r"\-'@_/+"
_JOINS = "." + _JOINS_BUT_A_POINT  # the marks that join a word's parts
_INSIDE_WORD = re.compile(rf"(?<={_LETTER})(?={_LETTER}|[{_JOINS}]{_LETTER})")
# A word of letters alone, to read as a plural: joined to no other part, a point after it ending a sentence.
_LOWER_WORD = re.compile(rf"(?<![\w{_JOINS}])[^\W\d_]+(?![\w{_JOINS_BUT_A_POINT}])")
_NO_SINGULAR = frozenset({"does", "goes"})  # verbs: "doe" and "goe" would be spans no value is
_AFTER_A_JOIN = re.compile(rf"(?<={_LETTER}[{_JOINS}])(?={_LETTER})")
_NO_VALUE_OPENS = re.compile(r"(?<!\w)(?:the|an?|how|what|which|who|whom|whose|where|when|why|many|much)(?=\s)",
                             re.IGNORECASE)
# The marks that end a clause where a blank follows (a span reads no blank after one, and ends
# on none of the first two), and the line breaks a span never reads.
_CLAUSE_MARKS = frozenset(map(ord, ",;!?"))  # (not a colon: "Kickoff: Project Łódź" is one title)
_CLAUSE_END = re.compile(r"[,;](?=\s|$)")
_LINE_BREAKS = frozenset(map(ord, "\n\r\u2028\u2029"))


def word_starts(source: str) -> list[bool]:
    """Per offset of `source`, whether a span may start there: not on a blank, not inside a
    word, nor just past a mark that joins two parts of one (`gonzalez@correo.mx` is no span of
    `maria.gonzalez@correo.mx`): a small model otherwise starts a value mid-word ("bject" from
    "Subject") or on the blank before it. Nor on an English article or question word before a
    blank ("the kettle", "How many", "many umbrellas"): no value starts so, and a small model
    held to the text took them for a product's name."""
    out = [not ch.isspace() for ch in source]
    for pattern in (_INSIDE_WORD, _AFTER_A_JOIN, _NO_VALUE_OPENS):  # each matches where no span starts
        for match in pattern.finditer(source):
            out[match.start()] = False
    return out


def word_ends(source: str) -> list[bool]:
    """Per end offset of `source`, whether a span may end there: not inside a word, nor at a
    mark that joins two parts of one (`maria.gonzalez@correo.mx`, `K-4410`), nor just after
    a mark that ends a clause (`Zürich,`) or after a blank (`"Av. Paulista "`): a small model
    closes a span early, mid-word ("Sach"), at an email's first dot, or before a part of the
    value its field's pattern refuses. A lowercase plural may also end at its singular
    (`singulars`: "umbrella" of "umbrellas")."""
    out = [True] + [not ch.isspace() for ch in source]  # the offset after a blank is no end
    for match in _INSIDE_WORD.finditer(source):
        out[match.start()] = False
    for match in _LOWER_WORD.finditer(source):
        for stem in singulars(match.group()):
            out[match.start() + len(stem)] = True
    for match in _CLAUSE_END.finditer(source):
        out[match.end()] = False
    return out


def singulars(word: str) -> list[str]:
    """The singulars a lowercase English plural may stand for ("umbrellas": "umbrella";
    "watches": "watch"; "boxes": "box" and "boxe"), none for another word. A request names a
    product in the plural ("How many umbrellas are in stock?", "4 desk lamps") where a tool's
    key is the singular: a span may end at either. A capitalised word (a name: "Sachs",
    "Jonas") keeps its one end, as a small model closes a span early where it can."""
    if (len(word) < 4 or not word.islower() or not word.endswith("s") or word.endswith(("is", "us", "ss"))
            or word in _NO_SINGULAR):
        return []
    found = [word[:-1]]
    if word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        found.append(word[:-2])
    return found


def clause_break(before: int, after: int) -> bool:
    """Whether a span may not read `after` right after `before`: a blank after a mark that ends
    a clause (", ", "; ", "! ", "? "), or a line break anywhere. A small model held to
    the text goes on copying past a value's end ("Av. Paulista 1578, São Paulo, 01310-100"):
    a value is a part of one clause of one line."""
    return after in _LINE_BREAKS or (before in _CLAUSE_MARKS and chr(after).isspace())


# Why a field kept its plain grammar where the source holds no value for it (a source or a
# field too large to hold is another matter: the value may well be there).
NO_SPAN = "no span of the source fits the field's constraints"
NO_NUMBER = "the source writes no number"
NO_NUMBER_FITS = "no number the source writes fits the field's constraints"
_UNFILLED = frozenset({NO_SPAN, NO_NUMBER, NO_NUMBER_FITS})


@dataclass(frozen=True)
class GroundedField:
    """What grounding did at one place of the schema: `kind` "string" or "number"; `grounded`
    False where the field kept its plain grammar, `reason` saying why."""

    pointer: str
    kind: str
    grounded: bool
    reason: str = ""

    @property
    def unfilled(self) -> bool:
        """Whether the field kept its plain grammar because the source holds no value for it."""
        return not self.grounded and self.reason in _UNFILLED


# A run of digits with the separators numbers are written with: `.` and `,` (either may be the
# decimal mark), an apostrophe and the thin or no-break spaces (thousands), starting where no
# letter, digit or separator stands before it. A sign counts where none stands before it either
# (not a date's `2025-03`, a range's `18-25`).
_RUN = re.compile(r"(?:(?<![\w.,'\u2019])([-\u2212]))?(?<![\w.,'\u2019])(\d+(?:[.,'\u2019\u00a0\u202f\u2009]\d+)*)")
_SEPARATOR = re.compile(r"[.,'\u2019\u00a0\u202f\u2009]")
# A comma between two numbers rather than inside one: not before exactly three digits (which
# group thousands), as in a point's "(3,4)" or coordinates' "46.603354,1.888334".
_LIST_COMMA = re.compile(r",(?!\d{3}(?!\d))")
# A scale written right after a number ("$1M", "1.2 million", "15k").
_SCALE = re.compile(r"\s?(thousand|million|billion|trillion|bn|[kKMB])(?!\w)")
_SCALES = {"thousand": 10**3, "k": 10**3, "K": 10**3, "million": 10**6, "M": 10**6, "billion": 10**9, "bn": 10**9,
           "B": 10**9, "trillion": 10**12}


def numbers_in(text: str) -> list[Decimal]:
    """The numbers `text` writes, each as every reading its separators allow: `1,250.50` and
    `1.250,50` are 1250.50, `1,250` is 1250 or 1.25, `3,5` is 3.5 or the two numbers 3 and 5
    (a comma not before three digits may part two numbers: "A(3,4)", and parts a run with dots
    that no reading fits: "46.603354,1.888334"); a run no reading fits
    (a version, an address: `1.2.3`) gives each of its digit groups as an integer. A scale
    written after a number counts too: "$1M", "1.2 million", "15k" are also 1000000,
    1200000, 15000."""
    out: list[Decimal] = []
    for match in _RUN.finditer(text):
        sign, run = match.group(1), match.group(2)
        values = _readings(run)
        parts = _LIST_COMMA.split(run) if set(_SEPARATOR.findall(run)) == {","} or not values else [run]
        values += [v for part in parts for v in _readings(part)] if len(parts) > 1 else []
        if not values:
            values = [Decimal(group) for group in _SEPARATOR.split(run)]
            sign = ""
        scale = _SCALE.match(text, match.end())
        if scale is not None:
            scaled = [v * _SCALES[scale.group(1)] for v in values]
            values += [v.quantize(1) if v == v.to_integral_value() else v for v in scaled]
        out.extend(-v if sign else v for v in values)
    return out


def _readings(run: str) -> list[Decimal]:
    groups = _SEPARATOR.split(run)
    seps = _SEPARATOR.findall(run)
    if not seps:
        return [Decimal(run)]
    found = []
    if len(set(seps)) == 1 and _thousands(groups):  # every separator groups thousands
        found.append(Decimal("".join(groups)))
    mark = seps[-1]
    if mark in ".," and mark not in seps[:-1] and len(set(seps[:-1])) <= 1 and _thousands(groups[:-1]):
        found.append(Decimal("".join(groups[:-1]) + "." + groups[-1]))
    return found


def _thousands(groups: list[str]) -> bool:
    return 1 <= len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])


def spellings(value: Decimal) -> list[str]:
    """A number's JSON spellings: as written (`18.50`) and shortest (`18.5`), no exponent."""
    written = format(value, "f")
    shortest = format(value.normalize(), "f") if value != 0 else "0"
    return list(dict.fromkeys((written, shortest)))


class GroundingMixin:
    """The compiler's grounded strings and numbers (a part of `_Compiler`): before the plain
    lowering in the method order, which each falls back to."""

    def lower_string(self, f: Facets) -> Node:
        if self.grounding is None or not f.grounded:
            return super().lower_string(f)  # type: ignore[misc]
        found = self._number_strings(f) if f.grounded == NUMBERS else self._grounded_string(f)
        if isinstance(found, str):
            self.note_grounding(f.pointer, "string", found)
            return super().lower_string(f)  # type: ignore[misc]
        self.note_grounding(f.pointer, "string", "")
        return found

    def lower_number(self, f: Facets) -> Node:
        plain = super().lower_number(f)  # type: ignore[misc]
        if self.grounding is None or not f.grounded:
            return plain
        found = self._grounded_numbers.get(plain)
        if found is None:
            found = self._grounded_numbers[plain] = self._grounded_number(plain)
        if isinstance(found, str):
            self.note_grounding(f.pointer, "number", found)
            return plain
        self.note_grounding(f.pointer, "number", "")
        return found

    def note_grounding(self, pointer: str, kind: str, reason: str) -> None:
        self.grounded_fields.append(GroundedField(pointer, kind, not reason, reason))

    def note_grounding_again(self, first: str, pointer: str) -> None:
        """The notes made at and under `first`, made at `pointer` too (an equal schema met again,
        whose rule is the first's)."""
        for note in list(self.grounded_fields):
            if note.pointer == first or note.pointer.startswith(first + "/"):
                self.grounded_fields.append(GroundedField(pointer + note.pointer[len(first):], note.kind,
                                                          note.grounded, note.reason))

    def _grounded_string(self, f: Facets) -> Node | str:
        """The field's grounded string texts, or why there are none."""
        source = self.grounding.source
        if len(source) > MAX_SOURCE:
            return f"the source is longer than the {MAX_SOURCE} characters grounded strings read"
        key = (f.min_len, f.max_len if f.max_len is None or f.max_len < len(source) else None,
               tuple(p for p, _ in f.patterns), tuple(n for n, _ in f.formats),
               tuple(p for p, _ in f.not_patterns), tuple(sorted(v for v in f.not_values if isinstance(v, str))))
        found = self._grounded_strings.get(key)
        if found is None:
            found = self._grounded_strings[key] = self._grounded_language(f, key[1])
        return found

    def _grounded_language(self, f: Facets, longest: int | None) -> Node | str:
        spans = self.grounding.substrings
        if len(self.rules) + 2 * spans.size > MAX_RULES:
            return "the source's spans would need more rules than a grammar may hold"
        try:
            plain = self._plain_dfa(f, longest)
        except LimitError as e:
            return f"the field's constraints are too large to intersect with the source ({e.reason})"
        if isinstance(plain, str):
            return plain
        if plain is None:
            dfa = spans
        else:
            try:
                dfa = lang.intersect(spans, plain)
            except LimitError:
                return "the field's constraints and the source make too large an automaton"
        # Dates and times written in other words, where the field asks for a form (a format, a pattern).
        spelled = [] if plain is None else [t for t in self.grounding.spelled if plain.matches(t) and not dfa.matches(t)]
        if dfa.is_empty() and not spelled:
            return NO_SPAN
        texts = [quoted(t) for t in spelled]
        return alt(*([] if dfa.is_empty() else [self.shared(span_text(dfa), "span")]), *texts)

    def _plain_dfa(self, f: Facets, longest: int | None) -> lang.DFA | None | str:
        """The field's plain string language as an automaton (None: any string, as far as the
        source's spans go), or why it has none that is exactly the plain grammar's."""
        excluded = [v for v in f.not_values if isinstance(v, str)]
        if not (f.patterns or f.formats or f.not_patterns or excluded):
            # Lengths alone; a bound past the source's length bounds nothing a span can be.
            return None if (f.min_len, longest) == (0, None) else lang.lengths(f.min_len, longest)
        decoded = super().string_language(f)  # type: ignore[misc]
        if decoded == _ANY_DECODED:
            return None
        if isinstance(decoded, Counted):
            return lang.intersect(_counted_dfa(decoded), lang.lengths(decoded.min, decoded.max))
        if any(isinstance(n, Ref) for n in walk(decoded)):
            # Rules are written only from the field's automaton, which is that language exactly.
            return self.string_dfa(f)  # type: ignore[attr-defined]
        if any(isinstance(n, Counted) for n in walk(decoded)):
            return "the field's length is counted beside its pattern, which spans cannot be intersected with"
        return lang.from_node(decoded)

    def _number_strings(self, f: Facets) -> Node | str:
        """The numbers the source writes, as strings holding their JSON spellings (`"12.50"`),
        those the field's string constraints allow."""
        numbers = self.grounding.numbers
        if not numbers:
            return NO_NUMBER
        try:
            plain = self._plain_dfa(f, f.max_len)
        except LimitError as e:
            return f"the field's constraints are too large to check the numbers against ({e.reason})"
        if isinstance(plain, str):
            return plain
        texts = [s for value in numbers for s in spellings(value) if plain is None or plain.matches(s)]
        if not texts:
            return NO_NUMBER_FITS
        return alt(*(lit(f'"{t}"') for t in dict.fromkeys(texts)))

    def _grounded_number(self, plain: Node) -> Node | str:
        """The source's numbers in the spellings `plain` (the field's number texts) accepts."""
        numbers = self.grounding.numbers
        if not numbers:
            return NO_NUMBER
        rules = self._reachable_rules(plain)
        from .._recognize import accepts

        texts = [s for value in numbers for s in spellings(value) if accepts(rules, s)]
        if not texts:
            return NO_NUMBER_FITS
        return alt(*(lit(t) for t in dict.fromkeys(texts)))

    def _reachable_rules(self, node: Node) -> Rules:
        rules = {"root": node}
        todo = [node]
        while todo:
            for n in walk(todo.pop()):
                if isinstance(n, Ref) and n.name not in rules:
                    rules[n.name] = self.rules[n.name]
                    todo.append(self.rules[n.name])
        return Rules(rules, "root")


def span_text(dfa: lang.DFA) -> Node:
    """The JSON string texts of `dfa`'s language, as one `Counted` language of encoded
    characters with no length bound: a state per automaton state, made at once, where rules
    (one per state, each encoded again) would cost a hundred times as much to build and to
    compile. The closing quote is a move of its own, from every final state into the one
    final state, so the language's end is reached only past it: a state inside a span then
    holds no way out of its rule, and its closure needs no search. Back ends that cannot
    count (GBNF) get the language's shortest text only: a sub-language (the empty string is
    not one where the field's constraints refuse it, a `minLength` of 1)."""
    end = len(dfa.edges)
    moves = []
    pieces: dict[tuple[int, int], Node] = {}  # a source's few characters, each encoded once
    for q, row in enumerate(dfa.edges):
        row_moves = [(pieces.get((lo, hi)) or pieces.setdefault((lo, hi), _encoded(lo, hi)), t) for lo, hi, t in row]
        if dfa.final[q]:  # the quote among the characters in code point order, as the edges go
            at = bisect_left(row, ord('"'), key=itemgetter(0))
            row_moves.insert(at, (_QUOTE, end))
        moves.append(row_moves)
    moves.append([])
    shortest = dfa.shortest()  # after the opening quote: its text, then the closing one
    fallback = lit(f'{escape_text(shortest)}"') if shortest is not None else NOTHING
    return seq(_QUOTE, counted(moves, [False] * end + [True], 0, None, fallback))


_QUOTE = lit('"')


@lru_cache(maxsize=4096)
def _encoded(lo: int, hi: int) -> Node:
    return encode(chars(((lo, hi),)))


def _counted_dfa(node: Counted) -> lang.DFA:
    """A `Counted` language's automaton, its length bounds left aside."""
    edges = []
    for row in node.moves:
        moves = []
        for piece, t in row:
            moves.extend((lo, hi, t) for lo, hi in one_char_ranges(piece) or ())  # one character each
        moves.sort()
        edges.append(moves)
    return lang.DFA(edges, list(node.final))

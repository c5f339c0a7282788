"""Lowering strings: bounded lengths, patterns and formats, through the JSON-escaping
homomorphism.
"""

from __future__ import annotations

from typing import Callable

from .._errors import CompileError, LimitError
from .._ir import ANY_CHAR, NOTHING, Node, chars, counted, ref, repeat
from . import lang
from .facets import Facets
from .formats import format_automaton, format_language, longest
from .lengths import exactly_within, node_lengths as _node_lengths, within
from .limits import COUNTED_STATES, EXACT_LENGTH_STATES, LENGTH_CAP, SMALL_LENGTH
from .strings import ANY_STRING, encode, excluding, string_text
from .vocabulary import _ANY_DECODED


class StringLoweringMixin:
    """The compiler's lower strings (a part of `_Compiler`)."""

    def lower_string(self, f: Facets) -> Node:
        decoded = self.string_language(f)
        if decoded == _ANY_DECODED:
            return self.json_string()
        # One rule however many properties use it: a `Counted` language's thousands of states
        # built once, and any string's masks inside it found once for every property.
        return self.shared(string_text(decoded, self.encoded_rule), "str")

    def json_string(self) -> Node:
        if "json-string" not in self.rules:
            self.rules["json-string"] = ANY_STRING
        return ref("json-string")

    def encoded_rule(self, name: str) -> Node:
        """A rule of JSON string-body texts for a rule of decoded strings."""
        encoded = name + "-json"
        if encoded not in self.rules:
            self.rules[encoded] = NOTHING  # placeholder: the body is encoded by `finish`
            self._to_encode.append(name)
        return ref(encoded)

    def finish(self) -> None:
        """Encode the rules of decoded strings that string texts refer to (iteratively: the
        rules of a long automaton form long chains)."""
        while self._to_encode:
            name = self._to_encode.pop()
            self.rules[name + "-json"] = encode(self.rules[name], self.encoded_rule)

    def regex(self, pattern: str, pointer: str) -> Node | None:
        if pattern not in self._regex:
            try:
                from .._regex import regex_node
            except ImportError:
                self.refuse("pattern needs the regular expression front end, which is not available", "pattern", pointer)
                return None
            try:
                self._regex[pattern] = regex_node(pattern, pointer=pointer)
            except CompileError as e:
                if isinstance(e, LimitError) or not self.lenient:
                    raise type(e)(e.reason, keyword="pattern", pointer=pointer) from None
                self.refuse(e.reason, "pattern", pointer)
                return None
        return self._regex[pattern]

    def string_language(self, f: Facets) -> Node:
        """Decoded strings satisfying `f`'s string keywords, as IR (small automata as rules)."""
        excluded = [v for v in f.not_values if isinstance(v, str)]
        if not f.patterns and not f.formats and not f.not_patterns:
            if not excluded:
                return repeat(ANY_CHAR, f.min_len, f.max_len)
            if (f.min_len, f.max_len) == (0, None):
                return excluding(excluded)
        if len(f.patterns) + len(f.formats) == 1 and not f.not_patterns and not excluded:
            if f.patterns:
                node = self.regex(*f.patterns[0])
            else:
                node = format_language(f.formats[0][0], f.max_len)
            if node is None:
                return repeat(ANY_CHAR, f.min_len, f.max_len)
            lo, hi = _node_lengths(node)
            if lo >= f.min_len and (f.max_len is None or (hi is not None and hi <= f.max_len)):
                return node
            if (hi is not None and hi < f.min_len) or (f.max_len is not None and lo > f.max_len):
                return NOTHING
            bound = max(f.min_len, f.max_len or 0)
            if bound > SMALL_LENGTH or (f.formats and format_automaton(f.formats[0][0], f.max_len).size * (bound + 1) > EXACT_LENGTH_STATES):
                # A long bound, or a large format: the length counted beside the language's
                # automaton instead of multiplied into it (spreading it over a URI's parts
                # refuses half the real URLs under 100 characters). A pattern that is one run
                # beside a few lengths keeps its run as a counted repeat of characters, exact
                # and with those repeats' masks by room.
                fitted = None if f.formats else exactly_within(node, f.min_len, f.max_len)
                if fitted is not None:
                    return fitted
                most = f.max_len
                limit = longest(f.formats[0][0]) if f.formats else None
                if limit is not None:  # the checker's own bound (a hostname's 253)
                    most = limit if most is None else min(most, limit)
                    if most < f.min_len:
                        return NOTHING
                dfa = format_automaton(f.formats[0][0], most) if f.formats else _automaton_of(node)
                if dfa is not None:
                    found = counted_language(dfa, f.min_len, most, lambda lo, hi: within(node, lo, hi),
                                             shorten=bool(f.formats))
                    if found is not None:
                        return found
                fitted = within(node, f.min_len, most)  # too large to count: spread
                if fitted is not None:
                    return fitted
        return lang.to_node(self.string_dfa(f), self.rule, self.name("str"))

    def string_dfa(self, f: Facets) -> lang.DFA:
        """The same language as an automaton (for intersections and complements)."""
        longest = f.max_len
        if longest is not None and longest > LENGTH_CAP and f.min_len <= LENGTH_CAP:
            longest = LENGTH_CAP  # strings up to the cap: a sub-language, so still sound
        dfa = lang.lengths(f.min_len, longest)
        for pattern, pointer in f.patterns:
            node = self.regex(pattern, pointer)
            if node is not None:
                dfa = lang.intersect(dfa, lang.from_node(node))
        for name, _ in f.formats:
            dfa = lang.intersect(dfa, format_automaton(name, f.max_len))
        for pattern, pointer in f.not_patterns:
            node = self.regex(pattern, pointer)
            if node is None:
                self.refuse("cannot enforce 'not pattern' without the pattern", "not", pointer)
                continue
            dfa = lang.intersect(dfa, lang.complement(lang.from_node(node)))
        excluded = [v for v in f.not_values if isinstance(v, str)]
        if excluded:
            dfa = lang.intersect(dfa, lang.from_node(excluding(excluded)))
        return dfa


def counted_language(dfa: lang.DFA, lo: int, hi: int | None,
                     spread: Callable[[int, int | None], Node | None], shorten: bool) -> Node | None:
    """The strings of `dfa`'s language of lo..hi code points, the length counted beside the
    automaton (see `Counted`), with `spread(lo, hi)` as the fallback for back ends that cannot count;
    None where the counts would make more than `COUNTED_STATES` states, unless `shorten`: then
    `hi` is brought down to what fits (a sub-language, so still sound; a format's automaton is
    small, so only a bound far past its values is cut, where a large pattern's would be cut to
    a few characters and a spread over its parts keeps more)."""
    if dfa.size * (lo + 1) > COUNTED_STATES:
        return None
    if hi is not None and dfa.size * (hi + 1) > COUNTED_STATES:
        if not shorten:
            return None
        hi = COUNTED_STATES // dfa.size - 1
    moves = []
    for row in dfa.edges:
        by_target: dict[int, list[tuple[int, int]]] = {}
        for a, b, t in row:
            by_target.setdefault(t, []).append((a, b))
        moves.append([(chars(ranges), t) for t, ranges in by_target.items()])
    fallback = spread(lo, hi)
    return counted(moves, dfa.final, lo, hi, NOTHING if fallback is None else fallback)


def _automaton_of(node: Node) -> lang.DFA | None:
    """A pattern's automaton, or None where it is too large to build."""
    try:
        return lang.from_node(node)
    except LimitError:
        return None

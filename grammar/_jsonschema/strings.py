"""JSON string texts from languages of decoded strings.

Schemas constrain the decoded value of a string (its length in code points, its pattern, its
format, its enum), while the grammar matches JSON text. Each code point has exactly one encoding
here, the one `json.dumps(..., ensure_ascii=False)` writes: itself, or `\\"`, `\\\\`, `\\n`,
`\\t`, `\\r`, `\\b`, `\\f`, `\\u00XX` for the characters JSON must escape, `\\uXXXX` for a
surrogate (a str may hold one, UTF-8 text cannot). Encoding a language of decoded strings is then
a homomorphism applied node by node, so lengths and exclusions carry over exactly, and no two
texts decode to the same value.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Callable, Iterable

from .._errors import CompileError
from .._ir import ANY_CHAR, EMPTY, NOTHING, Alt, Chars, Counted, Lit, Node, Ref, Repeat, Seq, alt, char_set, chars, lit, one_char_ranges, repeat, seq
from .._ir.ranges import complement, encodable, intersection

# Code points JSON text cannot hold as themselves.
_MUST_ESCAPE = ((0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C))


# A str may hold surrogates, UTF-8 text may not: JSON text holds them as `\\uXXXX` escapes only,
# and a decoder joins a high surrogate's escape and a low one's that follows into one code point.
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def escape_char(c: str) -> str:
    """The one JSON encoding of code point `c` (without quotes)."""
    return escape_text(c)


def escape_text(text: str) -> str:
    """The one JSON encoding of `text` (without quotes); a surrogate is written as its escape,
    which decoders give back as it is."""
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", body)


def has_text(text: str) -> bool:
    """Whether some JSON text decodes to `text`: not where a high surrogate is followed by a
    low one (their escapes decode to the one code point they pair into, another string)."""
    return _SURROGATE_PAIR.search(text) is None


def quoted(text: str) -> Node:
    """The JSON text of the string `text` (nothing where there is none: see `has_text`)."""
    return lit(f'"{escape_text(text)}"') if has_text(text) else NOTHING


_SHORT = {0x08: "b", 0x09: "t", 0x0A: "n", 0x0C: "f", 0x0D: "r"}


@lru_cache(maxsize=4096)
def _escape_class(ranges: tuple[tuple[int, int], ...]) -> Node:
    """The encodings of a class: its plain members, then its escaped members grouped as
    `\\` + one letter, or `\\u00` + two hex digits (lower case, as json.dumps writes)."""
    plain: list[tuple[int, int]] = []
    escaped: list[int] = []
    for lo, hi in ranges:
        cursor = lo
        for elo, ehi in _MUST_ESCAPE:
            if ehi < cursor or elo > hi:
                continue
            if elo > cursor:
                plain.append((cursor, elo - 1))
            escaped.extend(range(max(elo, cursor), min(ehi, hi) + 1))
            cursor = min(ehi, hi) + 1
        if cursor <= hi:
            plain.append((cursor, hi))
    letters = [_SHORT[c] for c in escaped if c in _SHORT] + [chr(c) for c in escaped if c in (0x22, 0x5C)]
    by_high: dict[str, list[str]] = {}
    for c in escaped:
        if c < 0x20 and c not in _SHORT:
            code = f"{c:02x}"
            by_high.setdefault(code[0], []).append(code[1])
    parts = [chars(plain)]
    if letters:
        parts.append(seq(lit("\\"), char_set("".join(letters))))
    if by_high:
        parts.append(
            seq(lit("\\u00"), alt(*(seq(lit(high), char_set("".join(lows))) for high, lows in sorted(by_high.items()))))
        )
    return alt(*parts)


def encode(node: Node, encoded_rule: Callable[[str], Node] | None = None) -> Node:
    """The JSON string-body texts of the decoded strings `node` matches (no quotes).

    A reference to a rule of decoded strings becomes `encoded_rule(name)`: a reference to the
    encoded copy of that rule.
    """
    if isinstance(node, Lit):
        return lit(escape_text(node.text)) if has_text(node.text) else NOTHING
    if isinstance(node, Chars):
        return _escape_class(node.ranges)
    if isinstance(node, Seq):
        return seq(*(encode(n, encoded_rule) for n in node.items))
    if isinstance(node, Alt):
        return alt(*(encode(n, encoded_rule) for n in node.items))
    if isinstance(node, Repeat):
        return repeat(encode(node.item, encoded_rule), node.min, node.max)
    if isinstance(node, Counted):
        return Counted(
            tuple(tuple((encode(piece), t) for piece, t in row) for row in node.moves),
            node.final, node.min, node.max, encode(node.fallback, encoded_rule),
        )
    if isinstance(node, Ref):
        if encoded_rule is None:
            raise CompileError("a string language must not reference rules", keyword="pattern")
        return encoded_rule(node.name)
    raise TypeError(f"not an IR node: {node!r}")


def string_text(decoded: Node, encoded_rule: Callable[[str], Node] | None = None) -> Node:
    """JSON string texts (quotes included) of the decoded strings `decoded` matches."""
    if decoded == NOTHING:
        return NOTHING
    return seq(lit('"'), encode(decoded, encoded_rule), lit('"'))


ANY_STRING_BODY = encode(repeat(ANY_CHAR, 0, None))
ANY_STRING = seq(lit('"'), ANY_STRING_BODY, lit('"'))


def excluding(names: Iterable[str], allowed: Node = ANY_CHAR) -> Node:
    """Decoded strings over the class `allowed` (a single class node) except those in `names`.

    A trie walk: at each node, a string either leaves the trie at a character no name continues
    with, or follows a name's next character, or stops where no name ends.
    """
    return _excluding(sorted(set(names)), allowed)


def _class_ranges(node: Node) -> tuple[tuple[int, int], ...]:
    ranges = one_char_ranges(node)
    if ranges is not None:
        return ranges
    if node == NOTHING:
        return ()
    raise TypeError("excluding() needs a single character class")


def _excluding(names: list[str], allowed: Node) -> Node:
    if not names:
        return repeat(allowed, 0, None)
    ranges = _class_ranges(allowed)
    firsts = sorted({n[0] for n in names if n})
    parts: list[Node] = []
    if "" not in names:
        parts.append(EMPTY)
    others = intersection(ranges, negate_ranges(tuple((ord(c), ord(c)) for c in firsts)))
    if others:
        parts.append(seq(chars(others), repeat(allowed, 0, None)))
    for c in firsts:
        if any(lo <= ord(c) <= hi for lo, hi in ranges):
            parts.append(seq(lit(c), _excluding([n[1:] for n in names if n and n[0] == c], allowed)))
    return alt(*parts)


def excluding_text(names: Iterable[str], rule: Callable[[str, Node], Node], tag: str) -> Node:
    """JSON string texts (quotes included) of every string except `names`, built encoded and
    with a rule per branching trie node, so large property sets stay cheap.

    Two tries side by side: the strings that stop on the way along a name without being one,
    and those that leave every name at some character; the latter all go on in one loop over
    any character, so a key that has left the names is in one state wherever it left them (a
    token read from a key's start is then found once, not once per place it leaves). Used in
    several places, the text wants a rule of its own: a call's end inside the leaving trie
    would stand inside the key, with most tokens crossing it."""
    trie: dict = {}
    for name in set(names):
        node = trie
        for ch in name:
            node = node.setdefault(ch, {})
        node[_END] = True
    counter = [0]

    def build(node: dict) -> tuple[Node, Node]:
        """The strings from `node` on that stop short of every name, and those that leave."""
        children = sorted(k for k in node if k is not _END)
        stops: list[Node] = [] if _END in node else [EMPTY]
        leaves: list[Node] = []
        others = intersection(ANY_CHAR.ranges, negate_ranges(tuple((ord(c), ord(c)) for c in children)))
        if others:
            leaves.append(_escape_class(others))
        for c in children:
            stop, leave = build(node[c])
            char = lit(escape_char(c))
            if stop != NOTHING:
                stops.append(seq(char, stop))
            if leave != NOTHING:
                leaves.append(seq(char, leave))
        # The parts differ by construction: build the alternations without hashing them.
        stop, leave = (NOTHING if not parts else parts[0] if len(parts) == 1 else Alt(tuple(parts))
                       for parts in (stops, leaves))
        if len(children) > 1:
            counter[0] += 1
            stop = stop if stop == NOTHING else rule(f"{tag}-{counter[0]}-stop", stop)
            leave = leave if leave == NOTHING else rule(f"{tag}-{counter[0]}-leave", leave)
        return stop, leave

    try:
        stop, leave = build(trie)
        rest = repeat(_escape_class(ANY_CHAR.ranges), 0, None)
        return seq(lit('"'), alt(stop, seq(leave, rest)), lit('"'))
    finally:
        build = None  # noqa: F841 - the closure refers to itself: free it without the cycle collector


_END = object()


def negate_ranges(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """The encodable code points not in `ranges`."""
    return encodable(complement(encodable(ranges)))

"""The grammar IR: one representation behind every front end and back end.

Nodes speak Unicode code points (so GBNF can render every rule); the automaton lowers them to
UTF-8 bytes later. Nodes are immutable and hashable, so front ends can share and deduplicate
subtrees freely. Build them through the constructor functions at the bottom (`lit`, `seq`,
`alt`, ...), which normalise trivial cases (one-item sequences, nested alternations, empty
literals) so that every back end sees the same shapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os.path import commonprefix
from typing import Callable, Iterable, Sequence, Union

from .ranges import MAX_CODE_POINT, complement, encodable


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal string of code points (never empty: the empty string is `EMPTY`)."""

    text: str


@dataclass(frozen=True, slots=True)
class Chars:
    """One code point from a set, given as sorted, disjoint, non-adjacent inclusive ranges.

    An empty set matches nothing. Surrogates (U+D800..U+DFFF) are never members: they have
    no UTF-8 encoding, so classes are clipped to the encodable ranges on construction.
    """

    ranges: tuple[tuple[int, int], ...]

    def __contains__(self, cp: int) -> bool:
        for lo, hi in self.ranges:
            if cp < lo:
                return False
            if cp <= hi:
                return True
        return False


@dataclass(frozen=True, slots=True)
class Seq:
    """Each item in order. `Seq(())` is the empty string."""

    items: tuple["Node", ...]
    _hash: int = field(default=-1, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self, self.items)


@dataclass(frozen=True, slots=True)
class Alt:
    """Any one of the items. `Alt(())` matches nothing."""

    items: tuple["Node", ...]
    _hash: int = field(default=-1, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self, self.items)


@dataclass(frozen=True, slots=True)
class Repeat:
    """`item` repeated between `min` and `max` times (`max=None`: unbounded)."""

    item: "Node"
    min: int
    max: int | None
    _hash: int = field(default=-1, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self, (self.item, self.min, self.max))


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference to a named rule of the enclosing grammar (recursion allowed)."""

    name: str


@dataclass(frozen=True, slots=True)
class Counted:
    """The strings of a regular language that are `min`..`max` characters long, the length
    counted beside the language's automaton rather than multiplied into it (a URI's two dozen
    states and a `maxLength` of 2,083 would make 50,000 states as rules).

    `moves[s]` holds state s's moves as (character, next state): each character a small node
    that reads one code point (or, once encoded, that code point's JSON spelling). State 0 is
    the start; a string ends in a state of `final`. `max` None: no upper bound. `fallback` is a
    sub-language in plain IR (the bound spread over the language's parts), for back ends that
    cannot count (GBNF); NOTHING where there is none. For the walkers of rule bodies it is a
    leaf: its characters refer to no rule. See `_ir.counted` for which (state, count) pairs can
    still end in the language.
    """

    moves: tuple[tuple[tuple["Node", int], ...], ...]
    final: tuple[bool, ...]
    min: int
    max: int | None
    fallback: "Node"
    _hash: int = field(default=-1, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return _cached_hash(self, (self.moves, self.final, self.min, self.max))


Node = Union[Lit, Chars, Seq, Alt, Repeat, Ref, Counted]


def _cached_hash(node, fields: object) -> int:
    # Composite nodes hash their whole subtree; front ends hash them often (deduplicating
    # alternatives), so each computes it once. hash() never returns -1.
    h = node._hash
    if h == -1:
        h = hash(fields)
        object.__setattr__(node, "_hash", h)
    return h

EMPTY = Seq(())
NOTHING = Alt(())


# --- constructors -------------------------------------------------------------------------


def lit(text: str) -> Node:
    return Lit(text) if text else EMPTY


def chars(ranges: Iterable[tuple[int, int]]) -> Node:
    """A class from inclusive code point ranges (any order, overlaps allowed)."""
    normalized = encodable(ranges)
    if not normalized:
        return NOTHING
    if len(normalized) == 1 and normalized[0][0] == normalized[0][1]:
        return Lit(chr(normalized[0][0]))
    return Chars(normalized)


def char_set(text: str) -> Node:
    """A class holding exactly the code points of `text`."""
    return chars((ord(c), ord(c)) for c in text)


def negate(ranges: Iterable[tuple[int, int]]) -> Node:
    """Every code point not in `ranges`."""
    return chars(complement(encodable(ranges)))


ANY_CHAR = Chars(encodable([(0, MAX_CODE_POINT)]))


def one_char_ranges(node: Node) -> tuple[tuple[int, int], ...] | None:
    """The code points of a node that matches exactly one character (a class, or a literal
    of one), else None."""
    if isinstance(node, Chars):
        return node.ranges
    if isinstance(node, Lit) and len(node.text) == 1:
        return ((ord(node.text), ord(node.text)),)
    return None


def seq(*items: Node) -> Node:
    flat: list[Node] = []
    for item in items:
        kind = type(item)
        if kind is Seq:
            flat.extend(item.items)
        elif kind is Alt and not item.items:
            return NOTHING
        else:
            flat.append(item)
    # Merge adjacent literals so renderers and the automaton see longer runs.
    merged: list[Node] = []
    for item in flat:
        if merged and type(item) is Lit and type(merged[-1]) is Lit:
            merged[-1] = Lit(merged[-1].text + item.text)
        else:
            merged.append(item)
    if len(merged) == 1:
        return merged[0]
    return Seq(tuple(merged))


def alt(*items: Node) -> Node:
    return _alt(items, 0)


_FACTOR_DEPTH = 8  # nested prefix factorings, at most (`"0" | "00" | "000" | ...` would nest each)


_MANY_LITERALS = 32  # alternatives past which an alternation of literals is factored as strings


def _alt(items: Sequence[Node], depth: int) -> Node:
    if depth < _FACTOR_DEPTH and len(items) > _MANY_LITERALS and all(type(i) is Lit for i in items):
        return _literal_trie(list(dict.fromkeys(i.text for i in items)), depth)
    flat: list[Node] = []
    seen: set[Node] = set()
    ranges: list[tuple[int, int]] = []  # of the one-character items, merged into one class
    slot = -1  # where that class goes: the place of the first of them
    for item in items:
        parts = item.items if isinstance(item, Alt) else (item,)
        for part in parts:
            kind = type(part)
            if kind is Chars or (kind is Lit and len(part.text) == 1):
                if slot < 0:
                    slot = len(flat)
                    flat.append(part)
                ranges.extend(part.ranges if kind is Chars else ((ord(part.text), ord(part.text)),))
            elif part not in seen:
                seen.add(part)
                flat.append(part)
    if slot >= 0:
        # One class, not an alternation of characters: one automaton state, not one per branch.
        merged = chars(ranges)
        if merged == NOTHING:
            del flat[slot]
        else:
            flat[slot] = merged
    if len(flat) > 1 and depth < _FACTOR_DEPTH:
        flat = _factored(flat, depth)
    if len(flat) == 1:
        return flat[0]
    return Alt(tuple(flat))


def _literal_trie(texts: list[str], depth: int) -> Node:
    """The alternation of distinct `texts`, factored as `_factored` would, but working on the
    strings: an enum of many thousand values is grouped in time linear in its text."""
    groups: dict[str, list[str]] = {}
    for text in texts:
        groups.setdefault(text[:1], []).append(text)
    out: list[Node] = []
    for first, members in groups.items():
        if len(members) == 1:
            out.append(lit(members[0]))
            continue
        cut = len(commonprefix(members))
        rests = [text[cut:] for text in members]
        if depth + 1 < _FACTOR_DEPTH and len(rests) > _MANY_LITERALS:
            inner = _literal_trie(rests, depth + 1)
        else:
            inner = _alt([lit(rest) for rest in rests], depth + 1)
        out.append(seq(Lit(members[0][:cut]), inner))
    # Each group begins with its own character: nothing is left to factor.
    return _alt(out, _FACTOR_DEPTH)


def _leading_text(node: Node) -> str:
    """The literal `node` begins with ("" if none)."""
    if type(node) is Lit:
        return node.text
    if type(node) is Seq and node.items and type(node.items[0]) is Lit:
        return node.items[0].text
    return ""


def _factored(items: list[Node], depth: int) -> list[Node]:
    """Alternatives that begin with the same character share the literal prefix they have in
    common (`"ab" x | "ac" y` is `"a" ("b" x | "c" y)`): the automaton then reads it as one
    path, one configuration per state, instead of one per alternative."""
    groups: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        text = _leading_text(item)
        if text:
            groups.setdefault(text[0], []).append(i)
    if all(len(members) == 1 for members in groups.values()):
        return items
    out: list[Node | None] = list(items)
    for members in groups.values():
        if len(members) == 1:
            continue
        texts = [_leading_text(items[i]) for i in members]
        prefix = commonprefix(texts)
        cut = len(prefix)
        rests = []
        for i, text in zip(members, texts):
            item = items[i]
            if type(item) is Lit:  # most alternatives of a long enum: no sequence to rebuild
                rests.append(Lit(text[cut:]) if len(text) > cut else EMPTY)
            else:
                rests.append(seq(lit(text[cut:]), *item.items[1:]))
        out[members[0]] = seq(Lit(prefix), _alt(rests, depth + 1))
        for i in members[1:]:
            out[i] = None
    return [item for item in out if item is not None]


def repeat(item: Node, min: int = 0, max: int | None = None) -> Node:
    if max is not None and max < min:
        return NOTHING
    if max == 0 or item == EMPTY:
        return EMPTY
    if item == NOTHING:
        return EMPTY if min == 0 else NOTHING
    if min == 1 and max == 1:
        return item
    return Repeat(item, min, max)


def opt(item: Node) -> Node:
    return repeat(item, 0, 1)


def star(item: Node) -> Node:
    return repeat(item, 0, None)


def plus(item: Node) -> Node:
    return repeat(item, 1, None)


def ref(name: str) -> Ref:
    return Ref(name)


# --- a set of rules -----------------------------------------------------------------------


@dataclass
class Rules:
    """Named rules with a start rule: what every front end produces."""

    rules: dict[str, Node]
    root: str = "root"
    _graph: dict[str, list[str]] | None = field(default=None, init=False, repr=False, compare=False)

    def references(self, node: Node) -> set[str]:
        """Names referenced directly by `node`."""
        out: set[str] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, Ref):
                out.add(n.name)
            elif isinstance(n, (Seq, Alt)):
                stack.extend(n.items)
            elif isinstance(n, Repeat):
                stack.append(n.item)
        return out

    def reachable(self) -> list[str]:
        """Rule names reachable from the root, root first."""
        return list(self.graph())

    def graph(self) -> dict[str, list[str]]:
        """Each rule reachable from the root (root first) with the names it refers to (found
        once: a rule set is not changed once made)."""
        if self._graph is not None:
            return self._graph
        out: dict[str, list[str]] = {}
        order = [self.root]
        seen = {self.root}
        i = 0
        while i < len(order):
            refs = out[order[i]] = sorted(self.references(self.rules[order[i]]))
            for name in refs:
                if name not in seen:
                    seen.add(name)
                    order.append(name)
            i += 1
        self._graph = out
        return out


def walk(node: Node) -> Iterable[Node]:
    """Every node below `node`, itself included (references are not followed)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (Seq, Alt)):
            stack.extend(n.items)
        elif isinstance(n, Repeat):
            stack.append(n.item)


def children_first(node: Node, done: set[int] | None = None,
                   skip: Callable[[Node], bool] | None = None) -> Iterable[Seq | Alt | Repeat]:
    """Each composite node below `node` (itself included) once, after every composite node it
    holds: for rebuilding a tree bottom up in a loop, as nodes may nest deeper than Python's
    stack goes. Shared subtrees come once, by identity; with `done` (the ids of nodes already
    given, kept across calls) not again in a later call either. A node `skip` picks is passed
    over with all it holds."""
    done = set() if done is None else done
    todo: list[tuple[Node, bool]] = [(node, False)]
    while todo:
        n, children_done = todo.pop()
        kind = type(n)
        if (kind is not Seq and kind is not Alt and kind is not Repeat) or id(n) in done:
            continue
        if skip is not None and skip(n):
            continue
        if not children_done:
            todo.append((n, True))
            todo.extend((c, False) for c in (n.items if kind is not Repeat else (n.item,)))
            continue
        done.add(id(n))
        yield n


def rebuilt(node: Node, leaf: Callable[[Node], Node]) -> Node:
    """`node` with each leaf (literal, class, reference) replaced by `leaf(it)`, the shapes
    kept as they are (no constructor normalises them); in a loop, not a recursion."""
    made: dict[int, Node] = {}

    def new(n: Node) -> Node:
        return made[id(n)] if id(n) in made else leaf(n)

    for n in children_first(node):
        if type(n) is Repeat:
            made[id(n)] = Repeat(new(n.item), n.min, n.max)
        else:
            made[id(n)] = type(n)(tuple(new(c) for c in n.items))
    return new(node)


RULE_HEIGHT = 32
"""Node levels a rule body nests to at most (see `shallow`)."""


def height(node: Node, heights: dict[int, int] | None = None, done: set[int] | None = None) -> int:
    """Levels of nesting in `node` (references not followed; a leaf is 1); in a loop. With
    `heights` and `done` kept across calls, each node shared between bodies is measured once."""
    heights = {} if heights is None else heights
    for n in children_first(node, done):
        kids = n.items if type(n) is not Repeat else (n.item,)
        heights[id(n)] = 1 + max((heights.get(id(c), 1) for c in kids), default=0)
    return heights.get(id(node), 1)


def shallow(rules: dict[str, Node]) -> dict[str, Node]:
    """The same rules with no body nesting past `RULE_HEIGHT` levels: each node that would is
    moved into a rule of its own (one that does not recurse, so the language is the same).

    Every walk over a rule body (analyses, recognizer, automaton, GBNF text, llama.cpp's parser
    of that text) then recurses a bounded depth, however deep a front end or a caller nested
    the nodes. Only the nodes at least `RULE_HEIGHT` high are rebuilt: a lower one holds no
    node to move, so it is kept as it is."""
    heights: dict[int, int] = {}
    done: set[int] = set()
    tall = [name for name, node in rules.items() if height(node, heights, done) > RULE_HEIGHT]
    if not tall:
        return rules
    out = dict(rules)

    def low(n: Node) -> bool:
        return heights.get(id(n), 1) < RULE_HEIGHT

    for name in tall:
        made: dict[int, tuple[Node, int]] = {}  # by identity: the node rebuilt, its height

        def new(n: Node) -> tuple[Node, int]:
            return made.get(id(n)) or (n, heights.get(id(n), 1))

        for n in children_first(rules[name], skip=low):
            kids = [new(c) for c in (n.items if type(n) is not Repeat else (n.item,))]
            level = 1 + max((h for _, h in kids), default=0)
            if type(n) is Repeat:
                node: Node = Repeat(kids[0][0], n.min, n.max)
            else:
                node = type(n)(tuple(k for k, _ in kids))
            if level >= RULE_HEIGHT:
                part = f"{name}-part-{len(made)}"
                while part in out:
                    part += "-"
                out[part] = node
                node, level = Ref(part), 1
            made[id(n)] = (node, level)
        out[name] = new(rules[name])[0]
    return out

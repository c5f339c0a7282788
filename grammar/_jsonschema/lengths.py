"""String lengths beside a language, without a product automaton.

A format or pattern with `minLength`/`maxLength` is the intersection of two languages, and the
automaton of that intersection grows with the bound: a URI's two dozen states times 2,083
counts is past any limit. `within` instead spreads the bounds over the language's parts (each
part of a sequence gets a share, each copy of a repeat a share of the repeat's), so the result
is plain IR of counted repeats: every string it matches is in the language and within the
bounds (never looser), and where a repeated part has one width (a class of characters, a
fixed-length group) the count is exact.
"""

from __future__ import annotations

from itertools import product
from math import isqrt, prod

from .._errors import LimitError
from .._ir import EMPTY, Alt, Chars, Lit, Node, Repeat, Seq, alt, repeat, seq, walk

# A minLength past which a language keeps one way of being that long (one alternative, one
# part that takes the length): every way spells a counted repeat that long, and a few of them
# outgrow the automaton's states.
ONE_WAY_PAST = 64
# Lengths that the narrow parts of a sequence beside one wide part may take together, up to
# which each way is its own alternative (a pattern's run and the newline `$` allows after it:
# two ways), so the wide part takes exactly the room they leave.
EXACT_WAYS = 4
EXACT_COPIES = 50_000  # characters the ways may spell out in all (each way repeats the wide part)


def node_lengths(node: Node) -> tuple[int, int | None]:
    """Shortest and longest match of a reference-free node, in code points."""
    if isinstance(node, Lit):
        return len(node.text), len(node.text)
    if isinstance(node, Chars):
        return 1, 1
    if isinstance(node, Seq):
        lo, hi = 0, 0
        for item in node.items:
            a, b = node_lengths(item)
            lo += a
            hi = None if hi is None or b is None else hi + b
        return lo, hi
    if isinstance(node, Alt):
        if not node.items:
            return 0, 0
        spans = [node_lengths(i) for i in node.items]
        his = [b for _, b in spans]
        return min(a for a, _ in spans), None if None in his else max(his)
    if isinstance(node, Repeat):
        a, b = node_lengths(node.item)
        hi = None if node.max is None or b is None else b * node.max
        return a * node.min, hi
    raise LimitError("string language refers to a rule")


def within(node: Node, lo: int, hi: int | None) -> Node | None:
    """A sub-language of `node` whose strings all have lo..hi code points (hi None: no upper
    bound), as much of the intersection as a split of the bounds over `node`'s parts keeps;
    None where no split is found (always so where the intersection is empty)."""
    a, b = node_lengths(node)
    if a >= lo and (hi is None or (b is not None and b <= hi)):
        return node
    if (b is not None and b < lo) or (hi is not None and a > hi):
        return None
    if isinstance(node, Alt):
        parts = (within(item, lo, hi) for item in node.items)
        if lo > ONE_WAY_PAST:
            return next((part for part in parts if part is not None), None)
        kept = [part for part in parts if part is not None]
        return alt(*kept) if kept else None
    if isinstance(node, Seq):
        return _seq_within(list(node.items), lo, hi)
    if isinstance(node, Repeat):
        return _repeat_within(node, lo, hi)
    return None  # a literal or a class has one length, outside the bounds


def exactly_within(node: Node, lo: int, hi: int | None) -> Node | None:
    """`within`'s sub-language where it is the whole intersection, for the shapes it is known
    to be (a repeat of one width, a sequence with one wide run beside a few lengths, their
    alternations), else None."""
    a, b = node_lengths(node)
    if a >= lo and (hi is None or (b is not None and b <= hi)):
        return node
    if isinstance(node, Repeat):
        ia, ib = node_lengths(node.item)
        return _repeat_within(node, lo, hi) if ia == ib and ia > 0 else None
    if isinstance(node, Seq):
        items = list(node.items)
        return _one_wide_part(items, [node_lengths(item) for item in items], lo, hi)
    if isinstance(node, Alt) and lo <= ONE_WAY_PAST:
        kept = []
        for item in node.items:
            ia, ib = node_lengths(item)
            if (ib is not None and ib < lo) or (hi is not None and ia > hi):
                continue  # no string of it is within the bounds
            part = exactly_within(item, lo, hi)
            if part is None:
                return None
            kept.append(part)
        return alt(*kept) if kept else None
    return None


def _seq_within(items: list[Node], lo: int, hi: int | None) -> Node | None:
    """Each item keeps its shortest and gets a share of the room above it, by the open
    repeats it holds (a URI's path and query, with their parts, get more than its scheme; an
    item that needs less gives the rest back). Exact where one item's length varies widely and
    the others' take few lengths in all (see `_one_wide_part`)."""
    spans = [node_lengths(item) for item in items]
    exact = _one_wide_part(items, spans, lo, hi)
    if exact is None:
        exact = _first_found(items, lo, hi)
    if exact is not None:
        return exact
    tops: list[int | None] = [b for _, b in spans]
    if hi is not None:
        room = hi - sum(a for a, _ in spans)
        tops = [a for a, _ in spans]
        open_ = [i for i, (a, b) in enumerate(spans) if b is None or b > a]
        weight = {i: max(1, sum(1 for n in walk(items[i]) if isinstance(n, Repeat) and n.max is None)) for i in open_}
        while room > 0 and open_:
            total = sum(weight[i] for i in open_)
            pool = room
            for i in list(open_):
                a, b = spans[i]
                share = max(pool * weight[i] // total, 1)
                grant = min(share, room) if b is None else min(share, room, b - tops[i])
                tops[i] += grant
                room -= grant
                if b is not None and tops[i] >= b:
                    open_.remove(i)
                if room == 0:
                    break
    bottoms = [a for a, _ in spans]
    need = lo - sum(bottoms)
    if need <= 0:
        return _parts(items, bottoms, tops)
    # What `lo` asks beyond the shortest: any one item with the room takes it all (one way
    # per such item), or else the first items with room share it.
    ways = []
    for i in reversed(range(len(items))):
        if tops[i] is None or tops[i] - bottoms[i] >= need:
            ways.append(_parts(items, bottoms[:i] + [bottoms[i] + need] + bottoms[i + 1 :], tops))
            if lo > ONE_WAY_PAST and ways[-1] is not None:
                break
    kept = [way for way in reversed(ways) if way is not None]
    if kept:
        return alt(*kept)
    for i, top in enumerate(tops):
        take = need if top is None else min(need, top - bottoms[i])
        bottoms[i] += take
        need -= take
    return None if need > 0 else _parts(items, bottoms, tops)


def _one_wide_part(items: list[Node], spans: list[tuple[int, int | None]], lo: int,
                   hi: int | None) -> Node | None:
    """The sequence within lo..hi exactly, where one item is wide (a repeat of single characters
    whose count varies by more than `EXACT_WAYS`) and the others together take at most
    `EXACT_WAYS` ways of lengths: one alternative per way, the wide item taking exactly the
    room the others leave in it (shares would give it a maximum the others' shortest ways
    cannot use: `^[a-z]+$` under `maxLength` 300 would hold 299 letters, one kept for the
    newline). None where the sequence is not so, or `lo` is past `ONE_WAY_PAST` (each way
    would spell a counted repeat that long)."""
    if lo > ONE_WAY_PAST:
        return None
    wide = [i for i, (a, b) in enumerate(spans) if b is None or b - a > EXACT_WAYS]
    if len(wide) != 1:
        return None
    w = wide[0]
    if not (isinstance(items[w], Repeat) and node_lengths(items[w].item) == (1, 1)):
        return None  # a wide part of several parts is itself split: each way would copy that
    narrow = [i for i, (a, b) in enumerate(spans) if i != w and b != a]
    ways_count = prod(spans[i][1] - spans[i][0] + 1 for i in narrow)  # type: ignore[operator]
    if ways_count > EXACT_WAYS or (hi is not None and hi * ways_count > EXACT_COPIES):
        return None
    fixed = sum(a for i, (a, _) in enumerate(spans) if i != w and i not in narrow)
    ways = []
    for lengths in product(*(range(spans[i][0], spans[i][1] + 1) for i in narrow)):  # type: ignore[operator]
        used = fixed + sum(lengths)
        room = None if hi is None else hi - used
        if room is not None and room < max(lo - used, 0):
            continue
        chosen = dict(zip(narrow, lengths))
        parts = []
        for i, item in enumerate(items):
            if i == w:
                part = within(item, max(lo - used, 0), room)
            elif i in chosen:
                part = within(item, chosen[i], chosen[i])
            else:
                part = item
            if part is None:
                break
            parts.append(part)
        else:
            ways.append(seq(*parts))
    return alt(*ways) if ways else None


def _first_found(items: list[Node], lo: int, hi: int | None) -> Node | None:
    """A character found anywhere, in its searched form (any others, the first of the class,
    then anything: `[^c]*` `c` `.*`), within lo..hi: exact where the first occurrence stands
    among the first `EXACT_WAYS` characters (one way per place, the rest taking all the room
    left), and sharing the room where it stands later. None where `items` is not that form, or
    the ways would spell out more than `EXACT_COPIES` characters."""
    if hi is None or lo > ONE_WAY_PAST or len(items) != 3 or hi * (EXACT_WAYS + 1) > EXACT_COPIES:
        return None
    before, found, after = items
    if not (isinstance(before, Repeat) and isinstance(after, Repeat) and node_lengths(found) == (1, 1)
            and (before.min, before.max, after.min, after.max) == (0, None, 0, None)
            and node_lengths(before.item) == node_lengths(after.item) == (1, 1)):
        return None
    ways = [seq(repeat(before.item, at, at), found, repeat(after.item, max(lo - at - 1, 0), hi - at - 1))
            for at in range(min(EXACT_WAYS, hi))]
    if hi > EXACT_WAYS:
        late = EXACT_WAYS + (hi - 1 - EXACT_WAYS) // 2  # the latest place of a later occurrence
        least = max(lo - EXACT_WAYS - 1, 0)
        if least <= hi - late - 1:
            ways.append(seq(repeat(before.item, EXACT_WAYS, late), found, repeat(after.item, least, hi - late - 1)))
    return alt(*ways)


def _parts(items: list[Node], bottoms: list[int], tops: list[int | None]) -> Node | None:
    out = []
    for item, bottom, top in zip(items, bottoms, tops):
        part = within(item, bottom, top)
        if part is None:
            return None
        out.append(part)
    return seq(*out)


def _repeat_within(node: Repeat, lo: int, hi: int | None) -> Node | None:
    item, least, most = node.item, node.min, node.max
    ia, ib = node_lengths(item)
    if ia == 0:
        # Copies that match nothing count for nothing: leave them out.
        nonempty = within(item, 1, ib)
        if nonempty is None:
            return node if lo == 0 else None
        return within(repeat(nonempty, 0, most), lo, hi)
    if ia == ib:
        # One width: the counts are the bounds divided by it, exactly.
        return _counted(item, max(least, -(-lo // ia)), _fewest(most, None if hi is None else hi // ia))
    if hi is None:
        # Enough copies of the shortest, or a first copy long enough by itself.
        first = within(item, lo, None) if most is None or most >= 1 else None
        long_first = None if first is None else seq(first, repeat(item, max(least - 1, 0), None if most is None else most - 1))
        if long_first is not None and lo > ONE_WAY_PAST:
            return long_first
        many = _copies(item, least, most, lo, None)
        kept = [part for part in (long_first, many) if part is not None]
        return alt(*kept) if kept else None
    count = _fewest(most, hi // ia)
    if ib is not None and count * ib <= hi:
        return _copies(item, least, count, lo, hi)
    # Copies of differing widths: as many as the longest fit, or about as many copies as each
    # copy is long (half as many where a copy holds an open repeat, a path's segment),
    # whichever allows more; or else as many as fit of the shortest copies (a run of plain
    # characters where a wider copy is an escape).
    side = isqrt(hi // ia)
    fair = max(hi // ib, side) if ib is not None else side // 2
    balanced = _copies(item, least, _fewest(most, max(fair, least, 1)), lo, hi)
    shortest = within(item, ia, ia) if ib is not None else None
    narrow = None if shortest is None else _counted(shortest, max(least, -(-lo // ia)), count)
    kept = [part for part in (balanced, narrow) if part is not None]
    return alt(*kept) if kept else None


def _copies(item: Node, least: int, count: int | None, lo: int, hi: int | None) -> Node | None:
    """Up to `count` copies of `item`, each cut to its share of lo..hi."""
    if count == 0:
        return EMPTY if lo == 0 and least == 0 else None
    per_copy = None if hi is None or count is None else hi // count
    first = node_lengths(item)[0] if count is None else max(node_lengths(item)[0], -(-lo // count))
    copy = within(item, first, per_copy)
    # Each copy is at least `first` long, so this many reach `lo`.
    return None if copy is None else _counted(copy, max(least, -(-lo // first)), count)


def _fewest(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _counted(item: Node, least: int, most: int | None) -> Node | None:
    return None if most is not None and least > most else repeat(item, least, most)

"""Lowering arrays (by position) and objects (declared properties in order, then extra
members, counted).
"""

from __future__ import annotations

import re

from .._errors import CompileError, LimitError
from .._ir import EMPTY, NOTHING, Node, alt, lit, opt, repeat, seq
from .._ir import marks
from . import lang
from .facets import Facets
from .limits import MAX_COUNT_STATES, MAX_OTHER_KEY, MAX_PATTERN_SUBSETS, MAX_UNCOUNTED_EXTRAS, _POSITIONS_PER_RULE
from .refs import Place
from .strings import excluding, excluding_text, quoted, string_text
from .vocabulary import PYTHON_COMMA


class ContainerLoweringMixin:
    """The compiler's lower containers (a part of `_Compiler`)."""

    def item_conj(self, f: Facets, i: int) -> list[Place]:
        conj: list[Place] = []
        for a in f.arrays:
            if i < len(a.prefix):
                conj.append(a.prefix[i])
            elif a.rest is not None:
                conj.append(a.rest)
        return conj

    def array_conjs(self, f: Facets) -> list[list[Place]]:
        """What an array piece's items must satisfy: one conjunction per prefix position, then
        the rest's (none where no array fits the bounds)."""
        if f.max_items is not None and f.max_items < f.min_items:
            return []
        n_prefix = max((len(a.prefix) for a in f.arrays), default=0)
        return [self.item_conj(f, i) for i in range(n_prefix)] + [[a.rest for a in f.arrays if a.rest is not None]]

    def lower_array(self, f: Facets) -> Node:
        lo, hi = f.min_items, f.max_items
        conjs = self.array_conjs(f)
        if not conjs:
            return NOTHING
        if f.unique is not None and (hi is None or hi > 1):
            self.refuse("uniqueItems is not supported beyond maxItems 1", "uniqueItems", f.unique)
        *positions, rest = [self.lower_conj(c) for c in conjs]
        n_prefix = len(positions)
        ws, sep = self.ws, self.comma

        # Built from the last position in: item i follows i items already written.
        stop = n_prefix if hi is None else min(n_prefix, hi)
        need = max(0, lo - stop)
        most = None if hi is None else hi - stop
        if most == 0:
            items = EMPTY
        elif rest == NOTHING:
            items = EMPTY if need == 0 else NOTHING
        elif stop > 0:
            items = repeat(seq(sep, rest), need, most)
        else:
            items = seq(rest, repeat(seq(sep, rest), max(need - 1, 0), None if most is None else most - 1))
            if need == 0:
                items = opt(items)
        for i in reversed(range(stop)):
            items = seq(sep if i > 0 else EMPTY, positions[i], items)
            if i >= lo:
                items = opt(items)
            if i and i % _POSITIONS_PER_RULE == 0:
                # Each optional position nests the rest: a rule now and then keeps every node
                # shallow (what walks nodes recurses once per level).
                items = self.rule(self.name("items"), items)
        return seq(lit("["), ws, items, ws, lit("]"))

    def member_conjs(self, f: Facets) -> list[tuple[str, list[Place] | None]]:
        """Each declared or required name of an object piece, in order, with what its value must
        satisfy (None: the name can't be written, a `false` schema or `propertyNames` refusing
        it). A required name that can't be written ends the list: no object fits."""
        declared: list[str] = []
        for o in f.objects:
            for name in o.props:
                if name not in declared:
                    declared.append(name)
        for name in f.required:
            if name not in declared:
                declared.append(name)
        out: list[tuple[str, list[Place] | None]] = []
        for name in declared:
            conj = [p for o in f.objects for p in o.schemas_for(name)]
            allowed = not any(p.schema is False for p in conj)
            if allowed and f.names:
                allowed = self.conj_ok(name, f.names, 0) is True
            out.append((name, conj if allowed else None))
            if not allowed and name in f.required:
                break
        return out

    def lower_object(self, f: Facets, *, keywords: bool = False) -> Node:
        """An object's JSON text; with `keywords`, its declared members as keyword arguments."""
        ws = self.ws
        named = self.member_conjs(f)
        if named and named[-1][1] is None and named[-1][0] in f.required:
            return NOTHING
        declared = [name for name, _ in named]
        members: list[tuple[str, Node, bool]] = []  # (name, member text, required)
        for name, conj in named:
            if conj is None:
                continue
            value = self.lower_conj(conj)
            if value == NOTHING:
                if name in f.required:
                    return NOTHING
                continue
            if keywords:
                if not name.isidentifier():
                    raise CompileError(f"property {name!r} is not an identifier, so it can't be a keyword argument",
                                       keyword="properties", pointer=f"{f.pointer}/properties/{name}")
                members.append((name, seq(lit(name + "="), value), name in f.required))
            else:
                members.append((name, seq(quoted(name), self.colon, value), name in f.required))
        extras = NOTHING if keywords else self.extra_members(f, declared)
        if len(f.other_keys) > MAX_OTHER_KEY:
            raise LimitError("too many 'some other key' constraints", keyword="additionalProperties", pointer=f.pointer)
        others = [
            (frozenset(n for n, _, _ in members if n not in names and not any(re.search(p, n) for p in patterns)),
             not patterns and names <= set(declared))
            for names, patterns in f.other_keys
        ]
        if keywords:
            return self.member_list(members, extras, f.min_props, f.max_props, f.pointer, others, sep=PYTHON_COMMA,
                                    lo_at=f.min_props_at)
        body = self.member_list(members, extras, f.min_props, f.max_props, f.pointer, others, lo_at=f.min_props_at)
        return seq(lit("{"), ws, body, ws, lit("}"))

    def extra_regions(self, f: Facets) -> tuple[list[tuple[str, Place, int]], list[tuple[list[int], list[Place]]]]:
        """An object piece's `patternProperties` (pattern, schema, which object facet), and the
        regions of undeclared keys they cut: the patterns a key matches, and what its value
        must then satisfy (those patterns' schemas, and `additionalProperties` where none of
        that facet's patterns match)."""
        patterns = [(pat, place, i) for i, o in enumerate(f.objects) for pat, place in o.patterns]
        if len(patterns) > MAX_PATTERN_SUBSETS:
            self.refuse("too many patternProperties to partition keys", "patternProperties", f.pointer)
            patterns = []
        regions: list[tuple[list[int], list[Place]]] = []
        for mask in range(1 << len(patterns)):
            inside = [k for k in range(len(patterns)) if mask >> k & 1]
            conj = [patterns[k][1] for k in inside]
            for i, o in enumerate(f.objects):
                if not any(patterns[k][2] == i for k in inside) and o.additional is not None:
                    conj.append(o.additional)
            if any(p.schema is False for p in conj):
                continue
            regions.append((inside, conj))
        return patterns, regions

    def extra_members(self, f: Facets, declared: list[str]) -> Node:
        """One member whose key is not declared: its key language and value, by pattern region."""
        patterns, regions = self.extra_regions(f)
        names_language = self.names_dfa(f)
        out: list[Node] = []
        for inside, conj in regions:
            value = self.lower_conj(conj)
            if value == NOTHING:
                continue
            if not patterns and names_language is None:
                names_key = frozenset(declared)
                if names_key not in self._exclusions:
                    tag = self.name("key")
                    self._exclusions[names_key] = self.rule(marks.key_text(tag), excluding_text(declared, self.rule, tag))
                key_text = self._exclusions[names_key]
            else:
                key = self.key_language(patterns, inside, declared, names_language, f.pointer)
                if key is NOTHING:
                    continue
                key_text = string_text(key, self.encoded_rule)
            out.append(self.rule(self.name("extra"), seq(key_text, self.colon, value)))
        return alt(*out)

    def names_dfa(self, f: Facets) -> lang.DFA | None:
        """Decoded key strings `propertyNames` allows, as an automaton (None: any)."""
        if not f.names:
            return None
        dfa = lang.literal_set([])
        for g in self.alternatives(f.names):
            if "string" not in g.kinds:
                continue
            if g.values is not None:
                keys = [v for v in g.values if isinstance(v, str) and self.value_ok(v, g, 0)]
                part = lang.literal_set(keys)
            else:
                part = self.string_dfa(g)
            dfa = lang.union(dfa, part)
        return dfa

    def key_language(self, patterns, inside: list[int], declared: list[str], names: lang.DFA | None, pointer: str) -> Node:
        outside = [k for k in range(len(patterns)) if k not in inside]
        positive = []
        for k in inside:
            node = self.regex(patterns[k][0], pointer)
            if node is None:
                return NOTHING
            positive.append(node)
        # Fast paths with no automaton.
        if not outside and names is None:
            if not positive:
                return excluding(declared)
            if len(positive) == 1 and not any(re.search(patterns[inside[0]][0], d) for d in declared):
                return positive[0]
        dfa = lang.from_node(excluding(declared))
        for node in positive:
            dfa = lang.intersect(dfa, lang.from_node(node))
        for k in outside:
            node = self.regex(patterns[k][0], pointer)
            if node is None:
                return NOTHING
            dfa = lang.intersect(dfa, lang.complement(lang.from_node(node)))
        if names is not None:
            dfa = lang.intersect(dfa, names)
        return lang.to_node(dfa, self.rule, self.name("key"))

    def member_list(
        self,
        members: list[tuple[str, Node, bool]],
        extra: Node,
        lo: int,
        hi: int | None,
        pointer: str,
        others: list[tuple[frozenset[str], bool]] = (),
        sep: Node | None = None,
        lo_at: tuple[str, str] | None = None,
    ) -> Node:
        """Declared members in order (optional ones skippable), then extra members, with the
        member count in lo..hi and `sep` (a comma) only between members. Each of `others`
        (names, extras count) asks for a member named in `names`, or an extra one where
        `extras count`. `lo_at` is the keyword and pointer `lo` came from (minProperties at
        `pointer` unless told)."""
        if sep is None:
            sep = self.comma
        n = len(members)
        if (hi is not None and hi < lo) or (extra == NOTHING and lo > n):
            return NOTHING
        # Two extra members may spell the same key (`{"a":1,"a":2}` parses to one member), and
        # no grammar here tells keys apart: where extra members would have to make up two or
        # more of minProperties, it is refused. Lenient, the validator checks it after decoding
        # and the grammar still asks for that many members (up to a bound), keys alike or not.
        required = sum(1 for _, _, r in members if r)
        repeats_allowed = False
        if extra != NOTHING and lo - required > 1:
            keyword, at = lo_at or ("minProperties", pointer)
            self.refuse("extra members may spell the same key, so the grammar cannot count "
                        f"{lo - required} distinct ones", keyword, at)
            repeats_allowed = True
            lo = min(lo, required + MAX_UNCOUNTED_EXTRAS)
        cap = max(lo, 1) if hi is None else hi
        if (n + 1) * (cap + 1) * (1 << len(others)) > MAX_COUNT_STATES:
            # Name the larger of the two factors: the properties, or the count bound.
            if n >= cap:
                raise LimitError(f"{n} properties are too many to count the members written over "
                                 f"(properties times counts past {MAX_COUNT_STATES})", keyword="properties",
                                 pointer=pointer)
            keyword = "maxProperties" if hi is not None else "minProperties"
            raise LimitError(f"{keyword} {cap} is too many members to count over {n} properties "
                             f"(properties times counts past {MAX_COUNT_STATES})", keyword=keyword, pointer=pointer)
        tag = self.name("obj")
        shared = n > 3

        def extras(count: int, unmet: frozenset[int]) -> Node:
            need = max(0, lo - count)
            if need > 1 and not repeats_allowed:  # no members to count them with (see above)
                return NOTHING
            if unmet:
                if not all(others[k][1] for k in unmet):
                    return NOTHING
                need = 1
            most = None if hi is None else hi - count
            if most is not None and most < need:
                return NOTHING
            if extra == NOTHING:
                return EMPTY if need == 0 else NOTHING
            if count > 0:
                return repeat(seq(sep, extra), need, most)
            if most == 0:
                return EMPTY
            first = seq(extra, repeat(seq(sep, extra), max(need - 1, 0), None if most is None else most - 1))
            return first if need > 0 else opt(first)

        if all(required for _, _, required in members):
            # One path, with no member to skip: the members in order, then the extra ones.
            parts: list[Node] = []
            unmet = frozenset(range(len(others)))
            for count, (name, text, _) in enumerate(members):
                if hi is not None and count + 1 > hi:
                    return NOTHING
                parts.extend((sep, text) if count else (text,))
                unmet = frozenset(k for k in unmet if name not in others[k][0])
            return seq(*parts, extras(n, unmet))

        # Position i with c members written so far (capped: past `cap` counts behave alike) and
        # `unmet` groups still wanting a member. Where each state goes (with the member written,
        # or without it) is found from the first position on, then the nodes from the last back:
        # a loop, not a recursion, as objects with thousands of optional members exist.
        start = (0, frozenset(range(len(others))))
        levels: list[dict[tuple[int, frozenset[int]], tuple]] = []  # state -> (written, skipped)
        here = {start}
        for name, _, required in members:
            moves = {}
            for c, unmet in here:
                written = None
                if hi is None or c + 1 <= hi:
                    written = (min(c + 1, cap), frozenset(k for k in unmet if name not in others[k][0]))
                moves[(c, unmet)] = (written, None if required else (c, unmet))
            levels.append(moves)
            here = {nxt for pair in moves.values() for nxt in pair if nxt is not None}
        built = {key: extras(key[0], key[1]) for key in here}
        for i in reversed(range(n)):
            text = members[i][1]
            nodes: dict[tuple[int, frozenset[int]], Node] = {}
            for (c, unmet), (written, skipped) in levels[i].items():
                node = NOTHING if written is None else seq(sep if c > 0 else EMPTY, text, built[written])
                if skipped is not None:
                    node = alt(node, built[skipped])
                if shared:
                    node = self.rule(f"{tag}-{i}-{c}-{'.'.join(map(str, sorted(unmet)))}", node)
                nodes[(c, unmet)] = node
            built = nodes
        return built[start]

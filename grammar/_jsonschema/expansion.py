"""Expansion of a conjunction: `$ref`, `allOf` and `not` flattened into more conjuncts; `anyOf`,
`oneOf`, `if` and the dependencies branched into alternatives.
"""

from __future__ import annotations

from itertools import product

from .._errors import CompileError, LimitError
from .facets import Facets
from .limits import MAX_ALTERNATIVES, MAX_DEPENDENCIES, MAX_DEPTH
from .proofs import _KIND_GROUPS, _accepts_all, _kinds
from .refs import LEGACY, Place
from .vocabulary import ALL, KINDS, ONLY_KINDS, VALIDATORS, _BRANCHING, _Cyclic, _Internal


class ExpansionMixin:
    """The compiler's expansion (a part of `_Compiler`)."""

    def flatten(self, conj: list[Place]) -> tuple[list[Place], list[tuple[str, Place]]] | None:
        """Expand `$ref`, `allOf` and `not` into more conjuncts. Returns the conjuncts and the
        branching keywords still to distribute, or None if the conjunction is `false`."""
        facets: list[Place] = []
        branching: list[tuple[str, Place]] = []
        seen: set[tuple] = set()

        for place in conj:
            if not self._visit(place, (), seen, facets, branching):
                return None
        done = ("$ref", "allOf", "not", ALL)
        # Branch owners as the conjuncts returned, so `_expand` can tell which one to drop
        # the branching keyword from (else it is distributed again, squaring the branches).
        applied = {f.key: f.without(*done) for f in facets}
        return list(applied.values()), [(keyword, applied[owner.key]) for keyword, owner in branching]

    def _visit(self, place: Place, path: tuple, seen: set[tuple], facets: list[Place],
               branching: list[tuple[str, Place]]) -> bool:
        """`flatten` of one conjunct reached along `path`: False if it is `false`."""
        if place.key in path:
            raise CompileError(
                "$ref/allOf cycle that never reaches a value (the validator recurses forever)",
                keyword="$ref",
                pointer=place.pointer,
            )
        if place.key in seen:
            return True
        seen.add(place.key)
        schema = place.schema
        if schema is True:
            return True
        if schema is False:
            return False
        if not isinstance(schema, dict):
            raise CompileError("a schema must be an object or a boolean", pointer=place.pointer)
        path = path + (place.key,)
        if len(path) > MAX_DEPTH:
            raise LimitError("$ref/allOf chain too deep", pointer=place.pointer)
        facets.append(place)
        legacy_ref = place.dialect in LEGACY and "$ref" in schema
        if legacy_ref:
            for keyword in schema:
                if keyword != "$ref" and not isinstance(keyword, _Internal):
                    self.ignore(keyword, place.pointer)
            if "$ref" not in place.done:
                target = self.resolve(place)
                if target is not None and not self._visit(target, path, seen, facets, branching):
                    return False
            return True
        for keyword in schema:
            if keyword in place.done:
                continue
            if keyword == "$ref":
                target = self.resolve(place)
                if target is not None and not self._visit(target, path, seen, facets, branching):
                    return False
            elif keyword == "allOf" and keyword in VALIDATORS[place.dialect]:
                children = schema["allOf"]
                if not isinstance(children, list):
                    raise CompileError("allOf must be an array", keyword="allOf", pointer=place.pointer)
                for i in range(len(children)):
                    if not self._visit(self.child(place, "allOf", i), path, seen, facets, branching):
                        return False
            elif keyword is ALL:
                for child in schema[ALL]:
                    if not self._visit(child, path, seen, facets, branching):
                        return False
            elif keyword == "not" and keyword in VALIDATORS[place.dialect]:
                inner = self.child(place, "not")
                negation = self.negation(inner, 0)
                if negation is not None and not self.exact_negation(inner):
                    negation = None
                if negation is None:
                    self.refuse("cannot enforce this 'not' soundly", "not", place.pointer)
                elif not self._visit(negation, path, seen, facets, branching):
                    return False
            elif keyword in _BRANCHING and keyword in VALIDATORS[place.dialect]:
                branching.append((keyword, place))
        return True

    def resolve(self, place: Place) -> Place | None:
        try:
            return self.document.resolve(place, place.schema["$ref"])
        except CompileError as e:
            if isinstance(e, LimitError) or not self.lenient:
                raise
            self.refuse(e.reason, "$ref", place.pointer)
            return None

    def alternatives(self, conj: list[Place]) -> list[Facets]:
        """The conjunction as a union of branch-free constraint sets."""
        key = tuple(p.key for p in conj)
        if key in self._alternatives:
            return self._alternatives[key]
        if key in self._expanding:
            raise _Cyclic()
        pointer = conj[-1].pointer if conj else ""  # the newest conjunct: the branch taken last
        if len(self._expanding) >= MAX_DEPTH:
            raise LimitError("anyOf/oneOf/if/dependencies nest too deeply", pointer=pointer)
        self._expanding.add(key)
        try:
            out = self._expand(conj)
        except RecursionError:  # as in `lower_conj`
            raise LimitError("schema nests too deeply", pointer=pointer) from None
        finally:
            self._expanding.discard(key)
        self._alternatives[key] = out
        return out

    def _expand(self, conj: list[Place]) -> list[Facets]:
        flat = self.flatten(conj)
        if flat is None:
            out: list[Facets] = []
        else:
            facets, branching = flat
            if not branching:
                out = [self.merge(facets)]
            else:
                keyword, owner = branching[0]
                rest = [f.without(keyword) if f.key == owner.key else f for f in facets]
                out = []
                for branch in self.branches(keyword, owner, rest):
                    out.extend(self.alternatives(rest + branch))
                    if len(out) > MAX_ALTERNATIVES:
                        raise LimitError(
                            f"schema expands to more than {MAX_ALTERNATIVES} alternatives",
                            keyword=keyword,
                            pointer=owner.pointer,
                        )
        # A narrowed alternative with no values left may stand for some: kept for the proofs.
        return [f for f in out if f.kinds or f.narrowed]

    def branches(self, keyword: str, owner: Place, rest: list[Place]) -> list[list[Place]]:
        schema = owner.schema
        value = schema[keyword]
        pointer = owner.pointer
        if keyword in ("anyOf", "oneOf"):
            if not isinstance(value, list) or not value:
                raise CompileError(f"{keyword} must be a non-empty array", keyword=keyword, pointer=pointer)
            options = [[self.child(owner, keyword, i)] for i in range(len(value))]
            if keyword == "oneOf":
                return self.exclusive(options, owner, rest)
            return options
        if keyword == "if":
            condition = self.child(owner, "if")
            then = [self.child(owner, "then")] if "then" in schema else []
            otherwise = [self.child(owner, "else")] if "else" in schema else []
            negated = self.negation(condition, 0)
            if negated is not None and not self.exact_negation(condition):
                negated = None
            if negated is None:
                if not then and not otherwise:
                    return [[]]
                self.refuse("cannot decide this 'if' condition soundly", "if", pointer)
                return [[]]
            return [[condition] + then, [negated] + otherwise]
        # dependencies / dependentRequired / dependentSchemas
        if not isinstance(value, dict):
            raise CompileError(f"{keyword} must be an object", keyword=keyword, pointer=pointer)
        if len(value) > MAX_DEPENDENCIES:
            raise LimitError(f"more than {MAX_DEPENDENCIES} dependencies", keyword=keyword, pointer=pointer)
        per_property: list[list[list[Place]]] = []
        for prop, dep in value.items():
            absent = self.fabricate(owner, {"properties": {prop: False}})
            if isinstance(dep, list) and (keyword != "dependentSchemas"):
                if not all(isinstance(d, str) for d in dep):
                    raise CompileError("dependency names must be strings", keyword=keyword, pointer=pointer)
                present = [self.fabricate(owner, {"required": [prop, *dep]})]
            elif isinstance(dep, (dict, bool)) and keyword != "dependentRequired":
                present = [self.fabricate(owner, {"required": [prop]}), self.child(owner, keyword, prop)]
            else:
                raise CompileError(f"invalid {keyword} entry for {prop!r}", keyword=keyword, pointer=pointer)
            per_property.append([[absent], present])
        return [sum(combo, []) for combo in product(*per_property)]

    def exclusive(self, options: list[list[Place]], owner: Place, rest: list[Place]) -> list[list[Place]]:
        """oneOf branches made mutually exclusive. Kinds of value two branches both accept
        entirely are invalid (each such value passes twice) and are removed from every branch;
        what remains must be provably disjoint, else each branch gets the negation of the others;
        an error where neither works."""
        facets = [self.alternatives(rest + o) for o in options]
        everywhere: set[str] = set()
        for kind in _KIND_GROUPS:
            total = sum(1 for fs in facets if any(_accepts_all(f, kind) for f in fs))
            if total >= 2:
                everywhere |= _KIND_GROUPS[kind]
        if everywhere:
            keep = self.fabricate(owner, {ONLY_KINDS: set(KINDS) - everywhere})
            options = [o + [keep] for o in options]
            facets = [self.alternatives(rest + o) for o in options]
        disjoint = all(
            self.disjoint_sets(facets[i], facets[j]) for i in range(len(options)) for j in range(i + 1, len(options))
        )
        if disjoint:
            return options
        negations = [self.negation(o[0], 0) for o in options]
        if all(n is not None for n in negations):
            exclusive = [o + [negations[j] for j in range(len(options)) if j != i] for i, o in enumerate(options)]
            exact = all(self.exact_negation(o[0]) for o in options)
            # A partial negation may only trim a branch, never empty a kind of value from it.
            if exact or all(
                _kinds(self.alternatives(rest + e)) == _kinds(f) for e, f in zip(exclusive, facets)
            ):
                return exclusive
        self.refuse("oneOf branches may overlap (exactly-one can't be enforced)", "oneOf", owner.pointer)
        return options

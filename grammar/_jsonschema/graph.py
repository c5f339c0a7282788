"""The first pass: a schema's conjunctions as a graph of facets.

From the root, a worklist takes each conjunction of subschemas once: expands it (refs, `allOf`,
`not`, then branches), merges every branch into `Facets`, splits the arrays and objects it
excludes into pieces, and queues the conjunctions that its pieces' items and members must
satisfy. The second pass (`compiler.lower_conj`) lowers this graph to rules and reads nothing
else of the schema's structure: so a schema travels refs → expand/negate/merge → facet graph →
lower, each conjunction once.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

from .._errors import CompileError, LimitError
from .facets import Facets
from .limits import MAX_DEPTH
from .refs import Place
from .values import _leaf_key
from .vocabulary import _Cyclic


@dataclass
class Shape:
    """One branch of a conjunction: its merged facets, with the arrays and objects it allows as
    pieces that no excluded value splits further (`LoweringMixin.excluding_containers`)."""

    facets: Facets
    arrays: list[Facets] = field(default_factory=list)
    objects: list[Facets] = field(default_factory=list)


@dataclass
class Vertex:
    """A conjunction of the graph: its branches (None: any value at all), the conjunctions its
    lowering reads, and for a leaf schema met before, the key of the first (`same_as`)."""

    conj: list[Place]
    shapes: list[Shape] | None
    children: list[list[Place]] = field(default_factory=list)
    same_as: tuple | None = None
    leaf: bool = False  # the first of its equal leaf schemas: others are lowered as it is


def conj_key(conj: list[Place]) -> tuple:
    return tuple(p.key for p in conj)


class GraphMixin:
    """The compiler's first pass (a part of `_Compiler`)."""

    def build_graph(self, root: list[Place]) -> Vertex:
        """Fill `self.graph` with every conjunction reachable from `root`, in the order a
        recursive walk meets them, so errors and notes come in the schema's order. A loop, not
        a recursion: schemas nest deep."""
        todo: list[tuple[list[Place], int]] = [(root, 1)]
        while todo:
            conj, depth = todo.pop()
            key = conj_key(conj)
            if key in self.graph:
                continue
            if depth > MAX_DEPTH:
                raise LimitError("schema nests too deeply", pointer=conj[0].pointer)
            vertex = self.graph[key] = self._vertex(conj)
            todo.extend((c, depth + 1) for c in reversed(vertex.children))
        return self.graph[conj_key(root)]

    def _vertex(self, conj: list[Place]) -> Vertex:
        if not conj or all(p.schema is True or p.schema == {} for p in conj):
            return Vertex(conj, None)
        # Equal leaf schemas in many places (every `{"type": "integer"}` property) are expanded
        # once; what was ignored or dropped there is noted again at each place.
        leaf = _leaf_key(conj[0]) if len(conj) == 1 else None
        if leaf is not None and leaf in self._leaf_vertices:
            first, notes = self._leaf_vertices[leaf]
            self.note_again(notes, conj[0].pointer)
            return Vertex(conj, None, same_as=first)
        mark = self.notes_mark()
        try:
            alternatives = self.alternatives(conj)
        except _Cyclic:
            raise CompileError(
                "anyOf/oneOf/if branches lead back to themselves before reaching a value (the "
                "validator recurses forever: no value validates)",
                keyword="$ref",
                pointer=conj[-1].pointer,
            ) from None
        vertex = Vertex(conj, [])
        for f in alternatives:
            shape = Shape(f)
            if f.values is None:
                if "array" in f.kinds:
                    shape.arrays = self.excluding_containers(f, "array")
                if "object" in f.kinds:
                    shape.objects = self.excluding_containers(f, "object")
            vertex.shapes.append(shape)
            for g in shape.arrays:
                vertex.children.extend(self.array_conjs(g))
            for g in shape.objects:
                vertex.children.extend(c for _, c in self.member_conjs(g) if c is not None)
                vertex.children.extend(c for _, c in self.extra_regions(g)[1])
        if leaf is not None:
            vertex.leaf = True
            self._leaf_vertices[leaf] = (conj_key(conj), self.notes_since(mark))
        return vertex

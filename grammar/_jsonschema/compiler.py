"""The composition root: `_Compiler` assembled from the rooms, its state, and the second pass,
which lowers each conjunction of the facet graph into one memoized rule.
"""

from __future__ import annotations

from .._errors import CompileError, LimitError
from .._grammar import Dropped, Ignored
from .._ir import Node, alt, ref
from .context import ContextMixin, Notes
from .expansion import ExpansionMixin
from .facets import Facets, MergingMixin
from .form import Form
from .graph import GraphMixin, Shape, Vertex, conj_key
from .grounding import GroundedField, Grounding, GroundingMixin
from .helpers import _size
from .lower_containers import ContainerLoweringMixin
from .lower_strings import StringLoweringMixin
from .lowering import LoweringMixin
from .negation import NegationMixin
from .proofs import ProofsMixin
from .refs import Document, Place


class _Compiler(ContextMixin, GraphMixin, ExpansionMixin, NegationMixin, MergingMixin, ProofsMixin, GroundingMixin,
                LoweringMixin, StringLoweringMixin, ContainerLoweringMixin):
    """One schema's compile, in two passes. The first (`GraphMixin.build_graph`) takes every
    conjunction of subschemas (`Place`s) reachable from the root once: expanded (refs, allOf,
    not; then branches), each branch merged into `Facets` and proved where `oneOf` needs it,
    into a graph. The second (`lower_conj`) lowers that graph by kind into rules, one memoized
    rule per conjunction. Each base class is one room of this package; they share this
    object's state, set up here."""

    def __init__(self, schema: dict | bool, *, lenient: bool, form: Form, grounding: Grounding | None = None):
        self.lenient = lenient
        self.grounding = grounding  # see `grounding`: the source grounded values are held to
        self.grounded_fields: list[GroundedField] = []
        self._grounded_strings: dict[tuple, Node | str] = {}
        self._grounded_numbers: dict[Node, Node | str] = {}
        self.document = Document(schema)
        self.root_dialect = self.document.root.dialect
        self.rules: dict[str, Node] = {}
        self.dropped: list[Dropped] = []
        self.ignored: list[Ignored] = []
        self._seen_ignored: set[tuple[str, str]] = set()
        self._seen_dropped: set[tuple[str, str]] = set()
        # The text between tokens (see `form`); free blanks are one rule every place refers
        # to: a rule used in many places is built once and called, not spelled out at each.
        self.rules.update(form.rules)
        self.ws, self.comma, self.colon = form.inner, form.comma, form.colon
        self.graph: dict[tuple, Vertex] = {}  # the first pass's: see `graph`
        self._leaf_vertices: dict[tuple, tuple[tuple, Notes]] = {}  # by `_leaf_key`: the first's key, its notes
        self._compiled: dict[tuple, Node] = {}
        self._lowering_notes: dict[tuple, Notes] = {}  # of leaf vertices, for the equal ones
        self._pending: dict[tuple, str] = {}
        self._recursive: set[str] = set()
        self._alternatives: dict[tuple, list[Facets]] = {}
        self._expanding: set[tuple] = set()
        self._negations: dict[tuple, Place | None] = {}
        self._inexact: set[tuple] = set()
        self._narrowing: set[tuple] = set()  # places whose negation is exact but leaves values out
        self._narrowed: set[int] = set()  # ids of the schemas of narrowed negations
        self._fabricated: list[dict] = []
        self._exclusions: dict[frozenset[str], Node] = {}
        self._regex: dict[str, Node] = {}
        self._counter = 0
        self._any_value: Node | None = None
        self._to_encode: list[str] = []
        self._shared: dict[Node, Node] = {}
        self._numbers: dict[tuple, Node] = {}  # see `lower_number`
        self._listed: dict[int, tuple[list, int, set]] = {}  # see `among`

    def compile_root(self) -> Node:
        root = [self.document.root]
        self.build_graph(root)
        node = self.lower_conj(root)
        self.finish()
        return node

    def compile_keywords(self) -> Node:
        """The root object's members as Python keyword arguments (`name=value, ...`, values
        in JSON): only its declared properties, as a call can't spell another key."""
        root = [self.document.root]
        vertex = self.build_graph(root)
        shapes = vertex.shapes
        if shapes is None:  # any value: among them objects, of which only the empty call is spelled
            shapes = [Shape(f, objects=self.excluding_containers(f, "object")) for f in self.alternatives(root)]
        parts = []
        for shape in shapes:
            if shape.facets.values is not None:
                raise CompileError("keyword arguments can't spell an enum or const of objects",
                                   keyword="enum", pointer=shape.facets.pointer)
            parts.extend(self.lower_object(g, keywords=True) for g in shape.objects)
        self.finish()
        return alt(*parts)

    def lower_conj(self, conj: list[Place]) -> Node:
        """The second pass: the JSON texts of values satisfying every place in `conj` (a vertex
        of the graph), memoized as a rule; a conjunction met again while it is being lowered is
        a recursive rule."""
        key = conj_key(conj)
        if key in self._compiled:
            return self._compiled[key]
        vertex = self.graph[key]
        if vertex.same_as is not None:
            return self._same_leaf(key, vertex)
        if key in self._pending:
            name = self._pending[key]
            self._recursive.add(name)
            return ref(name)
        if vertex.shapes is None:
            return self.any_value()
        mark = self.notes_mark()
        name = self.name("v")
        self._pending[key] = name
        try:
            node = alt(*(self.lower(shape) for shape in vertex.shapes))
        except RecursionError:
            # Python's stack ran out before the graph's depth bound (each level costs several
            # frames): the deepest conjunction that can still report names the place.
            raise LimitError("schema nests too deeply", pointer=conj[0].pointer) from None
        finally:
            del self._pending[key]
        if name in self._recursive:
            node = self.rule(name, node)
        elif _size(node) > 40:
            node = self.shared(node, "v")
        self._compiled[key] = node
        if vertex.leaf:
            self._lowering_notes[key] = self.notes_since(mark)
        return node

    def _same_leaf(self, key: tuple, vertex: Vertex) -> Node:
        """A leaf schema equal to one lowered before: its node, and what lowering it noted,
        noted again at this place."""
        node = self.lower_conj(self.graph[vertex.same_as].conj)
        self.note_again(self._lowering_notes[vertex.same_as], vertex.conj[0].pointer)
        self.note_grounding_again(self.graph[vertex.same_as].conj[0].pointer, vertex.conj[0].pointer)
        self._compiled[key] = node
        return node

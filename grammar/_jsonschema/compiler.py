"""The composition root: `_Compiler` assembled from the rooms, its state, and the entry that
compiles one conjunction into one memoized rule.
"""

from __future__ import annotations

from .._errors import CompileError, LimitError
from .._grammar import Dropped, Ignored
from .._ir import EMPTY, Node, alt, char_set, ref, repeat
from .context import ContextMixin
from .expansion import ExpansionMixin
from .facets import Facets, MergingMixin
from .helpers import _size
from .limits import MAX_DEPTH
from .lower_containers import ContainerLoweringMixin
from .lower_strings import StringLoweringMixin
from .lowering import LoweringMixin
from .negation import NegationMixin
from .proofs import ProofsMixin
from .refs import Document, Place
from .values import _leaf_key
from .vocabulary import _Cyclic


class _Compiler(ContextMixin, ExpansionMixin, NegationMixin, MergingMixin, ProofsMixin, LoweringMixin,
                StringLoweringMixin, ContainerLoweringMixin):
    """One schema's compile. A conjunction of subschemas (`Place`s) is expanded (refs, allOf,
    not; then branches), each branch merged into `Facets`, proved where `oneOf` needs it, and
    lowered by kind into rules; every conjunction is one memoized rule. Each base class is one
    room of this package; they share this object's state, set up here."""

    def __init__(self, schema: dict | bool, *, lenient: bool, whitespace: int):
        self.lenient = lenient
        self.document = Document(schema)
        self.root_dialect = self.document.root.dialect
        self.rules: dict[str, Node] = {}
        self.dropped: list[Dropped] = []
        self.ignored: list[Ignored] = []
        self._seen_ignored: set[tuple[str, str]] = set()
        self._seen_dropped: set[tuple[str, str]] = set()
        # The blanks allowed between tokens, one rule every place refers to: a rule used in many
        # places is built once and called, not spelled out at each of them.
        self.ws = EMPTY
        if whitespace:
            self.rules["ws"] = repeat(char_set(" \t\n\r"), 0, whitespace)
            self.ws = ref("ws")
        self._compiled: dict[tuple, Node] = {}
        self._leaves: dict[tuple, tuple[Node, list[str], list[tuple[str, str]]]] = {}  # see `_leaf_key`
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
        self._depth = 0
        self._any_value: Node | None = None
        self._to_encode: list[str] = []
        self._shared: dict[Node, Node] = {}
        self._numbers: dict[tuple, Node] = {}  # see `lower_number`
        self._listed: dict[int, tuple[list, int, set]] = {}  # see `among`

    def compile_root(self) -> Node:
        root = self.compile_conj([self.document.root])
        self.finish()
        return root

    def compile_keywords(self) -> Node:
        """The root object's members as Python keyword arguments (`name=value, ...`, values
        in JSON): only its declared properties, as a call can't spell another key."""
        root = self.document.root
        try:
            alternatives = self.alternatives([root])
        except _Cyclic:
            raise CompileError("anyOf/oneOf/if branches lead back to themselves before reaching a value",
                               keyword="$ref", pointer="") from None
        parts = []
        for f in alternatives:
            if f.values is not None:
                raise CompileError("keyword arguments can't spell an enum or const of objects",
                                   keyword="enum", pointer=f.pointer)
            if "object" in f.kinds:
                parts.extend(self.lower_object(g, keywords=True) for g in self.excluding_containers(f, "object"))
        self.finish()
        return alt(*parts)

    def compile_conj(self, conj: list[Place]) -> Node:
        """The JSON texts of values satisfying every place in `conj`, memoized as a rule."""
        key = tuple(p.key for p in conj)
        if key in self._compiled:
            return self._compiled[key]
        # Equal leaf schemas in many places (every `{"type": "integer"}` property) are lowered
        # once; what was ignored or dropped there is noted again at each place.
        leaf = _leaf_key(conj[0]) if len(conj) == 1 else None
        if leaf is not None:
            found = self._leaves.get(leaf)
            if found is not None:
                node, ignored, dropped = found
                for keyword in ignored:
                    self.ignore(keyword, conj[0].pointer)
                for keyword, reason in dropped:
                    self.refuse(reason, keyword, conj[0].pointer)
                self._compiled[key] = node
                return node
            notes = len(self.ignored), len(self.dropped)
        if key in self._pending:
            name = self._pending[key]
            self._recursive.add(name)
            return ref(name)
        if not conj or all(p.schema is True or p.schema == {} for p in conj):
            return self.any_value()
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise LimitError("schema nests too deeply", pointer=conj[0].pointer)
        name = self.name("v")
        self._pending[key] = name
        try:
            node = alt(*(self.lower(f) for f in self.alternatives(conj)))
        except _Cyclic:
            raise CompileError(
                "anyOf/oneOf/if branches lead back to themselves before reaching a value (the "
                "validator recurses forever: no value validates)",
                keyword="$ref",
                pointer=conj[-1].pointer,
            ) from None
        except RecursionError:
            # Python's stack ran out before MAX_DEPTH (each level costs several frames): the
            # deepest conjunction that can still report names the place.
            raise LimitError("schema nests too deeply", pointer=conj[0].pointer) from None
        finally:
            del self._pending[key]
            self._depth -= 1
        if name in self._recursive or _size(node) > 40:
            node = self.rule(name, node)
        self._compiled[key] = node
        if leaf is not None:
            self._leaves[leaf] = (
                node,
                [i.keyword for i in self.ignored[notes[0]:]],
                [(d.keyword, d.reason) for d in self.dropped[notes[1]:]],
            )
        return node

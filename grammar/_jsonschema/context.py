"""The compile's context: rule names and the rules table, shared rules, what was dropped or
ignored and where, and places for the schemas the compiler writes.
"""

from __future__ import annotations

from .._errors import CompileError, LimitError
from .._grammar import Dropped, Ignored
from .._ir import Lit, NOTHING, Node, ref
from .limits import MAX_RULES
from .refs import DRAFT2020, Place

Notes = tuple[list[str], list[tuple[str, str]]]  # see `ContextMixin.notes_since`


class ContextMixin:
    """The compiler's context (a part of `_Compiler`)."""

    def name(self, tag: str) -> str:
        self._counter += 1
        return f"{tag}-{self._counter}"

    def rule(self, name: str, node: Node) -> Node:
        if len(self.rules) >= MAX_RULES:
            raise LimitError(f"schema needs more than {MAX_RULES} grammar rules")
        self.rules[name] = node
        return ref(name)

    def shared(self, node: Node, tag: str) -> Node:
        """`node` as a rule, one for every equal node: values of the same shape in many places
        (every integer property) then compile to one piece of automaton, whose token sets the
        matcher finds once for all of them."""
        if isinstance(node, Lit) or node == NOTHING:
            return node  # a literal's states are cheap wherever it is; nothing needs no rule
        found = self._shared.get(node)
        if found is None:
            found = self._shared[node] = self.rule(self.name(tag), node)
        return found

    def refuse(self, message: str, keyword: str, pointer: str) -> None:
        """A keyword that can't be enforced: an error, or (lenient) a recorded drop."""
        if not self.lenient:
            raise CompileError(message, keyword=keyword, pointer=pointer)
        if (keyword, pointer) not in self._seen_dropped:
            self._seen_dropped.add((keyword, pointer))
            self.dropped.append(Dropped(keyword, pointer, message))

    def notes_mark(self) -> tuple[int, int]:
        """Where the notes stand now, for `notes_since`."""
        return len(self.ignored), len(self.dropped)

    def notes_since(self, mark: tuple[int, int]) -> Notes:
        """What was ignored or dropped since `mark`: (keywords ignored, (keyword, reason) dropped)."""
        return ([i.keyword for i in self.ignored[mark[0]:]],
                [(d.keyword, d.reason) for d in self.dropped[mark[1]:]])

    def note_again(self, notes: Notes, pointer: str) -> None:
        """`notes` taken at one place, noted at `pointer` too (an equal schema met again)."""
        ignored, dropped = notes
        for keyword in ignored:
            self.ignore(keyword, pointer)
        for keyword, reason in dropped:
            self.refuse(reason, keyword, pointer)

    def ignore(self, keyword: str, pointer: str) -> None:
        if (keyword, pointer) not in self._seen_ignored:
            self._seen_ignored.add((keyword, pointer))
            self.ignored.append(Ignored(keyword, pointer))

    def child(self, place: Place, *path: str | int) -> Place:
        """A subschema's place; schemas the compiler writes may hold places directly."""
        value = place.schema
        for token in path:
            value = value[token]
        if isinstance(value, Place):
            return value
        return self.document.child(place, *path)

    def fabricate(self, origin: Place, schema: dict) -> Place:
        """A place for a schema the compiler wrote (read as 2020-12, references already resolved)."""
        self._fabricated.append(schema)  # kept alive: places are keyed by id()
        return Place(schema, origin.pointer, origin.base, DRAFT2020)

    def fabricate_at(self, pointer: str, schema: dict | bool) -> Place:
        """A place for a schema the compiler wrote that holds no reference."""
        self._fabricated.append(schema)
        return Place(schema, pointer, "", DRAFT2020)

"""`Grammar`: a named set of IR rules with a root, plus what compiling its source left out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._errors import CompileError
from ._gbnf_render import to_gbnf
from ._ir import Node, Ref, Rules, alt, rebuilt, shallow



@dataclass(frozen=True)
class Dropped:
    """A keyword a lenient compile could not enforce: the caller must validate it afterwards."""

    keyword: str
    pointer: str
    reason: str


@dataclass(frozen=True)
class Ignored:
    """An annotation with no effect on validity (title, description, unchecked format...)."""

    keyword: str
    pointer: str


SPAN_BLANKS = " \t\n\r"  # what may stand between a reasoning span's close and the body


@dataclass(frozen=True)
class ReasoningSpan:
    """How a model marks its reasoning: the `open` and `close` texts around it, and at most
    `max_tokens` tokens between them (None: no budget beyond the generation's own)."""

    open: str = "<think>"
    close: str = "</think>"
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if not self.open or not self.close:
            raise CompileError("a reasoning span needs a non-empty open and close text", keyword="reasoning")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise CompileError(f"a reasoning span's max_tokens must be >= 0, not {self.max_tokens}",
                               keyword="reasoning")

    def split(self, text: str) -> tuple[str | None, str]:
        """`text` as (the reasoning between open and close, what follows it, blanks stripped);
        (None, `text`) where it does not open with a span."""
        if not text.startswith(self.open):
            return None, text
        end = text.find(self.close, len(self.open))
        if end < 0:
            return None, text
        return text[len(self.open):end], text[end + len(self.close):].lstrip(SPAN_BLANKS)


class Grammar:
    """A grammar in the IR: rules of code-point literals, classes, sequences, alternations,
    bounded repeats and references, with a distinguished root rule.

    Build one with a front end (`from_json_schema`, `from_regex`, `from_gbnf`, `any_json`, the
    tool grammars); render it with `to_gbnf()`; test text against it with `accepts()`; compile
    it against a vocabulary with `grammar.compile`.
    """

    def __init__(
        self,
        rules: dict[str, Node],
        root: str = "root",
        *,
        dropped: tuple[Dropped, ...] = (),
        ignored: tuple[Ignored, ...] = (),
        source: str = "",
        schema: Any = None,
        reasoning: ReasoningSpan | None = None,
        grounding: tuple[Any, ...] = (),
    ):
        if root not in rules:
            raise CompileError(f"start rule {root!r} is not defined", keyword="root")
        self._rules = Rules(shallow(dict(rules)), root)
        for name in self._rules.reachable():
            if name not in self._rules.rules:
                raise CompileError(f"rule {name!r} is referenced but not defined", keyword="ref")
        self.dropped = tuple(dropped)
        self.ignored = tuple(ignored)
        self.source = source
        # The JSON Schema this grammar was compiled from, if any (for a tool-call grammar, its
        # single bare calls; for `either`, the union): servers that take schemas rather than
        # grammars are sent this.
        self.schema = schema
        # The reasoning span this grammar opens with (`after_reasoning`), whose token budget a
        # local runtime keeps.
        self.reasoning = reasoning
        # What a compile with a source did at each grounded place (`GroundedField`s): where a
        # field was held to the source, and where it kept its plain grammar and why.
        self.grounding = tuple(grounding)
        self._gbnf: str | None = None

    @property
    def root(self) -> str:
        return self._rules.root

    @property
    def rules(self) -> dict[str, Node]:
        """The rules reachable from the root, root first."""
        return {name: self._rules.rules[name] for name in self._rules.reachable()}

    def rule_set(self) -> Rules:
        return self._rules

    def accepts(self, text: str | bytes) -> bool:
        """Whether the whole of `text` is a sentence of this grammar.

        Bytes must be UTF-8; text that is not valid UTF-8 is never accepted.
        """
        from ._recognize import accepts

        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                return False
        return accepts(self._rules, text)

    def to_gbnf(self) -> str:
        """This grammar as GBNF text, as llama.cpp's grammar parser reads it (rendered once: a
        server runtime sends it with every request)."""
        if self._gbnf is None:
            self._gbnf = to_gbnf(self._rules)
        return self._gbnf

    def __repr__(self) -> str:
        n = len(self._rules.reachable())
        return f"<Grammar {self.source or 'rules'}: {n} rule{'s' if n != 1 else ''}>"


def either(*grammars: Grammar) -> Grammar:
    """A sentence of any one of `grammars`: tool calls or a typed answer, say.

    Rules keep apart (each grammar's names get a prefix); what each grammar dropped or ignored
    is kept, so a caller still validates what none of them enforces.
    """
    if not grammars:
        raise CompileError("either() needs at least one grammar", keyword="either")
    rules = merge_rules(*((f"g{i}-", g.rules) for i, g in enumerate(grammars)))
    rules["root"] = alt(*(Ref(f"g{i}-{g.root}") for i, g in enumerate(grammars)))
    return Grammar(
        rules,
        "root",
        dropped=tuple(d for g in grammars for d in g.dropped),
        ignored=tuple(i for g in grammars for i in g.ignored),
        source="either(" + ", ".join(g.source or "grammar" for g in grammars) + ")",
        schema=_either_schema(grammars),
    )


def _either_schema(grammars: tuple[Grammar, ...]) -> dict[str, Any] | None:
    """The `anyOf` of the grammars' schemas, where every one has a schema that can be moved."""
    from ._schema_union import moved

    defs: dict[str, Any] = {}
    branches = []
    for i, g in enumerate(grammars):
        branch = None if g.schema is None else moved(g.schema, f"/anyOf/{i}", f"g{i}-", defs)
        if branch is None:
            return None
        branches.append(branch)
    return {"anyOf": branches, **({"$defs": defs} if defs else {})}


def merge_rules(*groups: tuple[str, dict[str, Node]]) -> dict[str, Node]:
    """Combine rule sets from several grammars, prefixing names so they cannot collide."""
    out: dict[str, Node] = {}
    for prefix, rules in groups:
        renamed = {name: f"{prefix}{name}" for name in rules}
        for name, node in rules.items():
            out[renamed[name]] = _rename(node, renamed)
    return out


def _rename(node: Node, names: dict[str, str]) -> Node:
    return rebuilt(node, lambda leaf: Ref(names.get(leaf.name, leaf.name)) if isinstance(leaf, Ref) else leaf)

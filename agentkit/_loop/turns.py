"""Turn grammars: what a model turn may be (calls, calls or the answer, the answer alone), and
the grammar that holds it, built once per set of tools, envelope and kind; a turn whose tool
arguments are held to the conversation (grounded), or an answer whose numbers are, once per
conversation text as well."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import grammar
from grammar import GroundedField, Grammar, ReasoningSpan, ToolSchema

from .._messages import CALL_WHITESPACE, Envelope
from .._outputs.grounding import GroundedMode, marked_schema
from .._outputs.output import OutputSpec
from .._tools.tool import Tool

TurnKind = Literal["calls", "calls_or_answer", "answer"]
"""What a model turn may be: tool calls only, tool calls or the final answer, the answer only."""


def preamble(kind: TurnKind, envelopes: tuple[Envelope, ...], has_output: bool) -> bool:
    """Whether text may come before a turn's calls: where the turn may also answer in text.
    Tool models often say what they will do first, and without a preamble that sentence
    is the final answer. Not where a call is required (a small model would spend the
    turn's budget on the preamble), nor beside a typed output, whose JSON a preamble could
    not be told from, nor for a list of Python calls, whose `[` prose holds too often."""
    return kind == "calls_or_answer" and not has_output and envelopes != ("python",)


GROUNDED_TURNS = 8
"""Grounded turn grammars an agent keeps, the least recently used dropped first. Each holds one
conversation text, which grows every turn: one is used again for a turn asked over the same
text (the first turn of runs given the same prompt), and the bound keeps memory flat however
long the runs."""


@dataclasses.dataclass(frozen=True)
class GroundedTurn:
    """A turn's grammar and kind, and what holding its arguments to the conversation did: the
    kind is the one asked for, or "answer" where no tool could be offered and none is
    required; `withheld`, the tools not offered (a required argument the conversation holds
    no value for); `ungrounded`, a turn held to the plain arguments as no tool could be
    offered and a call is required."""

    grammar: Grammar | None
    kind: TurnKind
    withheld: tuple[str, ...] = ()
    ungrounded: bool = False


class TurnGrammars:
    """The grammars of an agent's turns, each built once and kept.

    A turn's grammar depends on the tools it may call (the agent's, or a run's own set), the
    envelopes calls may be written in, its kind, and the typed answer's grammar in the form of
    JSON the runtime's model was shown (`answer`: `OutputSpec.grammar_in(form_for(runtime))`; the type's
    own grammar where not given); `output` (the typed final answer, if
    any), `max_calls` per turn (unless a turn asks for fewer: a routed turn makes one call)
    and `reasoning` are the agent's and fixed."""

    def __init__(self, output: OutputSpec[object] | None, max_calls: int, reasoning: ReasoningSpan | None):
        self.output = output
        self.max_calls = max_calls
        self.reasoning = reasoning
        self._built: dict[tuple[tuple[Tool, ...], tuple[Envelope, ...], TurnKind, int | None, Grammar | None, int],
                          Grammar | None] = {}
        self._marked: dict[tuple[tuple[Tool, ...], GroundedMode], tuple[_Marked, ...] | None] = {}
        self._grounded: collections.OrderedDict[tuple[object, ...], GroundedTurn] = collections.OrderedDict()

    def get(self, tools: Mapping[str, Tool], envelopes: tuple[Envelope, ...], kind: TurnKind,
            max_bytes: int | None = None, answer: Grammar | None = None, max_calls: int | None = None) -> Grammar | None:
        """The grammar a turn of `kind` is held to, for `tools` written in `envelopes`.

        `max_bytes`: every sentence at most that many bytes, for a runtime that cannot close a
        turn at its token budget itself (a server): a token is at least a byte, so the turn
        then always ends within as many tokens. `grammar.LimitError` where not even the
        shortest turn fits."""
        calls = max_calls or self.max_calls
        key = (tuple(tools.values()), envelopes, kind, max_bytes, answer, calls)
        if key not in self._built:
            g, _ = self._build([t.tool_schema() for t in key[0]], envelopes, kind, max_bytes, answer, calls)
            self._built[key] = self._finish(g, max_bytes)
        return self._built[key]

    def holds_arguments(self, tools: Mapping[str, Tool], mode: GroundedMode) -> bool:
        """Whether a turn over `tools` holds any argument to the conversation under `mode`."""
        return self._marks(tuple(tools.values()), mode) is not None

    def grounded(self, tools: Mapping[str, Tool], envelopes: tuple[Envelope, ...], kind: TurnKind,
                 mode: GroundedMode, text: str, answer: Grammar | None = None,
                 max_calls: int | None = None) -> GroundedTurn:
        """The turn of `kind` with its tools' chosen arguments held to `text`: those `mode`
        picks ("auto": by `marked_schema`'s rule) and those a tool marks itself (`Grounded()`,
        `Grounded(False)`: a mark wins over the mode). A tool with a required argument that
        `text` holds no value for is not offered; where that leaves none, the turn may only
        answer, or where it must call, it is the plain turn, `ungrounded`. Never an empty
        grammar: an argument `text` cannot hold otherwise keeps its plain grammar."""
        calls = max_calls or self.max_calls
        marked = self._marks(tuple(tools.values()), mode) if kind != "answer" else None
        if not marked:
            return GroundedTurn(self.get(tools, envelopes, kind, answer=answer, max_calls=calls), kind)
        key = (tuple(tools.values()), envelopes, kind, mode, text, answer, calls)
        return self._kept(key, lambda: self._ground(tools, marked, envelopes, kind, grammar.Grounding(text),
                                                    answer, calls))

    def held_answer(self, envelopes: tuple[Envelope, ...], numbers: tuple[str, ...],
                    max_bytes: int | None = None) -> GroundedTurn:
        """An answer turn whose every number is one of `numbers` (`grammar.free_text(numbers=)`)."""
        return self._kept(("answer", envelopes, numbers, max_bytes), lambda: GroundedTurn(
            self._finish(grammar.free_text(envelope=envelopes, max_bytes=max_bytes, numbers=numbers), max_bytes),
            "answer"))

    def _kept(self, key: tuple[object, ...], build: Callable[[], GroundedTurn]) -> GroundedTurn:
        """The turn kept under `key`, else `build()`'s, kept (the least recently used dropped)."""
        found = self._grounded.get(key)
        if found is None:
            found = self._grounded[key] = build()
            if len(self._grounded) > GROUNDED_TURNS:
                self._grounded.popitem(last=False)
        else:
            self._grounded.move_to_end(key)
        return found

    def _ground(self, tools: Mapping[str, Tool], marked: tuple[_Marked, ...], envelopes: tuple[Envelope, ...],
                kind: TurnKind, grounding: grammar.Grounding, answer: Grammar | None, calls: int) -> GroundedTurn:
        g, notes = self._build([m.schema for m in marked], envelopes, kind, None, answer, calls, grounding)
        withheld = _unfilled(marked, notes)
        if not withheld:
            return GroundedTurn(self._finish(g, None), kind)
        offered = [m for m in marked if m.schema.name not in withheld]
        names = tuple(m.schema.name for m in marked if m.schema.name in withheld)
        if offered:
            g, _ = self._build([m.schema for m in offered], envelopes, kind, None, answer, calls, grounding)
            return GroundedTurn(self._finish(g, None), kind, names)
        if kind == "calls":  # a call is required, and none could be grounded: the plain turn
            return GroundedTurn(self.get(tools, envelopes, kind, answer=answer, max_calls=calls), kind, names,
                                ungrounded=True)
        return GroundedTurn(self.get(tools, envelopes, "answer", answer=answer), "answer", names)

    def _marks(self, tools: tuple[Tool, ...], mode: GroundedMode) -> tuple[_Marked, ...] | None:
        """The tools' schemas with the arguments to hold marked, once per tool set and mode
        (None where no argument is held: the turn is the plain one)."""
        key = (tools, mode)
        if key not in self._marked:
            found, held = [], False
            for t in tools:
                plain = t.tool_schema()
                schema, chosen = marked_schema(plain.schema, "", mode, numbers_if_written=False, optional_held=False,
                                               text_known=False)
                found.append(_Marked(ToolSchema(plain.name, schema, plain.description), _required_held(schema, chosen)))
                held = held or bool(chosen)
            self._marked[key] = tuple(found) if held else None
        return self._marked[key]

    def _finish(self, g: Grammar | None, max_bytes: int | None) -> Grammar | None:
        if g is not None and self.reasoning is not None:
            g = grammar.after_reasoning(g, self.reasoning)
        if g is not None and max_bytes is not None:
            g = grammar.within_bytes(g, max_bytes)  # an output's grammar, a reasoning span
        return g

    def _build(self, schemas: Sequence[ToolSchema], envelopes: tuple[Envelope, ...], kind: TurnKind,
               max_bytes: int | None, answer: Grammar | None, max_calls: int,
               grounding: grammar.Grounding | None = None) -> tuple[Grammar | None, tuple[GroundedField, ...]]:
        """The turn's grammar, and what its grounding did to the tools' arguments."""
        output = answer if answer is not None else self.output.grammar if self.output else None
        options = {"envelope": envelopes, "max_calls": max_calls, "lenient": True,
                   "whitespace": CALL_WHITESPACE, "preamble": preamble(kind, envelopes, self.output is not None),
                   "max_bytes": max_bytes, "grounding": grounding}
        if not schemas:
            return output, ()
        if kind == "answer":
            return (output or grammar.free_text(envelope=envelopes, max_bytes=max_bytes)), ()
        if kind == "calls":
            g = grammar.tool_calls(schemas, **options)
            return g, g.grounding
        if output is None:
            g = grammar.tool_calls_or_text(schemas, **options)
            return g, g.grounding
        calls = grammar.tool_calls(schemas, **options)
        return grammar.either(calls, output), calls.grounding


@dataclasses.dataclass(frozen=True)
class _Marked:
    """A tool's schema with the arguments to hold marked, and the pointers of its required
    arguments that are themselves held (not a branch of them: `str | None` can be null)."""

    schema: ToolSchema
    required: tuple[str, ...]


def _required_held(schema: dict[str, object], chosen: Mapping[str, object]) -> tuple[str, ...]:
    required = schema.get("required")
    names = required if isinstance(required, list) else []
    return tuple(p for name in names if isinstance(name, str)
                 and (p := "/properties/" + name.replace("~", "~0").replace("/", "~1")) in chosen)


def _unfilled(marked: Sequence[_Marked], notes: Sequence[GroundedField]) -> set[str]:
    """The tools with a required held argument for which the source holds no value."""
    empty = {n.pointer for n in notes if n.unfilled}
    return {m.schema.name for m in marked if any(f"/{m.schema.name}{p}" in empty for p in m.required)}

"""Turn grammars: what a model turn may be (calls, calls or the answer, the answer alone), and
the grammar that holds it, built once per set of tools, envelope and kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import grammar
from grammar import Grammar, ReasoningSpan

from .._messages import CALL_WHITESPACE, Envelope
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


class TurnGrammars:
    """The grammars of an agent's turns, each built once and kept.

    A turn's grammar depends on the tools it may call (the agent's, or a run's own set), the
    envelopes calls may be written in, and its kind; `output` (the typed final answer, if
    any), `max_calls` per turn and `reasoning` are the agent's and fixed."""

    def __init__(self, output: OutputSpec[object] | None, max_calls: int, reasoning: ReasoningSpan | None):
        self.output = output
        self.max_calls = max_calls
        self.reasoning = reasoning
        self._built: dict[tuple[tuple[Tool, ...], tuple[Envelope, ...], TurnKind, int | None], Grammar | None] = {}

    def get(self, tools: Mapping[str, Tool], envelopes: tuple[Envelope, ...], kind: TurnKind,
            max_bytes: int | None = None) -> Grammar | None:
        """The grammar a turn of `kind` is held to, for `tools` written in `envelopes`.

        `max_bytes`: every sentence at most that many bytes, for a runtime that cannot close a
        turn at its token budget itself (a server): a token is at least a byte, so the turn
        then always ends within as many tokens. `grammar.LimitError` where not even the
        shortest turn fits."""
        key = (tuple(tools.values()), envelopes, kind, max_bytes)
        if key not in self._built:
            g = self._build(key[0], envelopes, kind, max_bytes)
            if g is not None and self.reasoning is not None:
                g = grammar.after_reasoning(g, self.reasoning)
            if g is not None and max_bytes is not None:
                g = grammar.within_bytes(g, max_bytes)  # an output's grammar, a reasoning span
            self._built[key] = g
        return self._built[key]

    def _build(self, tools: tuple[Tool, ...], envelopes: tuple[Envelope, ...], kind: TurnKind,
               max_bytes: int | None) -> Grammar | None:
        schemas = [t.tool_schema() for t in tools]
        options = {"envelope": envelopes, "max_calls": self.max_calls, "lenient": True,
                   "whitespace": CALL_WHITESPACE, "preamble": preamble(kind, envelopes, self.output is not None),
                   "max_bytes": max_bytes}
        if not schemas:
            return self.output.grammar if self.output else None
        if kind == "answer":
            return self.output.grammar if self.output else grammar.free_text(envelope=envelopes, max_bytes=max_bytes)
        if kind == "calls":
            return grammar.tool_calls(schemas, **options)
        if self.output is None:
            return grammar.tool_calls_or_text(schemas, **options)
        return grammar.either(grammar.tool_calls(schemas, **options), self.output.grammar)

"""Which runtime a call uses, and how to read a generation's end."""

from __future__ import annotations

from collections.abc import Collection

from grammar import Grammar, parse_tool_calls
from runtimes import Generation, Runtime

from ._bounds import ENVELOPE_NESTING, MAX_NESTING, text_problem


def resolve_runtime(runtime: Runtime | None) -> Runtime:
    """`runtime`, or the embedded default model (loaded on first use, then shared)."""
    if runtime is not None:
        return runtime
    import runtimes

    return runtimes.default()


def budget_reached(generation: Generation) -> bool:
    """Whether the answer was cut by its token budget rather than finished by the model.

    A local runtime closes a constrained document early when the budget runs short (so it
    parses) and marks the generation `steered`; its last values may be cut short, so it counts
    as cut too.
    """
    return generation.finish_reason == "length" or generation.steered


def model_written_calls(
    generation: Generation, g: Grammar, envelope: tuple[str, ...], *, preamble: bool = False,
    names: Collection[str] = (),
) -> str | None:
    """The tool calls of a steered generation that the model finished before the runtime
    began closing the document: the longest such prefix that is itself a whole document of
    `g` and ends a call; None if no call was finished.

    Small models often repeat a call until the budget runs out; the calls before the repeat
    are intact and can run, and only the one being written is lost.
    """
    text, end = generation.text, generation.steered_from
    assert end is not None
    if text_problem(text, nesting=MAX_NESTING + ENVELOPE_NESTING):  # unsafe to parse: nothing is kept
        return None
    start = 0  # where the calls begin: after a reasoning span, if the grammar opens with one
    if g.reasoning is not None:
        thought, calls = g.reasoning.split(text)
        if thought is not None:
            start = len(text) - len(calls)
    # A list of Python calls is whole only with its `]`: after a finished call, close it.
    closing = "]" if tuple(envelope) == ("python",) and text[start:].lstrip().startswith("[") else ""
    for cut in range(end, start, -1):
        candidate = text[:cut] + (closing if text[cut - 1] == ")" else "")
        if candidate[-1] in "}>`])" and g.accepts(candidate) and parse_tool_calls(
            candidate[start:], envelope=envelope, preamble=preamble, names=names
        ):
            return candidate
    return None

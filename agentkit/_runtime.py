"""Which runtime a call uses, and how to read a generation's end."""

from __future__ import annotations

from runtimes import Generation, Runtime


def resolve_runtime(runtime: Runtime | None) -> Runtime:
    """`runtime`, or the embedded default model (loaded on first use, then shared)."""
    if runtime is not None:
        return runtime
    import runtimes

    return runtimes.default()


def budget_reached(generation: Generation, max_tokens: int, *, constrained: bool) -> bool:
    """Whether the answer was cut by its token budget rather than finished by the model.

    A local runtime closes a constrained document early when the budget runs short (so it
    parses), reporting "grammar_complete"; such an answer used the whole budget. An answer that
    finishes on exactly its last token is counted as cut too: the cost of never passing on a
    document whose values were truncated.
    """
    if generation.finish_reason == "length":
        return True
    return constrained and generation.finish_reason == "grammar_complete" and generation.usage.completion_tokens >= max_tokens

"""Slow compiles, reported on the `grammar` logger, and where a compiled grammar's cold time goes.

A compile that takes `SLOW_COMPILE_MS` or longer gives one INFO record naming what was compiled,
its size and the milliseconds it took (so an operator sees which schema or tool set is costly);
quicker ones give a DEBUG record. The threshold starts from `$GRAMMAR_SLOW_COMPILE_MS` (default
100) and may be changed here at run time.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

logger = logging.getLogger("grammar")

SLOW_COMPILE_MS = float(os.environ.get("GRAMMAR_SLOW_COMPILE_MS", "100"))

P = ParamSpec("P")
R = TypeVar("R")


def log_compile(kind: str, started: float, describe: Callable[[], str]) -> None:
    """Report a compile of `kind` begun at `started` (`time.perf_counter()`); `describe` gives
    its size, and is called only when a record is made."""
    ms = (time.perf_counter() - started) * 1e3
    if ms >= SLOW_COMPILE_MS:
        logger.info("%s compile took %.0f ms: %s", kind, ms, describe())
    elif logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s compile took %.1f ms: %s", kind, ms, describe())


def logged_compile(kind: str, describe: Callable[..., str]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A compile function whose calls `log_compile` reports (`describe` takes its arguments)."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def timed(*args: P.args, **kwargs: P.kwargs) -> R:
            started = time.perf_counter()
            out = fn(*args, **kwargs)
            log_compile(kind, started, lambda: describe(*args, **kwargs))
            return out

        return timed

    return decorate


def schema_size(schema: object, *args: object, **kwargs: object) -> str:
    """The size of a schema (or its JSON text) given to a compile."""
    text = schema if isinstance(schema, str) else json.dumps(schema, default=str)
    return f"{len(text)} characters of JSON Schema"


def tool_set_size(tools: Sequence[object], *args: object, **kwargs: object) -> str:
    """The size of a tool set given to a compile."""
    return f"{len(tools)} tools"


@dataclass
class CompileProfile:
    """Where a compiled grammar's cold time went, in seconds: building it (`tables` for the
    vocabulary, cached per vocabulary; `analysis` of its rules; `automaton`) and then, as a
    document asks for them, the masks of states met for the first time (`masks`, counted per
    way the mask was found in `paths`: a literal's tokens `forced`, a bounded string's
    `counted` or `chained` profile, a call's `framed` inside set, or every token `walked`)."""

    tables: float = 0.0
    analysis: float = 0.0
    automaton: float = 0.0
    masks: float = 0.0
    paths: Counter[str] = field(default_factory=Counter)
    path_seconds: Counter[str] = field(default_factory=Counter)

    @property
    def build(self) -> float:
        return self.tables + self.analysis + self.automaton

    def summary(self) -> str:
        """The build's stages, then the masks found so far and their ways."""
        built = (f"tables {self.tables * 1e3:.1f} ms, analysis {self.analysis * 1e3:.1f} ms, "
                 f"automaton {self.automaton * 1e3:.1f} ms")
        if not self.paths:
            return built
        ways = ", ".join(f"{n} {path} {self.path_seconds[path] * 1e3:.1f} ms" for path, n in self.paths.most_common())
        return f"{built}; masks {self.masks * 1e3:.1f} ms ({ways})"

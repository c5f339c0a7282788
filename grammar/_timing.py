"""Slow compiles, reported on the `grammar` logger.

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
from collections.abc import Callable, Sequence
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

"""Errors raised while building or running a grammar, and reading a model's vocabulary.

    GrammarError                 every error of this package
    ├── CompileError             a source that cannot be compiled soundly (.keyword, .pointer)
    │   └── LimitError           a bound on compile work or size was met
    ├── MatcherError             a matcher driven where the grammar cannot go
    └── GGUFError                a file that is no GGUF this reader understands (also a ValueError)
"""

from __future__ import annotations


class GrammarError(Exception):
    """Base class of every error this package raises."""


class CompileError(GrammarError):
    """A grammar source that cannot be compiled soundly.

    `keyword` is the JSON Schema keyword (or the construct, for regex and GBNF) that could not
    be enforced, and `pointer` the JSON pointer (or offset) where it stands, so the message
    says both what and where.
    """

    def __init__(self, message: str, *, keyword: str | None = None, pointer: str | None = None):
        self.keyword = keyword
        self.pointer = pointer
        self.reason = message
        where = []
        if keyword is not None:
            where.append(f"keyword {keyword!r}")
        if pointer is not None:
            where.append(f"at #{pointer}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class LimitError(CompileError):
    """A compile-work bound (states, rules, depth, repetition size) was exceeded."""


class MatcherError(GrammarError):
    """A matcher was driven somewhere the grammar cannot go (e.g. a mask that allows nothing)."""


class GGUFError(GrammarError, ValueError):
    """A file that is not a GGUF file this reader understands, or a header that is cut short."""

"""The executable meaning of a grammar: does the whole of a text belong to its language?

An Earley recognizer over a lowered form of the IR, exact for every context-free grammar the IR
can state (left recursion, nullable rules, ambiguity included). The lowering runs once per
`Rules` object and is cached:

- every rule and every nested alternation becomes a nonterminal with flat productions; literal
  runs are single terminals, matched in one step;
- a repeat of a code-point class (`[a-z]{0,50}`, `[^"\\\\]*`) is one terminal that scans the whole
  run with a compiled regular expression; `(class | other)*` becomes `class* (other class*)*` so
  string bodies scan the same way;
- any other repeat is one state with a counter in the item, so `{0,5000}` costs no copies;
- each state knows its one-character lookahead set (FIRST of what follows it, and FOLLOW of its
  rule where that is nullable), and an item whose next character can't start what it still needs
  is never added. Predictions are precomputed per (nonterminal, next character).

Empty completions are never replayed: a state waiting on a nullable nonterminal is advanced when
it is predicted (Aycock and Horspool), which makes the recognizer exact with nullable rules.

Stages, one module each: `lowering` (IR -> nonterminals with flat productions), `tables`
(nullable, FIRST and FOLLOW sets, then flat state tables with their lookaheads), `scan` (the
regular expressions that match runs and counted languages in one step), `earley` (the loop).

Work is bounded: the items created, completions tried and characters scanned are counted, and
past `WORK_BASE + WORK_PER_CHAR * len(text)` the recognizer raises `LimitError` rather than
answering, so the same question gets the same verdict on every machine.
"""

from __future__ import annotations

from .._ir import Rules
from .earley import recognize
from .tables import compiled

WORK_BASE = 250_000
WORK_PER_CHAR = 250


def accepts(rules: Rules, text: str, *, work_limit: int | None = None) -> bool:
    """Whether the whole of `text` (code points) is a sentence of `rules`, starting at the root.

    `work_limit` overrides the default bound on work; exceeding it raises `LimitError`.
    """
    limit = WORK_BASE + WORK_PER_CHAR * len(text) if work_limit is None else work_limit
    return recognize(compiled(rules), text, limit)

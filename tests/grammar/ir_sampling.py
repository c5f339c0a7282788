"""Random sentences of an IR grammar, and small edits of them, for property tests.

A sentence is drawn by a random derivation that turns to the shortest alternatives once it
has grown past a budget, so it always ends; edits (insert, delete, replace one character) give
strings just outside, or just inside, the language.
"""

from __future__ import annotations

import math
import random

from grammar._ir import Alt, Chars, Lit, Node, Repeat, Rules, Seq

BUDGET = 40


def shortest_lengths(rules: Rules) -> dict[str, float]:
    """The length of the shortest sentence of each rule (infinite when it has none)."""
    lengths = {name: math.inf for name in rules.rules}
    changed = True
    while changed:
        changed = False
        for name, node in rules.rules.items():
            n = _shortest(node, lengths)
            if n < lengths[name]:
                lengths[name] = n
                changed = True
    return lengths


def _shortest(node: Node, lengths: dict[str, float]) -> float:
    if isinstance(node, Lit):
        return len(node.text)
    if isinstance(node, Chars):
        return 1 if node.ranges else math.inf
    if isinstance(node, Seq):
        return sum((_shortest(item, lengths) for item in node.items), 0)
    if isinstance(node, Alt):
        return min((_shortest(item, lengths) for item in node.items), default=math.inf)
    if isinstance(node, Repeat):
        return 0 if node.min == 0 else node.min * _shortest(node.item, lengths)
    return lengths.get(node.name, math.inf)


def sentence(rules: Rules, rng: random.Random) -> str | None:
    """A random sentence of the grammar, or None when its language is empty."""
    lengths = shortest_lengths(rules)
    if lengths[rules.root] == math.inf:
        return None
    out: list[str] = []

    def grow(node: Node) -> None:
        frugal = len(out) > BUDGET
        if isinstance(node, Lit):
            out.append(node.text)
        elif isinstance(node, Chars):
            out.append(chr(_code_point(node, rng)))
        elif isinstance(node, Seq):
            for item in node.items:
                grow(item)
        elif isinstance(node, Alt):
            options = [item for item in node.items if _shortest(item, lengths) < math.inf]
            if frugal:
                grow(min(options, key=lambda item: _shortest(item, lengths)))
            else:
                grow(rng.choice(options))
        elif isinstance(node, Repeat):
            if _shortest(node.item, lengths) == math.inf:
                return  # min is 0, or the whole repeat would be unproductive
            extra = 0 if frugal else rng.choice([0, 0, 1, 2, 3])
            count = node.min + extra
            if node.max is not None:
                count = min(count, node.max)
            for _ in range(count):
                grow(node.item)
        else:
            grow(rules.rules[node.name])

    grow(rules.rules[rules.root])
    return "".join(out)


def _code_point(node: Chars, rng: random.Random) -> int:
    lo, hi = rng.choice(node.ranges)
    return rng.choice([lo, hi, rng.randint(lo, hi), rng.randint(lo, min(hi, lo + 200))])


def edited(text: str, alphabet: str, rng: random.Random) -> str:
    """`text` with one character inserted, deleted or replaced."""
    i = rng.randint(0, len(text))
    how = rng.choice(["insert", "delete", "replace"]) if text else "insert"
    if how == "insert":
        return text[:i] + rng.choice(alphabet) + text[i:]
    i = min(i, len(text) - 1)
    if how == "delete":
        return text[:i] + text[i + 1 :]
    return text[:i] + rng.choice(alphabet) + text[i + 1 :]


def token_walk(g, vocab, draw_index, free_steps: int, limit: int = 300) -> str:
    """The text of a random token walk under grammar `g`: `free_steps` tokens drawn with
    `draw_index(n)` (an index below n), then the shortest completion; asserts that no step
    dead-ends and that every allowed token is accepted."""
    import grammar

    m = grammar.Matcher(grammar.compile(g, vocab))
    taken = []
    for step in range(free_steps + limit):
        allowed = m.next_token_mask().allowed_ids()
        assert allowed.size > 0, "dead end"
        token = m.shortest_completion_token() if step >= free_steps else int(allowed[draw_index(allowed.size)])
        assert m.accept_token(token)
        taken.append(token)
        if m.is_terminated():
            break
    return vocab.decode([t for t in taken if t not in vocab.eos_ids]).decode("utf-8")

"""Random sentences of an IR grammar, and small edits of them, for property tests; random
token walks; and the oracle a mask is checked against (every token, each stepped).

A sentence is drawn by a random derivation that turns to the shortest alternatives once it
has grown past a budget, so it always ends; edits (insert, delete, replace one character) give
strings just outside, or just inside, the language.
"""

from __future__ import annotations

import math
import random

from grammar._ir import Alt, Chars, Counted, Lit, Node, Repeat, Rules, Seq, liveness

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
    if isinstance(node, Counted):  # at least its shortest count, each character one at least
        return node.min
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
        elif isinstance(node, Counted):
            for piece in _counted_walk(node, rng, frugal):
                grow(piece)
        else:
            grow(rules.rules[node.name])

    grow(rules.rules[rules.root])
    return "".join(out)


def _counted_walk(node: Counted, rng: random.Random, frugal: bool) -> list[Node]:
    """The characters of a random string of a `Counted` language: random live moves, stopping
    at random where a string may end; frugal (or past the budget), the moves that bring a final
    state nearest."""
    live = liveness(node)
    distance = {q: 0 for q, f in enumerate(node.final) if f}
    while True:  # moves to a final state, counts aside
        grown = {q: 1 + min(distance[t] for _, t in row if t in distance)
                 for q, row in enumerate(node.moves) if q not in distance and any(t in distance for _, t in row)}
        if not grown:
            break
        distance.update(grown)
    q, k, out = 0, 0, []
    while True:
        ahead = live.live[live.after(k)] if k != node.max else 0
        options = [(piece, t) for piece, t in node.moves[q] if ahead >> t & 1]
        if live.exits(k) >> q & 1 and (not options or frugal or len(out) > BUDGET or rng.random() < 0.2):
            return out
        if frugal or len(out) > BUDGET:
            piece, q = min(options, key=lambda move: distance.get(move[1], math.inf))
        else:
            piece, q = rng.choice(options)
        out.append(piece)
        k = live.after(k)


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


def tokens_that_step(matcher, size: int) -> set[int]:
    """The ids below `size` that `matcher` accepts next, each tried on a fork: what its mask
    must hold."""
    return {token for token in range(size) if matcher.fork().accept_token(token)}

"""A free reasoning span before a grammar's sentence: `<think>…</think>`, then the constrained
part. Thinking models reason before they answer; held to a call from their first token, they
cannot.

The span's text is free but for one thing: it never holds the close text before its end, so
the constrained part begins exactly where the model's own parser would split the answer. The
span may carry a token budget, which the grammar cannot express (it knows characters, not
tokens): a runtime that decodes locally writes the close once the budget is spent.
"""

from __future__ import annotations

from ._grammar import SPAN_BLANKS, Grammar, ReasoningSpan, merge_rules
from ._ir import Node, alt, char_set, lit, negate, ref, repeat, seq

_MAX_BLANKS = 4  # between the close and the body


def after_reasoning(body: Grammar, span: ReasoningSpan = ReasoningSpan(), *, required: bool = True) -> Grammar:
    """A reasoning span (`span.open`, free text that does not hold `span.close`, `span.close`,
    up to four blanks), then a sentence of `body`. The result's `reasoning` is `span`, for the runtime to
    keep its budget.

    With `required=False` the span may be left out and the body begin at once. Where the body
    could itself begin with `span.open` (free text, say), an unclosed span then reads as the
    body: keep the span required for such bodies."""
    rules = merge_rules(("body-", body.rules))
    after = f"body-{body.root}"
    # A few blanks, not any number: after a close it was made to write, a model may go on
    # with blanks to the end of its budget.
    rules["reasoning-end"] = seq(repeat(char_set(SPAN_BLANKS), 0, _MAX_BLANKS), ref(after))
    rules.update(_text_until(span.close, "reasoning-", ref("reasoning-end")))
    thought = seq(lit(span.open), ref("reasoning-0"))
    rules["root"] = thought if required else alt(thought, ref(after))
    return Grammar(
        rules,
        "root",
        dropped=body.dropped,
        ignored=body.ignored,
        source=f"after_reasoning({body.source or 'grammar'})",
        reasoning=span,
    )


def _text_until(close: str, prefix: str, then: Node) -> dict[str, Node]:
    """Rules `{prefix}{k}` for text that ends at the first occurrence of `close`, then `then`:
    rule k is the state where the text's longest end that begins `close` has k characters (a
    string-matching automaton), so `close` ends the text exactly where it first appears."""
    alphabet = sorted(set(close))

    def state_after(k: int, c: str) -> int:
        text = close[:k] + c
        for start in range(len(text) + 1):
            if close.startswith(text[start:]):
                return len(text) - start
        raise AssertionError("the empty end always begins close")

    rules: dict[str, Node] = {}
    others = negate([(ord(c), ord(c)) for c in alphabet])
    for k in range(len(close)):
        branches = [seq(others, ref(f"{prefix}0"))]
        for c in alphabet:
            n = state_after(k, c)
            branches.append(seq(lit(c), then if n == len(close) else ref(f"{prefix}{n}")))
        rules[f"{prefix}{k}"] = alt(*branches)
    return rules

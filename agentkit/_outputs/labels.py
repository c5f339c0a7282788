"""Values a text writes after a label that names their field: `Subject: Charged twice for order
5521` for a field described as "the subject line of the message", `Email: ...` for
`customer_email`.

Where a text labels a value so, a held string field is held to what follows the label, up to a
mark that ends a clause, a bracket or the line's end (`candidates`). Held to the text's spans
alone, SmolLM2-135M took another sentence of a support ticket for its subject line in 8 of the
tune half's 10 ("Please fix this urgently.") and Qwen2.5-Coder-0.5B in 2 ("VAT on invoice
INV-2291" for "Wrong VAT on invoice INV-2291").
"""

from __future__ import annotations

import re

# A label: one to three words at the start of a line or a sentence, a colon, a blank, the value
# (to the end of its line, read ahead so that a label inside it is found too). Not a time ("at
# 10:45") nor a colon inside a value ("Kickoff: Project Łódź" follows a label of its own,
# "Reminder:").
_LABELLED = re.compile(r"(?:^|(?<=[.!?]\s)|(?<=\n))[ \t]*([^\W\d_][\w'-]*(?:[ \t]+[\w'-]+){0,2}):[ \t]+(?=(\S[^\n]*))",
                       re.MULTILINE)
_WORD = re.compile(r"[^\W\d_]+")
# Words of a description that name no field ("the subject line of the message").
_FILLER = frozenset({"a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or",
                     "its", "their", "this", "that", "is", "as", "be", "it", "line", "text", "value"})
_MOST_ENDS = 40  # where a labelled value may end; a longer value keeps its first ones


def labelled_values(text: str, name: str, description: str) -> list[str]:
    """The values `text` writes after a label naming field `name` (described by `description`):
    the label is the field's name ("Customer email:" for `customer_email`), its last word
    ("Email:"), or one word of its description ("Subject:" for "the subject line of the
    message")."""
    name_words = [w.casefold() for w in _WORD.findall(name.replace("_", " "))]
    described = {w.casefold() for w in _WORD.findall(description)} - _FILLER
    found = []
    for match in _LABELLED.finditer(text):
        label = [w.casefold() for w in _WORD.findall(match.group(1))]
        if label == name_words or label == name_words[-1:] or (len(label) == 1 and label[0] in described):
            found.append(match.group(2).rstrip())
    return found


def candidates(values: list[str]) -> list[str]:
    """Where each of `values` may end: at a mark that ends a clause or a sentence (with the mark
    and without it: "Where is my order?" and "Where is my order"), before a bracket, or at the
    end of its line; each once. Offered every word's end, a small model closed a labelled value
    after its first words ("Wrong VAT on invoice" for "Wrong VAT on invoice INV-2291",
    "Feedback" for "Feedback on new website")."""
    found: list[str] = []
    for value in values:
        ends = {m.end() for m in re.finditer(r"[,;:.!?]+(?=\s|$)", value)}
        ends |= {m.start() for m in re.finditer(r"\s[(\[]", value)} | {len(value)}
        for end in sorted(ends)[:_MOST_ENDS]:
            piece = value[:end].rstrip()
            found.extend([piece, piece.rstrip(".,;:!?")])
    return list(dict.fromkeys(piece for piece in found if piece))

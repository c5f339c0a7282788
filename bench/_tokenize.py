"""A greedy longest-match tokenizer over a `Vocabulary`, so every engine sees the same ids.

Engines here are byte-level, so any split of a document into tokens is a valid input; a real
tokenizer's split is not needed to measure them.
"""

from __future__ import annotations

from grammar import Vocabulary


class Tokenizer:
    def __init__(self, vocab: Vocabulary) -> None:
        special = set(vocab.special_ids)
        self.ids: dict[bytes, int] = {}
        for i, t in enumerate(vocab.tokens):
            if t and i not in special:
                self.ids.setdefault(t, i)
        self.longest = max(map(len, self.ids))

    def encode(self, data: bytes) -> list[int]:
        out = []
        pos = 0
        while pos < len(data):
            for size in range(min(self.longest, len(data) - pos), 0, -1):
                tid = self.ids.get(data[pos : pos + size])
                if tid is not None:
                    out.append(tid)
                    pos += size
                    break
            else:
                raise ValueError(f"no token spells byte {data[pos]:#x} at offset {pos}")
        return out

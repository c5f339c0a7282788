"""Token healing: a raw prompt that ends mid-word ("https://www.goo") is tokenized as the model
never saw it in training ("goo" where the whole text would be "google"), and the answer
suffers. The prompt is backed up over its last token, and the answer is held to start with that
token's bytes: the model chooses the token that spells them (or a longer one: "google"), and the
text handed back starts after them, so it still continues the caller's prompt.

Composed with a grammar: the grammar holds the text after the healed bytes, so a token that
spells them and more is allowed only where the grammar accepts the more.
"""

from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass

import numpy as np

from grammar import Matcher, Vocabulary


def heals(messages: object, heal: bool | None) -> bool:
    """Whether a request's prompt is healed: `heal=True` for a raw string prompt; by default
    (None) where a raw string prompt ends in a word character (likely mid-word) or a space
    (which tokenizers join to the next word: " York", so "New " leaves the model a token it
    rarely saw before a word)."""
    if heal is False or not isinstance(messages, str) or not messages:
        return False
    return heal is True or messages[-1].isalnum() or messages[-1] in "_ \t"


def back_up(prompt: list[int], vocabulary: Vocabulary) -> tuple[list[int], bytes]:
    """The prompt less its last token, and that token's bytes (the prompt unchanged and b""
    where there is nothing to heal: one token only, or a special one)."""
    if len(prompt) < 2:
        return prompt, b""
    data = vocabulary.token_bytes(prompt[-1])
    return (prompt[:-1], data) if data else (prompt, b"")


class Healer:
    """The bytes the answer must still open with, and which tokens may come next meanwhile."""

    def __init__(self, vocabulary: Vocabulary, left: bytes):
        self.vocabulary = vocabulary
        self.left = left

    def candidates(self, matcher: Matcher | None, remaining: int) -> np.ndarray:
        """The ids that keep the answer on the healed bytes: a token that spells a part of what
        is left, or all of it and more (the more accepted by `matcher`'s grammar); under a
        grammar, only those after which the document can still close within the `remaining`
        tokens. Never empty where the budget has room for the backed-up token and the grammar's
        shortest document: that token itself is always there."""
        left = self.left
        index = _index(self.vocabulary)
        ids = []
        for end in range(1, len(left) + 1):  # tokens that spell a part of it, or all of it
            # the grammar is untouched by these; a part leaves at least one more token to write
            spelled = index.by_bytes.get(left[:end])
            room = remaining - 1 if end == len(left) else remaining - 2
            if spelled and (matcher is None or _closes(matcher, room)):
                ids.extend(spelled)
        start = bisect.bisect_right(index.sorted_bytes, left)  # then those that spell it and more
        while start < len(index.sorted_bytes) and index.sorted_bytes[start].startswith(left):
            data, i = index.sorted_bytes[start], index.sorted_ids[start]
            start += 1
            if matcher is None:
                ids.append(i)
            elif matcher.accept_bytes(data[len(left):]):
                if _closes(matcher, remaining - 1):
                    ids.append(i)
                matcher.rollback(1)
        if not ids:  # no room left for the grammar: the backed-up bytes at least, as the prompt had them
            ids = [i for end in range(1, len(left) + 1) for i in index.by_bytes.get(left[:end], ())]
        return np.array(ids, dtype=np.int64)

    def take(self, token: int) -> bytes:
        """Write `token`: the bytes of it that are past the healed ones (the answer's text)."""
        data = self.vocabulary.token_bytes(token)
        if self.left.startswith(data):
            self.left = self.left[len(data):]
            return b""
        rest = data[len(self.left):]
        self.left = b""
        return rest

    @property
    def done(self) -> bool:
        return not self.left


@dataclass(frozen=True)
class _Index:
    """A vocabulary's text tokens by their bytes: sorted (those that start with some bytes are
    one run) and grouped (the ids that spell exactly some bytes)."""

    sorted_bytes: list[bytes]
    sorted_ids: list[int]
    by_bytes: dict[bytes, list[int]]


@functools.lru_cache(maxsize=8)
def _index(vocabulary: Vocabulary) -> _Index:
    pairs = sorted((data, i) for i, data in enumerate(vocabulary.tokens) if data and i not in vocabulary.special_ids)
    by_bytes: dict[bytes, list[int]] = {}
    for data, i in pairs:
        by_bytes.setdefault(data, []).append(i)
    return _Index([d for d, _ in pairs], [i for _, i in pairs], by_bytes)


def _closes(matcher: Matcher, tokens: int) -> bool:
    """Whether the document can be whole within `tokens` more tokens from where `matcher` is."""
    return tokens >= 0 and (matcher.is_complete() or matcher.can_complete_within(tokens))

"""The token budget of a grammar's reasoning span (`grammar.after_reasoning`), kept while
decoding: the grammar bounds what the span may say, not how long it runs, so once the model
has spent the span's tokens the decoder writes the close itself and the constrained part
begins."""

from __future__ import annotations

from grammar import ReasoningSpan


class SpanBudget:
    """Where one generation stands with its reasoning span, read from the text as it is
    decoded: before it (the text so far could still be its open), inside it (counting tokens),
    or past it (closed, or never opened)."""

    def __init__(self, span: ReasoningSpan):
        assert span.max_tokens is not None
        self.span = span
        self._lead = ""  # the text so far, while it could still be the open
        self._inside = False
        self._past = False
        self._tail = ""  # the span's last characters: enough to see the close arrive
        self.tokens = 0  # tokens decoded inside the span

    @property
    def spent(self) -> bool:
        """Whether the span is open and its budget used: the close is the decoder's to write."""
        return self._inside and self.tokens >= self.span.max_tokens

    def close_left(self) -> bytes:
        """The part of the close the text does not end with yet."""
        close = self.span.close
        for k in range(len(close) - 1, 0, -1):
            if self._tail.endswith(close[:k]):
                return close[k:].encode()
        return close.encode()

    def read(self, piece: str) -> None:
        """Take the next decoded text (one token's, or none while a character is incomplete)."""
        if self._past:
            return
        if self._inside:
            self.tokens += 1
            self._reason(piece)
            return
        self._lead += piece
        open_ = self.span.open
        if self._lead.startswith(open_):
            self._inside = True
            self._reason(self._lead[len(open_):])  # what the opening token wrote past the open
        elif not open_.startswith(self._lead):
            self._past = True

    def _reason(self, text: str) -> None:
        """Text inside the span: keep its last characters, and leave the span at the close."""
        seen = self._tail + text
        if self.span.close in seen:
            self._inside, self._past = False, True
        self._tail = seen[-len(self.span.close):]

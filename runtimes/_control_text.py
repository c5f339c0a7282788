"""Control-token text that comes in through messages and tools, kept as plain text.

A chat template writes its own markup (`<|im_start|>`, `<|im_end|>`, ...) as the text of control
tokens, which the tokenizer must read as those tokens. Message contents, tool results and tool
listings come from users, tools and MCP servers; the same text inside them must stay text, or a
tool result holding `<|im_end|>\\n<|im_start|>system\\n...` would close its turn and open a
forged system turn. So before rendering, each control token's text found anywhere in the
messages or tools (a string value; a dict key at any depth, as a schema's property names are
shown as text; any other object's text) is swapped for a marker that no input holds, and the
rendered prompt is cut at the markers: the runs between them are the template's text (control
tokens parsed), each marker's run is the control text as it was written, to be read as plain
text.

Ordinary inputs hold no control text: their prompt is rendered once and read whole, exactly as
before. A template that rewrites contents keeps working (the markers are not whitespace, so
trimming leaves them alone); one whose rewriting would turn them into other text is refused.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ._errors import RuntimeFailure

_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use characters: no tokenizer joins them to their neighbours


@dataclass(frozen=True)
class PromptPiece:
    """A run of a rendered prompt: `markup` where the template wrote it (control-token text in
    it is read as control tokens), else a control token's text from an input, read as text."""

    text: str
    markup: bool


class ControlTexts:
    """The texts of a vocabulary's control tokens, found in the strings of messages and tools."""

    def __init__(self, texts: Iterable[str]):
        self.texts = frozenset(text for text in texts if text)
        longest_first = sorted(self.texts, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, longest_first))) if longest_first else None

    def split(self, text: str) -> list[str]:
        """`text` cut so that each control text it holds is a part of its own."""
        if self._pattern is None:
            return [text]
        return [part for part in re.split(f"({self._pattern.pattern})", text) if part]

    def render_pieces(
        self,
        render: Callable[[Any, Any], str],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> list[PromptPiece]:
        """`render(messages, tools)` cut into markup and the control text the inputs hold.

        Raises `RuntimeFailure` where the template changes that control text (so that it could
        not be told apart from the template's own)."""
        if self._pattern is None:
            return [PromptPiece(render(messages, tools), True)]
        nonce = _OPEN + secrets.token_hex(8)
        found: list[str] = []

        def marker(match: re.Match[str]) -> str:
            found.append(match.group())
            return f"{nonce}{len(found) - 1}{_CLOSE}"

        def swap(value: Any) -> Any:
            if isinstance(value, str):
                return self._pattern.sub(marker, value)  # type: ignore[union-attr]
            if isinstance(value, Mapping):  # keys too: a property name is shown as text
                return {swap(key): swap(item) for key, item in value.items()}
            if isinstance(value, (list, tuple)):
                return [swap(item) for item in value]
            if isinstance(value, (int, float, type(None))):
                return value
            shown = str(value)  # any other object is shown as its text
            return swap(shown) if self._pattern.search(shown) else value  # type: ignore[union-attr]

        marked_messages, marked_tools = swap(messages), swap(tools)
        if not found:
            return [PromptPiece(render(messages, tools), True)]
        marked = render(marked_messages, marked_tools)
        pieces: list[PromptPiece] = []
        parts = re.split(re.escape(nonce) + r"(\d+)" + _CLOSE, marked)
        for i, part in enumerate(parts):
            if i % 2 == 0:
                if part:
                    pieces.append(PromptPiece(part, True))
            else:
                pieces.append(PromptPiece(found[int(part)], False))
        if "".join(p.text for p in pieces) != render(messages, tools):
            raise RuntimeFailure(
                f"the chat template changes the control-token text {sorted(set(found))!r} that a "
                "message or tool holds, so it cannot be kept apart from the template's own markup; "
                "leave that text out of the input"
            )
        return pieces

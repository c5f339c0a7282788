"""The conversation's own text, which grounded tool arguments are held to (`Agent(
grounded_arguments=...)`): the system prompt, the user's messages and the tools' results so far.

Not the tool listing, nor anything else the agent adds to the system message (a docstring's
example value would get in through it), nor the model's own earlier turns (its arguments would
then be held to what it said, not to what it was told)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._messages import Message

_ROLES = ("system", "user", "tool")


def conversation_text(messages: Sequence[Message], added: Sequence[str] = ()) -> str:
    """The system, user and tool messages' texts, one after another; `added`: the texts the
    agent put in the system message (its tool listing, the output's instructions), left out."""
    parts = []
    for message in messages:
        if message.get("role") not in _ROLES:
            continue
        text = _text(message.get("content"))
        if message.get("role") == "system":
            for piece in added:
                text = text.replace(piece, "") if piece else text
        if text:
            parts.append(text)
    return "\n".join(parts)


def _text(content: Any) -> str:
    """A message's text: its content, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""

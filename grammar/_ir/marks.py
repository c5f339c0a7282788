"""Marks a front end sets in a rule's name for the stages after it. No grammar text can spell
them (a GBNF name is letters, digits and dashes, and the other front ends name their own rules),
so a mark is set only by the compiler that built the rule and knows its language."""

from __future__ import annotations

_KEY_TEXT = ":key-text"


def key_text(name: str) -> str:
    """`name` marked as a key text's rule: a JSON string text, quotes included, of every string
    except some names (`excluding_text`), with no call inside. From each character boundary
    inside its quotes, every text without a quote byte goes on exactly as it would from the
    string's inside once the key has left the names: whatever it reads there, some key can still
    follow (a name's prefix, or a key beside every name); only a closing quote depends on where
    the key stands. The masks rely on that to read a key's prefix as the string's inside."""
    return name + _KEY_TEXT


def is_key_text(name: str) -> bool:
    """Whether `name` was marked by `key_text` (a prefix added to it, as merged grammars add,
    keeps the mark)."""
    return name.endswith(_KEY_TEXT)

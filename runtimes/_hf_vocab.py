"""A `Vocabulary` from a Hugging Face `tokenizer.json` (what MLC-LLM model folders carry).

Byte-level BPE pieces (GPT-2's printable stand-ins for bytes) are mapped back to bytes;
SentencePiece-style pieces turn `▁` into a space and `<0xNN>` into that byte. Added tokens
marked special are never text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from os import PathLike
from typing import Any

from grammar import Vocabulary


def _byte_level_decoder() -> dict[str, int]:
    """GPT-2's bytes_to_unicode, inverted: printable stand-in character -> byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {chr(b): b for b in printable}
    shifted = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + shifted)] = b
            shifted += 1
    return table


_BYTE_LEVEL = _byte_level_decoder()


def _uses_byte_level(spec: dict[str, Any]) -> bool:
    def types(node: Any) -> Iterable[str]:
        if isinstance(node, dict):
            if "type" in node:
                yield node["type"]
            for value in node.values():
                yield from types(value)
        elif isinstance(node, list):
            for value in node:
                yield from types(value)

    return "ByteLevel" in set(types(spec.get("decoder"))) | set(types(spec.get("pre_tokenizer")))


def _piece_bytes(piece: str, byte_level: bool) -> bytes:
    if byte_level:
        try:
            return bytes(_BYTE_LEVEL[c] for c in piece)
        except KeyError:  # not a byte-level piece (an added token written as plain text)
            return piece.encode("utf-8")
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        return bytes([int(piece[3:5], 16)])
    return piece.replace("\u2581", " ").encode("utf-8")


def vocabulary_from_tokenizer_json(
    path: str | PathLike[str], *, eos_ids: Iterable[int], size: int | None = None
) -> Vocabulary:
    """The vocabulary of a `tokenizer.json`; `size` pads it to the model's logits width."""
    with open(path, encoding="utf-8") as file:
        spec = json.load(file)
    vocab = (spec.get("model") or {}).get("vocab") or {}
    if isinstance(vocab, dict):  # BPE / WordPiece: piece -> id
        pieces = {int(i): piece for piece, i in vocab.items()}
    else:  # Unigram: [piece, score] in id order
        pieces = {i: entry[0] for i, entry in enumerate(vocab)}
    byte_level = _uses_byte_level(spec)
    special: set[int] = set()
    added: dict[int, bytes] = {}
    for entry in spec.get("added_tokens") or ():
        if entry.get("special"):
            special.add(int(entry["id"]))
        else:
            added[int(entry["id"])] = entry["content"].encode("utf-8")
    n = max([*pieces, *added, *special], default=-1) + 1
    tokens = [b""] * n
    for i, piece in pieces.items():
        tokens[i] = _piece_bytes(piece, byte_level)
    for i, text in added.items():
        tokens[i] = text
    return Vocabulary.from_tokens(tokens, eos_ids=eos_ids, special_ids=special, size=size)


def special_token_texts(path: str | PathLike[str]) -> dict[int, str]:
    """The added tokens of a `tokenizer.json` marked special: id -> text."""
    with open(path, encoding="utf-8") as file:
        spec = json.load(file)
    return {int(entry["id"]): entry["content"] for entry in spec.get("added_tokens") or () if entry.get("special")}

"""The vocabulary's non-ASCII characters, token by token: what lets a state that loops on some
of them (a pattern's `\\w` or `\\S`, which hold most letters of every script but not all of
them) keep the tokens made of those characters out of its walk, as a state that loops on every
character keeps them all.

A big vocabulary holds tens of thousands of tokens of non-ASCII text (Qwen2.5: 46,000 of
152,000); walking each of them byte by byte through the states of its characters, at every such
state met, costs more than all the rest of the state's mask."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PAST_END = np.iinfo(np.int32).max  # an offset past every token's end


@dataclass(frozen=True)
class Characters:
    """Every whole non-ASCII character of the short tokens, where each stands."""

    code_points: np.ndarray  # int32, sorted: the distinct characters ...
    encoded: np.ndarray  # (n, 4) uint8: ... their UTF-8 bytes ...
    sizes: np.ndarray  # int8: ... and how many of those there are
    positions: np.ndarray  # int32 per occurrence: the sorted position of the token ...
    offsets: np.ndarray  # int32: ... the byte the character starts at ...
    which: np.ndarray  # int32: ... and the character (an index into `code_points`)

    @classmethod
    def of(cls, sorted_bytes: tuple[bytes, ...], whole_prefix: np.ndarray, ascii_only: np.ndarray) -> "Characters":
        """From the sorted short tokens, the length of each one's leading whole UTF-8 text, and
        which are ASCII only."""
        positions: list[int] = []
        offsets: list[int] = []
        points: list[int] = []
        for p in np.flatnonzero(~ascii_only).tolist():
            offset = 0
            for ch in sorted_bytes[p][: whole_prefix[p]].decode("utf-8"):
                cp = ord(ch)
                if cp >= 0x80:
                    positions.append(p)
                    offsets.append(offset)
                    points.append(cp)
                offset += 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
        code_points, which = np.unique(np.array(points, np.int32), return_inverse=True)
        encoded = np.zeros((code_points.size, 4), np.uint8)
        sizes = np.zeros(code_points.size, np.int8)
        for k, cp in enumerate(code_points.tolist()):
            data = chr(cp).encode("utf-8")
            encoded[k, : len(data)] = np.frombuffer(data, np.uint8)
            sizes[k] = len(data)
        return cls(code_points, encoded, sizes, np.array(positions, np.int32), np.array(offsets, np.int32),
                   which.astype(np.int32))

    def first_outside(self, looping: np.ndarray, size: int) -> np.ndarray:
        """Per sorted position (of `size`): the byte offset of the token's first non-ASCII
        character that `looping` (a bool per character) leaves out, or past every token's end."""
        first = np.full(size, PAST_END, np.int32)
        bad = ~looping[self.which]
        np.minimum.at(first, self.positions[bad], self.offsets[bad])
        return first

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.code_points, self.encoded, self.sizes, self.positions,
                                          self.offsets, self.which)))

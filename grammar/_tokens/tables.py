"""Per-vocabulary token tables, prepared once and shared by every grammar compiled for it.

Like XGrammar's TokenizerInfo: the ordinary (non-special) tokens sorted by their bytes (so the
tokens that share a prefix are one contiguous run, found by bisection), a position-major byte
matrix for vectorised walks, and per-token byte-set summaries that let a state answer "every
token made only of bytes that loop back here" with one vectorised test.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from collections import OrderedDict

import numpy as np

from .characters import PAST_END, Characters

# Tokens longer than this are walked one by one (there are few of them); the byte matrix stays
# small.
MATRIX_WIDTH = 48
NEVER = np.iinfo(np.int16).max  # a need no room meets (no token begins as many characters)

# Vocabularies compare by content, so equal ones share tables; only a few are ever alive.
_CACHE: "OrderedDict[object, TokenTables]" = OrderedDict()
_CACHE_SIZE = 8
_PROFILES = 32  # character profiles a vocabulary keeps (the least recently used go first)
_BROAD_CLASS = 32  # ASCII bytes from which a class's profile first sets aside the tokens inside it
_PLANS = 16  # entry plans a vocabulary keeps (each up to three positions per token), likewise
_NO_IDS = np.zeros(0, np.int32)
_LOCK = threading.Lock()


@dataclass(frozen=True)
class LoopClass:
    """The tokens that do not certainly loop on a state: their sorted positions (the only ones a
    walk must still visit, each from its first byte that may not loop), the long tokens among
    them with their first bytes, and all their sorted ids (special and padding ids included);
    and the ids of those that do."""

    other_positions: np.ndarray
    other_skip: np.ndarray  # per other position: its leading bytes that certainly loop
    other_long_ids: np.ndarray
    other_long_first: np.ndarray
    other_ids: np.ndarray
    looping_ids: np.ndarray


@dataclass(frozen=True)
class CharacterProfile:
    """What every token does from the start of a character, where a repeat of characters is
    read (a bounded string's): it ends inside the repeat, having begun `need` characters, or it
    leaves the repeat at a character boundary after `count` whole ones, at byte `offset`, to
    go on with what follows; or it is dead. Whatever the count reached, so one walk of the
    vocabulary answers every count: a count's mask is the tokens whose `needs` fit the room
    left, plus the leavers whose `count` does."""

    first: np.ndarray  # (256,) bool: the bytes a character may begin with
    # int16 per id: the characters a token that ends inside begins (a last one begun counts),
    # NEVER for every other id (leavers, dead, special, padding)
    needs: np.ndarray
    widest: int  # the most characters a token that ends inside begins
    leave_positions: np.ndarray  # int32 sorted positions of the short tokens that leave ...
    leave_offsets: np.ndarray  # ... the offset of the byte each goes on with after the repeat
    leave_bytes: np.ndarray  # ... that byte
    leave_counts: np.ndarray  # ... and the whole characters before it
    long_leavers: tuple[tuple[int, int, int], ...]  # (id, offset, count) of the long ones that leave
    reach: int  # the most whole characters any token reads inside, or before it leaves


@dataclass(frozen=True)
class EntryPlan:
    """What every token does from a state that leads along a short chain of states into a loop
    (a string's first character, a pattern's first few), by the bytes each state reads: which
    end along the chain, which go through into the loop and stay there, which go through and
    must be walked on from the loop state, and which must be walked from the start."""

    short: np.ndarray  # int32 sorted positions of the tokens that end along the chain ...
    short_step: np.ndarray  # ... and the chain state each ends in (1 is the state after the first)
    stay: np.ndarray  # int32 sorted positions of the tokens that end in the loop, looping
    go_on: np.ndarray  # bool per position of the loop class's others: walked on from the loop
    rest: np.ndarray  # int32 sorted positions walked from the chain's start


class TokenTables:
    def __init__(self, vocab) -> None:
        self.size: int = int(vocab.size)
        special = set(vocab.special_ids) | set(vocab.eos_ids)
        tokens = vocab.tokens
        # Tuples of untracked objects: the cycle collector stops visiting them, so these tables
        # add nothing to each full collection of the process.
        self.token_bytes: tuple[bytes | None, ...] = tuple(
            None if (i in special or not tokens[i]) else tokens[i] for i in range(len(tokens))
        ) + (None,) * (self.size - len(tokens))
        self.eos_ids = np.array(sorted(int(i) for i in vocab.eos_ids if i < self.size), np.int32)
        self.longest = max((len(b) for b in self.token_bytes if b is not None), default=0)  # bytes

        ordinary = [i for i, b in enumerate(self.token_bytes) if b is not None]
        short = [i for i in ordinary if len(self.token_bytes[i]) <= MATRIX_WIDTH]
        self.long_ids = np.array(
            [i for i in ordinary if len(self.token_bytes[i]) > MATRIX_WIDTH], np.int32
        )
        self.long_first = np.array([self.token_bytes[i][0] for i in self.long_ids.tolist()], np.uint8)
        self._long_by_first = {
            b: self.long_ids[self.long_first == b] for b in set(self.long_first.tolist())
        }
        short.sort(key=lambda i: self.token_bytes[i])
        n = len(short)
        self.order = np.array(short, dtype=np.int32)
        self.sorted_bytes: tuple[bytes, ...] = tuple([self.token_bytes[i] for i in short])  # for bisection
        self.lens = np.array([len(self.token_bytes[i]) for i in short], dtype=np.int32)
        width = int(self.lens.max()) if n else 1
        flat = b"".join(self.token_bytes[i].ljust(width, b"\0") for i in short)
        # Position-major: column p holds byte p of every token, so a gather per position is
        # contiguous.
        self.matrix = np.ascontiguousarray(
            np.frombuffer(flat, dtype=np.uint8).reshape(n, width).T
        ) if n else np.zeros((1, 0), np.uint8)
        first = self.matrix[0] if n else np.zeros(0, np.uint8)
        # The tokens whose first byte is b lie at sorted positions first_start[b] up to
        # first_start[b + 1]: a bisection for a prefix need not look outside them.
        self.first_start: list[int] = np.searchsorted(first, np.arange(257), side="left").tolist()
        # Bytes some token spells alone: a completion made of them can always be written.
        self.single_bytes = np.zeros(256, dtype=bool)
        self.single_bytes[first[self.lens == 1]] = True

        # Byte sets: which ASCII bytes a token holds (two 64-bit words), and whether its
        # non-ASCII bytes form whole UTF-8 characters.
        bits = np.zeros((n, 2), dtype=np.uint64)
        valid = np.zeros(n, dtype=bool)
        any_high = np.zeros(n, dtype=bool)
        for p in range(width):
            col = self.matrix[p]
            live = self.lens > p
            ascii_ = live & (col < 128)
            word = (col >> 6).astype(np.intp)
            shift = (col & 63).astype(np.uint64)
            for w in (0, 1):
                sel = ascii_ & (word == w)
                bits[sel, w] |= np.left_shift(np.uint64(1), shift[sel])
            any_high |= live & (col >= 128)
        self.ascii_bits = bits
        # How many leading bytes of each token are whole UTF-8 characters.
        self.utf8_prefix = self.lens.copy()
        for k, i in enumerate(short):
            if any_high[k]:
                try:
                    self.token_bytes[i].decode("utf-8")
                    valid[k] = True
                except UnicodeDecodeError as e:
                    valid[k] = False
                    self.utf8_prefix[k] = e.start
            else:
                valid[k] = True
        self.utf8_whole = valid
        self.all_ascii = ~any_high
        # The same summaries for the long tokens (runs of spaces, dashes, ...), which loop on
        # string states as often as short ones do.
        self.long_ascii_bits = np.zeros((self.long_ids.size, 2), dtype=np.uint64)
        self.long_utf8_whole = np.zeros(self.long_ids.size, dtype=bool)
        self.long_all_ascii = np.zeros(self.long_ids.size, dtype=bool)
        for k, i in enumerate(self.long_ids.tolist()):
            data = self.token_bytes[i]
            mask = 0
            for b in set(data):
                if b < 128:
                    mask |= 1 << b
            self.long_ascii_bits[k] = (mask & (2**64 - 1), mask >> 64)
            self.long_all_ascii[k] = data.isascii()
            try:
                data.decode("utf-8")
                self.long_utf8_whole[k] = True
            except UnicodeDecodeError:
                pass
        self._loop_cache: dict[tuple[bytes, bool | bytes], LoopClass] = {}
        self._characters: Characters | None = None  # see `characters`
        self._profiles: OrderedDict[bytes, CharacterProfile] = OrderedDict()
        self._plans: OrderedDict[tuple, EntryPlan] = OrderedDict()
        # Grammars compiled on several threads share these tables: the least-recently-used
        # bookkeeping of profiles and plans is done under this lock (their making is not).
        self._lru_lock = threading.Lock()

    def character_profile(self, table: np.ndarray) -> CharacterProfile:
        """The profile of the character language `table` describes: one row of 256 successors
        per state of its byte automaton, state 0 a character's start, -1 dead, -2 one whole
        character read (the language must be a prefix code: nothing goes on from there).
        Cached by the table: every string of every grammar reads the same few."""
        return self._kept(self._profiles, _PROFILES, table.tobytes(), lambda: self._character_profile(table))

    def _character_profile(self, table: np.ndarray) -> CharacterProfile:
        first = table[0] != -1
        n = self.order.size
        count = np.zeros(n, dtype=np.int32)
        cur = np.zeros(n, dtype=np.int32)  # the state of each token's character in progress
        dead = np.zeros(n, dtype=bool)
        left = np.full(n, -1, dtype=np.int64)  # offset where a token leaves the repeat
        if table.shape[0] == 1 and (table[0][first] == -2).all():
            # Each byte of the class a character (a chain's): a token stays until its first
            # byte outside the class, and every byte it read before is a character.
            self._leaving_offsets(first, left)
            count[:] = np.where(left >= 0, left, self.lens)
            return self._profile_of(table, first, count, cur, dead, left)
        # Tokens made only of ASCII bytes that are each a whole character read all their
        # bytes as characters, unwalked (most of a string's tokens).
        active = self._outside_class(table[0] == -2)
        count[:] = self.lens
        count[active] = 0
        for p in range(self.matrix.shape[0]):
            active = active[self.lens[active] > p]
            if not active.size:
                break
            b = self.matrix[p, active]
            s = cur[active]
            leaving = (s == 0) & ~first[b]
            left[active[leaving]] = p
            stay = ~leaving
            active, b, s = active[stay], b[stay], s[stay]
            nxt = table[s, b]
            gone = nxt == -1
            dead[active[gone]] = True
            live = ~gone
            active, nxt = active[live], nxt[live]
            whole = nxt == -2
            count[active[whole]] += 1
            nxt[whole] = 0
            cur[active] = nxt
        return self._profile_of(table, first, count, cur, dead, left)

    def _leaving_offsets(self, first: np.ndarray, left: np.ndarray) -> None:
        """Write into `left` each token's offset of its first byte outside `first` (the
        token's order), where it has one. Of a broad class (`_BROAD_CLASS` ASCII bytes or
        more), the tokens whose byte set lies inside it have none and are not walked: most
        of a string's or a name pattern's tokens."""
        active = self._outside_class(first)
        for p in range(self.matrix.shape[0]):
            active = active[self.lens[active] > p]
            if not active.size:
                return
            leaving = ~first[self.matrix[p, active]]
            left[active[leaving]] = p
            active = active[~leaving]

    def _outside_class(self, byte_class: np.ndarray) -> np.ndarray:
        """The order positions of the tokens with a byte outside the ASCII bytes of
        `byte_class`: every token where it holds fewer than `_BROAD_CLASS` of them (then
        nearly every token has one, and the check would cost more than it saves)."""
        ascii_class = np.flatnonzero(byte_class[:128])
        if ascii_class.size < _BROAD_CLASS:
            return np.arange(self.order.size)
        inside = self._loops(self.ascii_bits, self.utf8_whole, self.all_ascii, ascii_bitset(ascii_class), False)
        return np.flatnonzero(~inside)

    def _profile_of(self, table: np.ndarray, first: np.ndarray, count: np.ndarray, cur: np.ndarray,
                    dead: np.ndarray, left: np.ndarray) -> CharacterProfile:
        """The profile from each short token's walk (characters read, the state of one in
        progress, dead, the offset where it leaves), the long tokens walked one by one."""
        inside = ~dead & (left < 0)
        need_by_id = np.full(self.size, -1, dtype=np.int64)
        need_by_id[self.order[inside]] = count[inside] + (cur[inside] != 0)
        leave = np.flatnonzero(left >= 0)
        long_leavers = []
        # Bytes that are a whole character from a character's start: a long token's run of
        # them (spaces, dashes) is read at once.
        singles = bytes(np.flatnonzero(table[0] == -2).tolist())
        for i in self.long_ids.tolist():
            data = self.token_bytes[i]
            run = len(data) - len(data.lstrip(singles))
            state, whole, offset = 0, run, -1
            for q in range(run, len(data)):
                byte = data[q]
                if state == 0 and not first[byte]:
                    offset = q
                    break
                state = int(table[state, byte])
                if state == -1:
                    break
                if state == -2:
                    whole, state = whole + 1, 0
            if offset >= 0:
                long_leavers.append((i, offset, whole))
            elif state != -1:
                need_by_id[i] = whole + (state != 0)
        widest = int(need_by_id.max(initial=0))
        need_by_id[need_by_id < 0] = NEVER
        leave_counts = count[leave]
        reach = max(widest, int(leave_counts.max(initial=0)), *[whole for _, _, whole in long_leavers], 0)
        return CharacterProfile(
            first,
            need_by_id.astype(np.int16),
            widest,
            leave.astype(np.int32),
            left[leave].astype(np.uint8),  # (short tokens: within the matrix's width)
            self.matrix[left[leave], leave],
            leave_counts.astype(np.int16),
            tuple(long_leavers),
            reach,
        )

    def long_starting(self, byte: int) -> np.ndarray:
        """The long tokens (past the byte matrix) whose first byte is `byte`."""
        return self._long_by_first.get(byte, _NO_IDS)

    def long_starting_in(self, spans: list[tuple[int, int]]) -> np.ndarray:
        """The long tokens whose first byte lies in one of the half-open byte ranges `spans`."""
        found = [ids for b0, b1 in spans for b in range(b0, b1) if (ids := self._long_by_first.get(b)) is not None]
        if len(found) > 1:
            return np.concatenate(found)
        return found[0] if found else _NO_IDS

    def loop_class(self, ascii_loop: np.ndarray, utf8_loops: bool | np.ndarray) -> "LoopClass":
        """The tokens outside those that certainly walk a state back to itself, given which
        bytes loop there.

        `ascii_loop` is the (2,) uint64 set of ASCII bytes that loop on the state; with
        `utf8_loops` True, every whole non-ASCII character loops too; as a bool per character
        of `characters()`, those it picks do. Cached: the string states of every grammar share
        a handful of such classes.
        """
        some = isinstance(utf8_loops, np.ndarray)
        key = (ascii_loop.tobytes(), np.packbits(utf8_loops).tobytes() if some else utf8_loops)
        hit = self._loop_cache.get(key)
        if hit is None:
            if some:
                # Whole UTF-8, and no character outside the picked ones.
                first_out = self.characters().first_outside(utf8_loops, len(self.sorted_bytes))
                ok = self._loops(self.ascii_bits, self.utf8_whole & (first_out == PAST_END), self.all_ascii,
                                 ascii_loop, True)
                long_ok = self._loops(self.long_ascii_bits, self._long_within(utf8_loops), self.long_all_ascii,
                                      ascii_loop, True)
            else:
                first_out = None
                ok = self._loops(self.ascii_bits, self.utf8_whole, self.all_ascii, ascii_loop, utf8_loops)
                long_ok = self._loops(
                    self.long_ascii_bits, self.long_utf8_whole, self.long_all_ascii, ascii_loop, utf8_loops
                )
            by_id = np.zeros(self.size, dtype=bool)
            by_id[self.order[ok]] = True
            by_id[self.long_ids[long_ok]] = True
            others = np.flatnonzero(~ok)
            skip = self._looping_prefix(others, ascii_loop, some or utf8_loops)
            if first_out is not None:
                skip = np.minimum(skip, first_out[others])
            hit = LoopClass(
                others,
                skip,
                self.long_ids[~long_ok],
                self.long_first[~long_ok],
                np.flatnonzero(~by_id).astype(np.int32),
                np.flatnonzero(by_id).astype(np.int32),
            )
            self._loop_cache[key] = hit
        return hit

    def characters(self) -> Characters:
        """The short tokens' non-ASCII characters (see `Characters`), found on first use."""
        if self._characters is None:
            self._characters = Characters.of(self.sorted_bytes, self.utf8_prefix, self.all_ascii)
        return self._characters

    def _long_within(self, looping: np.ndarray) -> np.ndarray:
        """Per long token: whether it is whole UTF-8 and each of its non-ASCII characters is
        one `looping` picks among `characters()` (one none of the short tokens holds is not)."""
        points = self.characters().code_points
        within = np.zeros(self.long_ids.size, dtype=bool)
        for k, tid in enumerate(self.long_ids.tolist()):
            if not self.long_utf8_whole[k]:
                continue
            high = [ord(ch) for ch in self.token_bytes[tid].decode("utf-8") if ord(ch) >= 0x80]
            at = np.searchsorted(points, high)
            within[k] = all(i < points.size and points[i] == cp and looping[i] for i, cp in zip(at.tolist(), high))
        return within

    def entry_plan(self, links: list[np.ndarray], loop: LoopClass, loops_ascii: np.ndarray, utf8_loops: bool,
                   utf8_through: bool, first: np.ndarray) -> EntryPlan:
        """The plan of a chain into a loop: `links[j]`, the (256,) bytes that lead the chain's
        state j to the next (the last to the loop state); `loop` the loop state's class, from
        its looping ASCII bytes `loops_ascii` (128,) and `utf8_loops`; with `utf8_through`, a
        token whose first character is whole and non-ASCII goes through (a one-state chain
        whose non-ASCII characters lead into the loop); `first`, the (256,) bytes the chain's
        start reads. Cached (least recently used out): every string start of every grammar
        shares a few."""
        # (`loop` by identity: the loop classes are kept for good, and one that loops on some
        # non-ASCII characters differs from one on none with the same other arguments)
        key = (b"".join(np.packbits(link).tobytes() for link in links), np.packbits(loops_ascii).tobytes(),
               utf8_loops, utf8_through, np.packbits(first).tobytes(), id(loop))
        make = lambda: self._entry_plan(links, loop, loops_ascii, utf8_through, first)  # noqa: E731
        return self._kept(self._plans, _PLANS, key, make)

    def _kept(self, cache: OrderedDict, size: int, key: object, make):
        """`cache[key]`, made by `make()` on a miss; the least recently used go past `size`."""
        with self._lru_lock:
            found = cache.get(key)
            if found is not None:
                cache.move_to_end(key)
                return found
        found = make()
        with self._lru_lock:
            cache[key] = found
            while len(cache) > size:
                cache.popitem(last=False)
        return found

    def _entry_plan(self, links: list[np.ndarray], loop: LoopClass, loops_ascii: np.ndarray, utf8_through: bool,
                    first: np.ndarray) -> EntryPlan:
        n = len(self.sorted_bytes)
        lens = self.lens[:n]
        steps = len(links)
        # Along the chain: tokens whose every byte is a link end where they stop; those longer
        # than the chain whose first `steps` bytes are links that also loop in the loop state go
        # through it.
        spelled = np.ones(n, dtype=bool)
        through = np.ones(n, dtype=bool)
        short_step = np.zeros(n, dtype=np.int8)
        for j, link in enumerate(links):
            col = self.matrix[j, :n]
            live = lens > j
            spelled &= ~live | link[col]
            short_step[spelled & (lens == j + 1)] = j + 1
            via = np.zeros(256, dtype=bool)
            via[:128] = link[:128] & loops_ascii
            through &= live & via[col]
        through &= lens > steps
        other = np.zeros(n, dtype=bool)
        other[loop.other_positions] = True
        if utf8_through:
            # A token with a non-ASCII first byte goes through if its first character is whole
            # and loops (a looping token, or one whose looping prefix holds that character).
            skip_ok = np.zeros(n, dtype=bool)
            skip_ok[loop.other_positions] = loop.other_skip > 0
            through |= (self.matrix[0, :n] >= 128) & (~other | skip_ok)
        short = np.flatnonzero(short_step).astype(np.int32)
        rest = np.flatnonzero(first[self.matrix[0, :n]] & ~through & (short_step == 0)).astype(np.int32)
        stay = np.flatnonzero(through & ~other).astype(np.int32)
        return EntryPlan(short, short_step[short], stay, through[loop.other_positions], rest)

    def _looping_prefix(self, positions: np.ndarray, ascii_loop: np.ndarray, utf8_loops: bool) -> np.ndarray:
        """For the tokens at `positions`: how many leading bytes are looping ASCII bytes or (with
        `utf8_loops`) whole non-ASCII characters, which leave a looping state where it was."""
        loops = np.array([bool(int(ascii_loop[b >> 6]) >> (b & 63) & 1) for b in range(128)] + [False] * 128)
        cols = self.matrix[:, positions]
        lens = self.lens[positions]
        inside = np.arange(cols.shape[0])[:, None] < lens
        breaks = inside & (cols < 128) & ~loops[cols]
        if not utf8_loops:
            breaks |= inside & (cols >= 128)
        first = np.where(breaks.any(axis=0), breaks.argmax(axis=0), lens)
        return np.minimum(first, self.utf8_prefix[positions]) if utf8_loops else first

    @staticmethod
    def _loops(bits: np.ndarray, whole: np.ndarray, ascii_only: np.ndarray, ascii_loop: np.ndarray,
               utf8_loops: bool) -> np.ndarray:
        """Which tokens (given their byte-set summaries) are made only of looping bytes."""
        outside = (bits & ~ascii_loop) != 0
        return ~(outside[:, 0] | outside[:, 1]) & (whole if utf8_loops else ascii_only)


def ascii_bitset(ascii_bytes: np.ndarray) -> np.ndarray:
    """The (2,) uint64 set of the ASCII bytes `ascii_bytes`, as the tables keep each token's."""
    bits = 0
    for b in ascii_bytes.tolist():
        bits |= 1 << b
    return np.array([bits & (2**64 - 1), bits >> 64], dtype=np.uint64)


def token_tables(vocab) -> TokenTables:
    """The shared tables of `vocab`, built on first use."""
    with _LOCK:
        tables = _CACHE.get(vocab)
        if tables is None:
            tables = TokenTables(vocab)
            _CACHE[vocab] = tables
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(vocab)
        return tables

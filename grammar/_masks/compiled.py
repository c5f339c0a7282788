"""A grammar compiled against a vocabulary: the automaton plus per-state token sets.

The token set a state allows depends only on the state, so it is computed once, on first
visit, with numpy over the vocabulary at once, and kept. A decode step is then a lookup.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

import numpy as np

from .._ir.analysis import productive_rules, pruned
from .._automaton.pushdown import Automaton
from .._automaton.states import DEAD, MAX_STACK_DEPTH, Stack
from .._errors import CompileError
from .._grammar import Grammar
from .._ir import Rules
from .._timing import CompileProfile, log_compile
from .._tokens.tables import CharacterProfile, TokenTables, token_tables
from .._tokens.vocab import Vocabulary
from .common import _LOOP_BYTES, _SMALL, _distinct
from .chains import ChainsMixin, _Chain
from .counted import CountedMixin, _Leavers
from .framed import FramedMixin, _Inside
from .pool import PoolMixin, StateMask
from .walks import WalksMixin, _LoopWalk


class CompiledGrammar(PoolMixin, WalksMixin, CountedMixin, ChainsMixin, FramedMixin):
    """A `Grammar` compiled for one vocabulary. Share it between matchers (it is thread-safe).

    Each base class is one room of this package (pooled masks, token walks, counted repeats,
    chains, frames); they share this object's state, set up here, and `_compute_mask` chooses among
    their ways to find a state's mask."""

    def __init__(self, grammar: Grammar, vocab: Vocabulary) -> None:
        self.grammar = grammar
        self.vocab = vocab
        self.profile = profile = CompileProfile()
        started = time.perf_counter()
        self.tables: TokenTables = token_tables(vocab)
        analysed = time.perf_counter()
        profile.tables = analysed - started
        rules = grammar.rule_set()
        # A recursion that never bottoms out (an array that must hold an array like itself)
        # has no finite text, though its automaton has a way out of every state: the root
        # then matches nothing, and elsewhere the matcher must not be led into one.
        reachable = grammar.rules
        productive = productive_rules(reachable)
        if rules.root not in productive:
            raise _nothing_to_decode()
        if len(productive) < len(reachable):
            rules = Rules(pruned(reachable, productive), rules.root)
        built = time.perf_counter()
        profile.analysis = built - analysed
        self.automaton = Automaton(rules)
        profile.automaton = time.perf_counter() - built
        if self.automaton.start == DEAD:
            raise _nothing_to_decode()
        self.vocab_size = self.tables.size
        self._masks: dict[int, StateMask] = {}
        # (inverted, ids) -> the mask: states with the same token set share one (masks do not
        # change once made)
        self._pool: dict[tuple[bool, bytes], StateMask] = {}
        self._small_pool: dict[tuple[int, ...], StateMask] = {}  # the same, keyed by a few allowed ids
        self._utf8_leads: dict[tuple[int, int], bool] = {}  # see `_utf8_leads_to`
        self._char_leads: dict[tuple[int, int], np.ndarray] = {}  # see `_characters_leading`
        self._loops: dict[int, bytes] = {}  # see `_looping_bytes`
        self._doom: dict[int, bool] = {}
        self._inside: dict[int, _Inside] = {}
        self._entered: set[int] = set()  # loop states an entry walk has gone into
        self._loop_walks: dict[int, _LoopWalk] = {}  # ... and their tokens' walks, from the second entry
        self._by_far_counts: dict[tuple, StateMask] = {}  # see `_far_counts_key`
        self._unions: dict[tuple[int, bytes], StateMask] = {}  # see `_framed_mask`
        self._successors: dict[int, np.ndarray] = {}  # see `successors`
        self._characters: dict[int, CharacterProfile | None] = {}  # see `_character_profile`
        self._leavers: dict[tuple[int, int], _Leavers | None] = {}  # see `_leavers_to`
        self._by_room: dict[tuple, StateMask] = {}  # see `_counted_mask` and `_chain_mask`
        self._chain_at: dict[tuple[bytes, int], _Chain] = {}  # see `_chain_along`
        self._residues: dict[bytes, int] = {}  # see `_follow_chain`
        self._chain_leavers_by: dict[tuple[bytes, int], _Leavers] = {}  # see `_chain_leavers`
        self._walked_with: dict[tuple, list[int]] = {}  # see `_walked_below`
        nfa = self.automaton.nfa
        self._framed = bool(nfa.recursive or nfa.shared_starts)
        self._lock = threading.RLock()
        self._timing_mask = False  # a mask found inside another's is timed as part of it
        self._eos_only: StateMask | None = None

    @property
    def start(self) -> int:
        return self.automaton.start

    @property
    def nbytes(self) -> int:
        """Memory held by this compiled grammar's arrays (the shared vocabulary excluded)."""
        rows = sum(m.nbytes for m in [*self._pool.values(), *self._small_pool.values()])
        successors = sum(s.nbytes for s in self._successors.values())
        inside = sum(i.nbytes for i in self._inside.values())
        leavers = sum(v.nbytes for v in [*self._leavers.values(), *self._chain_leavers_by.values()] if v is not None)
        chains = sum(c.nbytes for c in {id(c): c for c in self._chain_at.values()}.values())
        loop_walks = sum(w.nbytes for w in self._loop_walks.values())
        characters = sum(c.nbytes for c in self._char_leads.values())
        table = self.automaton.table[: len(self.automaton.configs)].nbytes
        return int(rows + successors + inside + leavers + chains + loop_walks + characters + table)

    def mask(self, state: int) -> StateMask:
        found = self._masks.get(state)
        if found is not None:
            return found
        with self._lock:
            found = self._masks.get(state)
            if found is None:
                key = self._far_counts_key(state) if self.automaton.nfa.has_counts else None
                shared = self._by_far_counts.get(key) if key is not None else None
                if shared is not None:
                    found = shared
                else:
                    found = self._timed_mask(state)
                    if key is not None:
                        self._by_far_counts[key] = found
                self._masks[state] = found
            return found

    def _far_counts_key(self, state: int) -> tuple | None:
        """`state` with every count of a called repeat that no token can bring to a bound (at
        least as many copies left as a token has bytes, and the minimum met or beyond reach)
        put as one mark, or None where it has none: states with the same key allow the same
        tokens, so a long bounded string finds its mask once, not at every character."""
        a = self.automaton
        count_at = a.nfa.count_at
        reach = self.tables.longest
        memo: dict[Stack, Stack] = {}
        far = False
        configs = []
        for q, stack in a.configs[state]:
            frames = []
            while stack and stack not in memo:
                frames.append(stack)
                stack = stack[1]
            marked = memo[stack] if stack else ()
            for frame in reversed(frames):
                ret, _, depth = frame
                count = count_at(ret)
                if count is not None:
                    site, done, least, most = count
                    if (most is None or most - done >= reach) and (least <= done or least - done > reach):
                        ret = ("far", site)
                        far = True
                marked = memo[frame] = (ret, marked, depth)
            configs.append((q, marked))
        return (frozenset(configs), a.accepting[state]) if far else None

    def successors(self, state: int) -> np.ndarray:
        """The distinct states the tokens allowed in `state` lead to (EOS excluded): what
        completion bounds search, found without the state's mask, which decoding needs and
        a search does not."""
        found = self._successors.get(state)
        if found is None:
            with self._lock:
                if self.automaton.forced_byte(state) >= 0:
                    ends = np.asarray(self._forced_tokens(state, number_ends=True)[1], np.int32)
                else:
                    _, ends, looping = self._walked_ends(state)
                    if looping.size:
                        ends = np.append(ends, np.int32(state))
                found = self._successors[state] = _distinct(ends).astype(np.int32)
        return found

    def walk_token(self, state: int, token_id: int) -> int:
        data = self.tables.token_bytes[token_id] if 0 <= token_id < self.vocab_size else None
        if data is None:
            return DEAD
        with self._lock:
            return self.automaton.walk(state, data)

    def _timed_mask(self, state: int) -> StateMask:
        """`_compute_mask`, its time and way noted in `profile`."""
        if self._timing_mask:
            return self._compute_mask(state)[1]
        self._timing_mask = True
        started = time.perf_counter()
        try:
            path, found = self._compute_mask(state)
        finally:
            self._timing_mask = False
        seconds = time.perf_counter() - started
        profile = self.profile
        profile.masks += seconds
        profile.paths[path] += 1
        profile.path_seconds[path] += seconds
        return found

    def _compute_mask(self, state: int) -> tuple[str, StateMask]:
        """The mask of a state met for the first time, and which way it was found."""
        t = self.tables
        a = self.automaton
        accepting = a.accepting[state] and t.eos_ids.size > 0
        if a.forced_byte(state) >= 0:
            # Most states of a schema sit inside a literal (a key, punctuation): only the tokens
            # that spell part of it, or all of it and more, can follow.
            ids = self._forced_tokens(state)[0]
            if accepting:
                ids.extend(t.eos_ids.tolist())
            if len(ids) <= _SMALL:
                return "forced", self._small_mask(ids)
            return "forced", self._state_mask([np.array(ids, np.int32)], False)
        if a.nfa.count_sites:
            counted = self._counted_mask(state, accepting)
            if counted is not None:
                return "counted", counted
        framed = a.frame_split(state) if self._framed else None
        # With recursion a string's head inside one call is left to its frame (whose token sets
        # every place that calls the rule shares); a count (a pattern under a length) is a
        # chain wherever it stands, as a chain's profile outruns a walk of every token. Inside
        # several frames, a chain is tried first as well: a frame's walk pays off where one
        # frame's states recur, and a chain's profile beats the walk of a count.
        if ((not a.nfa.recursive or a.depths[state] < MAX_STACK_DEPTH)
                and sum(b1 - b0 for b0, b1 in a.byte_spans(state)) >= _LOOP_BYTES):
            into_loops = framed is None or len(framed[1]) > 1 or not a.nfa.recursive
            chained = self._chain_mask(state, accepting, into_loops)
            if chained is not None:
                return "chained", chained
        if framed is not None:
            local, frames, outside, depth = framed
            # Where each frame returns to. Only the depth bound can leave it dead or doomed;
            # without recursion it is found when a token crosses the rule's end.
            resumes = [a.state_at(frame[0], frame[1]) if a.nfa.recursive else None for frame in frames]
            if all(resume is None or (resume >= 0 and not self._doomed(resume)) for resume in resumes):
                inside = self._inside.get(local)
                if inside is None:
                    inside = self._inside[local] = self._inside_of(local)
                # Relative depths stand for real ones only while real ones stay under the bound.
                if depth + inside.reach < MAX_STACK_DEPTH:
                    return "framed", self._framed_mask(state, local, inside, frames, resumes, outside, accepting)
        below = self._walked_below(state)
        if below is not None:
            return "walked", self._walked_above(state, below, accepting)
        loop, positions, _, long_ids = self._walk_from(state)
        long_ids = self._walk_long(state, long_ids)[0]
        if loop is not None:
            found = self._loop_mask(loop, [t.order[positions], long_ids], accepting)
        else:
            found = self._state_mask([t.order[positions], long_ids], accepting)
        for config in a.configs[state]:  # once its mask is made (see `_walked_below`)
            self._walked_with.setdefault(config, []).append(state)
        return "walked", found

    def _walked_below(self, state: int) -> int | None:
        """A state walked before whose configurations are some of `state`'s, and which allows
        most tokens, or None. Every token one of its configurations reads, the same
        configuration reads in `state`: a pattern searched for anywhere in a string (no
        anchors) keeps the text before a match among its configurations at every step of a
        partial match, so each step need only walk the few tokens the text before a match
        does not allow (those that close the string too soon)."""
        configs = self.automaton.configs[state]
        if len(configs) < 2:
            return None
        best, most = None, self.tables.size // 2
        mine = set(configs)
        for config in configs:
            for below in self._walked_with.get(config, ()):
                count = self._masks[below].count
                if count > most and mine.issuperset(self.automaton.configs[below]) \
                        and len(self.automaton.configs[below]) < len(configs):
                    best, most = below, count
        return best

    def _walked_above(self, state: int, below: int, accepting: bool) -> StateMask:
        """The mask of `state`: the tokens `below` allows (see `_walked_below`), and those of
        the rest that `state` allows, walked."""
        t = self.tables
        allowed = np.zeros(t.size, dtype=bool)
        allowed[self._masks[below].allowed_ids(t.size)] = True
        allowed[t.eos_ids] = False  # EOS goes by `state`'s own acceptance
        positions, ends = self._walk(state, np.flatnonzero(~allowed[t.order]))
        allowed[t.order[self._without_doomed(positions, ends)[0]]] = True
        allowed[self._walk_long(state, t.long_ids[~allowed[t.long_ids]])[0]] = True
        return self._vector_mask(allowed, accepting)


# The compiled grammars `compile` keeps, the most recently used last. A compiled grammar holds
# its grammar, so a cache keyed weakly by grammar kept every grammar ever compiled alive; one
# built per text (grounded values) grew it without bound. Past this many, the oldest goes.
MAX_CACHED_COMPILES = 64
_COMPILED: "OrderedDict[tuple[Grammar, Vocabulary], CompiledGrammar]" = OrderedDict()
_COMPILE_LOCK = threading.Lock()


def _nothing_to_decode() -> CompileError:
    return CompileError(
        "the grammar matches no text at all (a schema such as false, an empty enum, or one that "
        "requires a value to contain itself), so there is nothing to decode",
        keyword="empty",
    )


def compile(grammar: Grammar, vocab: Vocabulary) -> CompiledGrammar:  # noqa: A001 - the natural name
    """Compile `grammar` for `vocab` (cached: the same pair gives the same object)."""
    with _COMPILE_LOCK:
        key = (grammar, vocab)
        found = _COMPILED.get(key)
        if found is not None:
            _COMPILED.move_to_end(key)
            return found
        started = time.perf_counter()
        found = CompiledGrammar(grammar, vocab)
        _COMPILED[key] = found
        if len(_COMPILED) > MAX_CACHED_COMPILES:
            _COMPILED.popitem(last=False)
        log_compile("grammar", started,
                    lambda: f"{grammar!r} for a {found.vocab_size}-id vocabulary ({found.profile.summary()})")
        return found

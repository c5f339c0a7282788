"""Reading bytes in the lazily determinised automaton: a byte's successor, a state's byte row and
spans, a whole text walked (literals read at once), the byte a state forces, and whether a
state can still reach the end under the stack-depth bound."""

from __future__ import annotations

import numpy as np

from .states import DEAD, MAX_STACK_DEPTH, UNBUILT, Stack, stack_depth


class ReadingMixin:
    """Bytes read in states already made or made on the way (a part of `Automaton`)."""

    __slots__ = ()

    def step(self, s: int, byte: int) -> int:
        c = self.class_list[byte]
        nxt = self.rows[s][c]
        return self.successor(s, c) if nxt == UNBUILT else nxt

    def byte_row(self, s: int) -> np.ndarray:
        """The successor of `s` on each of the 256 bytes, as a numpy row."""
        self.build(s)
        return self.table[s][self.class_of]

    def walk(self, s: int, data: bytes) -> int:
        """The state after `data` from state `s` (DEAD if it leaves the grammar). A run of
        bytes along a literal is read at once, without numbering the states inside it."""
        if self.links[s] is not None:
            # Walks from inside a literal are remembered: they number no state to find again.
            found = self._jumps.get((s, data))
            if found is None:
                found = self._jumps[(s, data)] = self._walk(s, data)
            return found
        return self._walk(s, data)

    def _walk(self, s: int, data: bytes) -> int:
        cl = self.class_list
        rows = self.rows
        links = self.links
        link_bytes = self.link_bytes
        edges = self.nfa.byte_edges
        i = 0
        n = len(data)
        while i < n:
            link = links[s]
            if link is not None:
                q, stack = link
                j = i
                while j < n and link_bytes[q] == data[j]:
                    q = edges[q][0][2]
                    j += 1
                if j == i:
                    return DEAD
                s = self.state_at(q, stack)
                i = j
            else:
                c = cl[data[i]]
                nxt = rows[s][c]
                s = self.successor(s, c) if nxt == UNBUILT else nxt
                i += 1
            if s < 0:
                return DEAD
        return s

    def byte_spans(self, s: int) -> tuple[tuple[int, int], ...]:
        """The bytes some configuration of state `s` has an edge on, as sorted, disjoint
        half-open ranges (a successor may still be dead, where the depth bound cuts a call)."""
        found = self._spans.get(s)
        if found is None:
            bounds = self.class_bounds
            spans: list[tuple[int, int]] = []
            for lo, hi in sorted({(lo, hi) for q, _ in self.configs[s] for lo, hi, _t in self.class_edges(q)}):
                b0, b1 = bounds[lo], bounds[hi]
                if spans and b0 <= spans[-1][1]:
                    spans[-1] = (spans[-1][0], max(spans[-1][1], b1))
                else:
                    spans.append((b0, b1))
            # A tuple of numbers, which the cycle collector stops walking (a list per state
            # would stay in its view as long as the grammar lives).
            found = self._spans[s] = tuple(spans)
        return found

    def literal_run(self, q: int) -> tuple[bytes, int, int]:
        """The literal that link NFA state `q` lies in: its bytes, the offset of `q`'s byte
        among them, and the NFA state after the last (found once per literal, from the first
        of its links asked for)."""
        found = self._runs.get(q)
        if found is None:
            edges = self.nfa.byte_edges
            link_bytes = self.link_bytes
            data = bytearray()
            links = []
            p = q
            while (b := link_bytes[p]) >= 0:
                data.append(b)
                links.append(p)
                p = edges[p][0][2]
            text = bytes(data)
            for offset, link in enumerate(links):
                self._runs[link] = (text, offset, p)
            found = self._runs[q]
        return found

    def state_at(self, q: int, stack: Stack) -> int:
        """The state of the closure of one configuration (numbered on first reach)."""
        key = (q, stack)
        nxt = self._single_moves.get(key)
        if nxt is None:
            # A link's closure is itself: one byte edge and nothing else.
            closed = ((key,), False) if self.link_bytes[q] >= 0 else self._closure([key])
            nxt = self._single_moves[key] = self._intern(closed)
        return nxt

    def forced_byte(self, s: int) -> int:
        """The one byte that can follow in state `s`, or -1 (several can, none can, or the
        document may also end here)."""
        found = self._forced.get(s)
        if found is None:
            found = -1
            link = self.links[s]
            if link is not None and self.link_bytes[self.nfa.byte_edges[link[0]][0][2]] >= 0:
                # Inside a literal, with more of it to come: that byte, its state not numbered.
                found = self.link_bytes[link[0]]
            elif not self.accepting[s]:
                found = self._one_byte(s)
            self._forced[s] = found
        return found

    def _one_byte(self, s: int) -> int:
        """The byte of the one single-byte class every edge of state `s` reads, else -1
        (looked at until a second class shows up: string states have dozens of edges)."""
        only = None
        for q, _ in self.configs[s]:
            for lo, hi, _t in self.class_edges(q):
                if only is None:
                    only = (lo, hi)
                elif only[0] != lo or only[1] != hi:
                    return -1
        if only is None or only[1] - only[0] != 1:
            return -1
        byte = self.single_byte[only[0]]
        return byte if byte >= 0 and self.step(s, byte) >= 0 else -1

    def can_extend(self, s: int) -> bool:
        return any(t >= 0 for t in self.build(s))

    def stuck_at_depth_limit(self, s: int, limit: int = 10_000) -> bool:
        """Whether `s`, at the stack-depth bound, can neither finish nor return below it.

        The bound cuts off calls, so a state there may only lead to dead ends; one that can
        pop back to a frame under the bound, or accept, is not stuck (searched within `limit`
        states). Calls to shared rules go past the bound, so returning from one of them
        to a frame still at the bound is no way out.
        """
        if self.depths[s] < MAX_STACK_DEPTH:
            return False
        seen = {s}
        todo = [s]
        while todo and len(seen) < limit:
            u = todo.pop()
            if self.accepting[u] or self.depths[u] < MAX_STACK_DEPTH:
                return False
            for v in set(self.build(u)):
                if v >= 0 and v not in seen:
                    seen.add(v)
                    todo.append(v)
        return not todo

    def describe(self, s: int) -> str:
        """A short, human-readable account of where state `s` stands in the grammar."""
        if s < 0:
            return "dead state"
        nfa = self.nfa
        expects = sorted({(lo, hi) for q, _ in self.configs[s] for lo, hi, _t in nfa.byte_edges[q]})
        shown = ", ".join(_byte_range(lo, hi) for lo, hi in expects[:8])
        more = ", ..." if len(expects) > 8 else ""
        depth = max((stack_depth(st) for _, st in self.configs[s]), default=0)
        return f"state {s} (depth {depth}, expects bytes {shown}{more}; complete={self.accepting[s]})"


def _byte_range(lo: int, hi: int) -> str:
    def one(b: int) -> str:
        return repr(chr(b)) if 32 <= b < 127 else f"0x{b:02x}"

    return one(lo) if lo == hi else f"{one(lo)}-{one(hi)}"

"""The grammar IR lowered to a byte-level automaton, determinised lazily.

Code points become UTF-8 byte ranges; each rule becomes a piece of one NFA. References to rules
used once are inlined; references inside a recursive cycle, to rules used in several places, and
the item of a long counted repeat (one call per count) become *calls* that push a return state.
A configuration is an NFA state plus a stack of return states, and one deterministic state is
the closed set of configurations the input so far can be in: a DFA where the grammar is
regular, a pushdown automaton (bounded in depth) where it recurses.

States are numbered on first reach, and each successor is found on first use, one byte class
at a time (most states are only ever left by one or two of their bytes). Bytes the automaton
never tells apart share a class (`class_of`); `rows[s][class_of[b]]` is the successor of state
`s` on byte `b` (-1: dead, -2: not found yet), and the numpy `table` (the same, one int16 or
int32 row per state) is what the vectorised token walk in `_masks` gathers from.

One room per job: `utf8` (code points as UTF-8 byte ranges), `graph` (the rules that recurse
or are shared; left recursion refused), `nfa` (the Thompson NFA with call edges, and its size
bounds), `states` (`DEAD`, `UNBUILT`, the bounds, the return `Stack`), `pushdown` (`Automaton`,
the configurations determinised lazily) and `reading` (bytes read in it: steps, rows, spans,
walks, forced bytes).
"""

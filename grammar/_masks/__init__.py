"""Token masks: a `Grammar` compiled for a vocabulary (`CompiledGrammar`) and the `Matcher` that
walks it token by token. One room per job:

- `compiled`: `CompiledGrammar` (its state, `mask`, `successors`, and the choice among the ways
  below of finding a state's mask) and `compile` (cached per grammar and vocabulary);
- `pool`: `StateMask`, a state's token set in its smaller form, pooled between states;
- `walks`: the token walks through the byte automaton, and the states a depth bound dooms;
- `counted`: counted repeats of characters and chains of states, by the room left;
- `framed`: states inside a call frame, found once per frame-relative state;
- `common`: the empty arrays and thresholds the rooms share;
- `completion`: how many tokens a state is from a finished document (the matcher's);
- `matcher`: `Matcher` and `TokenMask`.

The public names are re-exported by `grammar`; other packages take them from there.
"""

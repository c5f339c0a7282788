"""The vocabulary stage: what each token id stands for, and what is prepared per vocabulary,
knowing nothing of grammars.

`vocab` (`Vocabulary`: id -> bytes, special and end ids), `gguf` (the GGUF metadata reader the
vocabulary and runtimes read models with), `tables` (per-vocabulary token tables: sorted bytes,
byte matrices, loop classes, character profiles), `bitmask` (packed rows of allowed ids).
"""

"""The internals tests and benchmarks reach for, in one sanctioned place (no stability promise:
these change with the engine). Everything else outside `grammar` uses its public names.

- `Automaton`: the byte automaton a compiled grammar walks (building it checks a grammar's size).
- `Document`, `Place`, `LEGACY`: a JSON Schema document with its `$ref`s resolved, a place in it,
  and the dialects whose `$ref` hides its siblings (for reading documents as the compiler does).
- `token_tables`: a vocabulary's token tables, built once per vocabulary and cached.
"""

from ._automaton.pushdown import Automaton
from ._jsonschema.refs import LEGACY, Document, Place
from ._tokens.tables import token_tables

__all__ = ["LEGACY", "Automaton", "Document", "Place", "token_tables"]

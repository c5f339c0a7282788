"""The check after a server's answer, fitted to how the grammar travelled.

A server that took the grammar itself (GBNF: llama.cpp, vLLM, SGLang) writes sentences of it
exactly, so a finished answer is checked against the grammar and a cut one (`max_tokens`) must
be a prefix the grammar's own matcher can continue. A server that took only the JSON Schema
writes blanks of its own choosing (`{"name": "Ann", "age": 31}`): a finished answer is parsed and
validated against the schema that was sent, and a cut one, its blanks between JSON tokens left
out, must be a prefix the compact grammar can continue. Anything else is a server that ignored
the grammar, whether it finished or was cut.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from typing import Any, Literal

from grammar import Grammar, GrammarError, Matcher, Vocabulary
from grammar import compile as compile_grammar

from ._errors import RuntimeFailure

Verdict = Literal["whole", "prefix", "rejected"]

# Walking text through a grammar's automaton needs a vocabulary; the walk itself is by bytes,
# so the smallest one serves (one token and an end of sequence).
_WALK_VOCABULARY = Vocabulary([b" ", b""], eos_ids=[1], name="answer-check")
_lock = threading.Lock()
_validators: weakref.WeakKeyDictionary[Grammar, Any] = weakref.WeakKeyDictionary()

_JSON_STRING_OR_REST = re.compile(r'"(?:[^"\\]|\\.)*"?|[^"]+', re.DOTALL)
_BLANKS = re.compile(r"[ \t\r\n]+")
_SEPARATED_WORDS = re.compile(r"[\w.+\-][ \t\r\n]+[\w.+\-]")


def verdict(g: Grammar, text: str, *, schema: Any | None = None) -> Verdict:
    """Whether `text` is a whole answer, a prefix of one, or neither. With `schema` (the answer
    was held to that JSON Schema by the server), whole means valid JSON of the schema."""
    if schema is None:
        if _accepts(g, text):
            return "whole"
        return "prefix" if _continues(g, text) else "rejected"
    if _valid(g, schema, text):
        return "whole"
    compact = compact_json(text)
    return "prefix" if compact is not None and _continues(g, compact) else "rejected"


def compact_json(text: str) -> str | None:
    """`text` with the blanks between JSON tokens left out (strings kept as written); None
    where blanks separate two words or numbers (`1 2`), which no JSON document holds."""
    out = []
    for match in _JSON_STRING_OR_REST.finditer(text):
        piece = match.group()
        if not piece.startswith('"'):
            if _SEPARATED_WORDS.search(piece):
                return None
            piece = _BLANKS.sub("", piece)
        out.append(piece)
    return "".join(out)


def _accepts(g: Grammar, text: str) -> bool:
    try:
        return g.accepts(text)
    except GrammarError as exc:
        raise RuntimeFailure(f"the answer could not be checked against {g!r}: {exc}") from exc


def _continues(g: Grammar, text: str) -> bool:
    """Whether the grammar's matcher can walk all of `text` (so the answer may go on)."""
    try:
        compiled = compile_grammar(g, _WALK_VOCABULARY)  # cached by grammar.compile
    except GrammarError as exc:
        raise RuntimeFailure(f"the answer could not be checked against {g!r}: {exc}") from exc
    return Matcher(compiled).accept_bytes(text.encode("utf-8", "surrogatepass"))


def _valid(g: Grammar, schema: Any, text: str) -> bool:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        return False
    # Imported here: jsonschema's format checkers build a parser of RFC 3987 when imported
    # (a second, and some 120,000 objects every full garbage collection then walks), which
    # only an answer to a schema-only server needs.
    import jsonschema
    from referencing.exceptions import Unresolvable

    with _lock:
        validator = _validators.get(g)
    if validator is None:
        try:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            validator = cls(schema)
        except jsonschema.SchemaError as exc:
            raise RuntimeFailure(f"the schema sent for {g!r} is not a valid JSON Schema: {exc.message}") from exc
        with _lock:
            _validators[g] = validator
    try:
        return bool(validator.is_valid(document))
    except (Unresolvable, RecursionError) as exc:
        raise RuntimeFailure(f"the answer could not be validated against the schema of {g!r}: {exc}") from exc

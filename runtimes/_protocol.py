"""The one calling shape every runtime has: `generate` for a whole answer, `stream` for pieces."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from grammar import Grammar

from ._errors import InvalidRequest, RuntimeFailure
from .checks import GREEDY_BELOW, check_count, check_heal, check_messages, check_number, check_seed

FinishReason = Literal["stop", "length", "grammar_complete", "cancelled"]
Sampling = Literal["masked", "asap"]
ToolCallEnvelope = Literal["json", "hermes", "python"]
Messages = list[dict[str, Any]] | str


@dataclass
class Usage:
    """Tokens read and written by one generation (or, summed, by many).

    Local runtimes also count the work behind the tokens: `forward_passes`, the model passes
    whose logits chose this generation's tokens (the prompt's last read counts as one; 0 where
    the runtime cannot count them, as from a remote server). Decoding token by token it equals
    `completion_tokens`; jump-forward and a drafter take it below. `drafted_tokens` is how many tokens a drafter proposed and
    `accepted_tokens` how many of those the model confirmed (0 where no drafter ran).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    forward_passes: int = field(default=0, kw_only=True)
    drafted_tokens: int = field(default=0, kw_only=True)
    accepted_tokens: int = field(default=0, kw_only=True)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def acceptance_rate(self) -> float | None:
        """The share of drafted tokens the model accepted; None where none were drafted."""
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else None

    def __add__(self, other: "Usage") -> "Usage":
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            forward_passes=self.forward_passes + other.forward_passes,
            drafted_tokens=self.drafted_tokens + other.drafted_tokens,
            accepted_tokens=self.accepted_tokens + other.accepted_tokens,
        )


@dataclass(frozen=True)
class TokenScore:
    """How the model saw one token it wrote: the token's `bytes`; `logprob`, its natural-log
    probability under the model's own distribution (all logits, before the grammar's mask and
    any temperature); `masked_mass`, the probability the grammar's mask removed at that step
    (how much the model wanted to write something the grammar forbids: 0.0 where it was free;
    None where the runtime cannot tell, as from a server's logprobs)."""

    bytes: bytes
    logprob: float
    masked_mass: float | None = None


@dataclass
class Generation:
    """What one generation produced and why it stopped.

    finish_reason: "stop" (the model ended an unconstrained answer), "grammar_complete" (the
    answer is a whole sentence of the requested grammar), "length" (the token budget ran out
    first), "cancelled" (the caller stopped it).

    steered_from: where in `text` (a character offset) the runtime began overriding the model's
    choice of token to close the document within the token budget; None if it never did. The
    document is whole either way, but from there on its values may be cut short.

    token_scores: with `scores=True`, one `TokenScore` per token of `token_ids`, in order (None
    where not asked for, or where the runtime cannot give them); their bytes spell `text`.

    healed: where the prompt was healed (`heal`), the bytes of its last token, which the answer's
    first tokens wrote again before `text` (so `token_ids` spell `healed` + `text`); b"" where
    it was not. That token is counted in `usage.completion_tokens`, not against `max_tokens`.
    """

    text: str
    finish_reason: FinishReason
    usage: Usage
    token_ids: list[int] | None = None
    steered_from: int | None = None
    token_scores: list[TokenScore] | None = None
    healed: bytes = b""

    @property
    def steered(self) -> bool:
        """Whether the runtime closed the document early to fit the token budget."""
        return self.steered_from is not None


@dataclass(frozen=True)
class ContinuationScore:
    """How likely the model finds a given text after a prompt (`Runtime.score`): one
    `TokenScore` per token of `text` as the model's tokenizer reads it, each against the
    model's whole distribution at its place (no grammar: `masked_mass` 0.0)."""

    text: str
    token_scores: list[TokenScore]
    usage: Usage

    @property
    def logprob(self) -> float:
        """The text's natural-log probability after the prompt: the sum of its tokens'."""
        return sum(s.logprob for s in self.token_scores)


@dataclass(frozen=True)
class Request:
    """The arguments of one `generate` or `stream` call, checked once: a bad one is an
    `InvalidRequest` naming it (see `runtimes.checks`)."""

    messages: Messages
    grammar: Grammar | None = None
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    tools: list[dict[str, Any]] | None = None
    scores: bool = False
    heal: bool | None = None
    sampling: Sampling = "masked"

    def __post_init__(self) -> None:
        check_messages(self.messages)
        check_count("max_tokens", self.max_tokens)
        check_number("temperature", self.temperature)
        if self.temperature < GREEDY_BELOW:  # every runtime, a server too, reads it as greedy
            object.__setattr__(self, "temperature", 0.0)
        check_number("top_p", self.top_p, high=1.0, low_open=True)
        check_seed("seed", self.seed)
        if self.grammar is not None and not isinstance(self.grammar, Grammar):
            raise InvalidRequest("grammar", f"must be a grammar.Grammar, not {type(self.grammar).__name__}")
        if self.tools is not None and not (
            isinstance(self.tools, list) and all(isinstance(t, dict) for t in self.tools)
        ):
            raise InvalidRequest("tools", "must be a list of OpenAI function-tool dicts, or None")
        if not isinstance(self.scores, bool):
            raise InvalidRequest("scores", f"must be True or False, not {type(self.scores).__name__}")
        check_heal(self.messages, self.heal)
        if self.sampling not in get_args(Sampling):
            raise InvalidRequest("sampling", f"must be one of {get_args(Sampling)}, not {self.sampling!r}")
        if self.sampling == "asap" and (self.grammar is None or self.temperature == 0.0 or self.top_p < 1.0):
            raise InvalidRequest("sampling", "'asap' reweights sampling under a grammar: it needs a grammar, "
                                 f"a temperature of at least {GREEDY_BELOW:g} (below it is greedy) and top_p 1")


class TextStream(AsyncIterator[str]):
    """The pieces of one streamed answer; once iterated to the end, `generation` holds the
    whole `Generation` (finish reason, usage), so a caller that needs a document can check it.

    `produce(put)` runs the generation, calling `put(piece)` (on the event loop) for each piece
    and returning the `Generation`. Closing the stream early (`await stream.aclose()`) cancels it.
    """

    def __init__(self, produce: Callable[[Callable[[str], None]], Awaitable[Generation]]):
        self.generation: Generation | None = None
        self._pieces = self._run(produce)

    async def _run(
        self, produce: Callable[[Callable[[str], None]], Awaitable[Generation]]
    ) -> AsyncIterator[str]:
        queue: asyncio.Queue[object] = asyncio.Queue()
        done = object()
        task = asyncio.ensure_future(produce(queue.put_nowait))
        task.add_done_callback(lambda _: queue.put_nowait(done))
        try:
            while (piece := await queue.get()) is not done:
                yield piece  # type: ignore[misc]
            self.generation = await task
        finally:
            if not task.done():
                task.cancel()
                await asyncio.wait({task})
            if not task.cancelled():
                task.exception()  # retrieved: a failure after the consumer left is not reported

    def __aiter__(self) -> "TextStream":
        return self

    async def __anext__(self) -> str:
        return await self._pieces.__anext__()

    async def aclose(self) -> None:
        await self._pieces.aclose()


class Runtime(ABC):
    """Where tokens come from. Subclasses implement `_generate` and `_stream` (called with
    arguments `generate` and `stream` have checked) and, if they hold resources, `aclose`.

    `tools` are OpenAI function-tool dicts ({"type": "function", "function": {...}}); the runtime
    shows them to the model. `tool_call_envelope` says how the model is expected to write a call:
    "hermes" (<tool_call>{...}</tool_call>, when its chat template uses that), "python"
    (`[f(a=1), g(b="x")]`, when its template asks for calls so) or "json".
    """

    name: str = "runtime"
    tool_call_envelope: ToolCallEnvelope = "json"
    # The separators of the JSON the model's chat template shows it (`(", ", ": ")`), None
    # where it shows none or the template is unknown (a server): see `_chat.json_separators`.
    json_separators: tuple[str, str] | None = None
    # Whether the runtime itself closes a grammar's document within `max_tokens` (a local
    # decoder steers the end). One that cannot (a server it sends the grammar to) says False,
    # and a caller that needs a whole document bounds the grammar (`grammar.within_bytes`).
    steers_budget: bool = True
    # Whether the model's chat template takes a `tools` variable, as models trained to call
    # tools have (their own way of listing tools); False where it takes none (the tools are
    # then listed in a system message the model was never trained on); None where unknown.
    template_takes_tools: bool | None = None
    # Whether `score` is implemented: local runtimes read a given text's tokens in a pass each.
    scores_continuations: bool = False

    async def score(self, prompt: Messages, continuation: str) -> ContinuationScore:
        """How likely the model finds `continuation` right after `prompt` (a chat, rendered as
        for `generate`, or a plain string): the log-probability of each of its tokens.

        A runtime that cannot read a given text through its model (a server) raises
        `RuntimeFailure`; `scores_continuations` says beforehand."""
        raise RuntimeFailure(f"{self.name}: this runtime cannot score a given continuation")

    async def generate(
        self,
        messages: Messages,
        *,
        grammar: Grammar | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        scores: bool = False,
        heal: bool | None = None,
        sampling: Sampling = "masked",
    ) -> Generation:
        """The whole answer to `messages` (a chat, or a plain string for raw completion).

        `scores=True` asks for `Generation.token_scores`: each token's probability under the
        model and the mass the grammar removed (local runtimes read a model pass per token for
        them, so jump-forward is off for that generation).

        `heal` (local runtimes, raw string prompts): back up over the prompt's last token and
        hold the answer to start with its bytes, so a prompt cut mid-word is continued as the
        whole word would be; the text returned still continues the prompt. None (the default)
        heals a raw prompt that ends in a word character or a space; True any raw prompt; False none.

        `sampling="asap"` (local runtimes; a grammar, temperature > 0): grammar-aligned
        sampling. Repeated samples of the same request come to follow the model's distribution
        conditioned on the grammar, which masking alone skews (see `runtimes._asap`); the
        default "masked" masks each step and nothing more."""
        request = Request(messages, grammar, max_tokens, temperature, top_p, seed, tools, scores, heal, sampling)
        return await self._generate(request)

    def stream(
        self,
        messages: Messages,
        *,
        grammar: Grammar | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        scores: bool = False,
        heal: bool | None = None,
        sampling: Sampling = "masked",
    ) -> TextStream:
        """The answer as text pieces, each a whole number of characters (`scores`, `heal` and
        `sampling` as in `generate`; scores on the stream's `generation`)."""
        return self._stream(Request(messages, grammar, max_tokens, temperature, top_p, seed, tools, scores, heal,
                                    sampling))

    @abstractmethod
    async def _generate(self, request: Request) -> Generation:
        """`generate` for checked arguments: what each runtime implements."""

    @abstractmethod
    def _stream(self, request: Request) -> TextStream:
        """`stream` for checked arguments: what each runtime implements."""

    async def aclose(self) -> None:
        """Release what the runtime holds (connections, model memory)."""

    async def __aenter__(self) -> "Runtime":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

"""Test models: everything above the runtime is testable in milliseconds, without a model file.

`RandomRuntime` is a real local runtime (the same decode loop, matcher, sampling, budget
steering and streaming as llama.cpp) whose "model" draws seeded random logits.
`ScriptedRuntime` answers with given texts, for agent tests that need a particular answer;
`FunctionRuntime` with what a function of the conversation returns.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from grammar import Grammar, Vocabulary

from ._chat import with_tool_instructions
from ._errors import GrammarIgnored, InvalidRequest, RuntimeFailure
from .checks import check_text
from ._local import LocalRuntime
from ._batch import Feed
from ._protocol import Generation, Messages, Request, Runtime, TextStream, ToolCallEnvelope, Usage

# Multi-byte pieces of JSON text, so random walks under a JSON grammar use tokens longer than
# one byte as real vocabularies do.
JSON_PIECES = (
    '{"', '"}', '":', '",', '","', '":"', '":{', '":[', '"]', '},', '}}', ']}', '[{', '[]', '{}',
    ', ', ': ', 'true', 'false', 'null', 'name', 'arguments', 'type', 'value', 'id', 'text',
    '00', '10', '0.', '.5', 'e+', '-1', '\\n', '\\"', '\\u00', ' the', ' a', 'ing', 'er', 'é',
    '日本', '\U0001f600',
)


def synthetic_vocabulary() -> Vocabulary:
    """Every single byte, common JSON pieces, and an end-of-sequence id (the last)."""
    tokens = [bytes([b]) for b in range(256)]
    tokens += [piece.encode("utf-8") for piece in JSON_PIECES]
    eos = len(tokens)
    tokens.append(b"")
    return Vocabulary.from_tokens(tokens, eos_ids=[eos], special_ids=[eos])


def render_plain(messages: Messages, tools: list[dict[str, Any]] | None) -> str:
    """A ChatML-like prompt text, for models without a template of their own."""
    if isinstance(messages, str):
        return messages
    if tools:
        messages = with_tool_instructions(messages, tools, "json")
    turns = [f"<|{m['role']}|>\n{m.get('content') or ''}\n" for m in messages]
    return "".join(turns) + "<|assistant|>\n"


class GreedyTokenizer:
    """Longest-match tokenization over a vocabulary's byte strings (enough to count and seed,
    and to split a benchmark's documents the same way for every engine)."""

    def __init__(self, vocabulary: Vocabulary):
        special = vocabulary.special_ids | vocabulary.eos_ids
        self._ids: dict[bytes, int] = {}
        for i, tok in enumerate(vocabulary.tokens):
            if tok and i not in special:
                self._ids.setdefault(tok, i)
        self._longest = max((len(tok) for tok in self._ids), default=1)

    def encode(self, text: str) -> list[int]:
        """`text`'s ids; a byte no token spells is skipped (synthetic vocabularies spell all)."""
        return self.encode_bytes(text.encode("utf-8"), skip_unknown=True)

    def encode_bytes(self, data: bytes, *, skip_unknown: bool = False) -> list[int]:
        """`data`'s ids; a byte no token spells is a ValueError unless `skip_unknown`."""
        ids: list[int] = []
        i = 0
        while i < len(data):
            for width in range(min(self._longest, len(data) - i), 0, -1):
                found = self._ids.get(data[i : i + width])
                if found is not None:
                    ids.append(found)
                    i += width
                    break
            else:
                if not skip_unknown:
                    raise ValueError(f"no token spells byte {data[i]:#x} at offset {i}")
                i += 1
        return ids


class RandomRuntime(LocalRuntime):
    """A local runtime whose logits are seeded random numbers.

    A row's logits are a function of the seed and every token before it (prompt and answer),
    so greedy answers are reproducible, batched or not, and the same with tokens read one a
    step or several (jump-forward, a drafter's guesses). `step_delay` seconds are slept per model step (one forward pass, however
    many sequences it serves), to stand in for a slow model in tests of concurrency and
    cancellation; `forward_calls` counts model steps. `max_batch`, `batch_tokens`,
    `prefill_chunk` and `cache_cells` are the batching options of `LocalRuntime`; each slot
    keeps and shares prompt prefixes as llama.cpp's cache does. `jump_forward` and `draft` are
    those of `LocalRuntime`.
    """

    name = "random"

    def __init__(
        self,
        vocab: Vocabulary | None = None,
        seed: int = 0,
        *,
        step_delay: float = 0.0,
        scale: float = 4.0,
        tool_call_envelope: ToolCallEnvelope = "json",
        max_batch: int = 1,
        batch_tokens: int | None = None,
        prefill_chunk: int | None = None,
        cache_cells: int | None = None,
        jump_forward: bool = True,
        draft: object = None,
        draft_tokens: int = 8,
    ):
        super().__init__(seed)
        self.keeps_partial_cache = True
        self.jump_forward = jump_forward
        self.draft_tokens = draft_tokens
        self.vocabulary = vocab if vocab is not None else synthetic_vocabulary()
        self.seed = seed
        self.step_delay = step_delay
        self.scale = scale
        self.tool_call_envelope = tool_call_envelope
        self.max_batch = max_batch
        self.batch_tokens = batch_tokens
        self.prefill_chunk = prefill_chunk
        self.cache_cells = cache_cells
        self.forward_calls = 0
        self.batch_sizes: list[int] = []  # sequences served by each model step
        self._tokenizer = GreedyTokenizer(self.vocabulary)
        self._cached: list[list[int]] = [[] for _ in range(max_batch)]
        self._hashes: list[list[int]] = [[] for _ in range(max_batch)]  # per position, of the prefix
        self.draft = draft

    def _prompt_ids(self, messages: Messages, tools: list[dict[str, Any]] | None) -> list[int]:
        return self._tokenizer.encode(render_plain(messages, tools))

    def _text_ids(self, text: str) -> list[int]:
        return self._tokenizer.encode(text)

    def begin_slot(self, slot: int, keep: int) -> int:
        del self._cached[slot][keep:]
        del self._hashes[slot][keep:]
        return len(self._cached[slot])

    def begin_slot_from(self, source: int, slot: int, length: int) -> bool:
        self._cached[slot] = self._cached[source][:length]
        self._hashes[slot] = self._hashes[source][:length]
        return True

    def read_batch(self, feeds: list[Feed]) -> list[list[np.ndarray]]:
        self.forward_calls += 1
        self.batch_sizes.append(len(feeds))
        if self.step_delay:
            time.sleep(self.step_delay)
        rows: list[list[np.ndarray]] = []
        for feed in feeds:
            cached, hashes = self._cached[feed.slot], self._hashes[feed.slot]
            if len(cached) != feed.start:
                raise RuntimeFailure(f"slot {feed.slot} holds {len(cached)} tokens, not {feed.start}")
            for token in feed.tokens:
                hashes.append(zlib.crc32(token.to_bytes(8, "little", signed=True), hashes[-1] if hashes else 0))
            cached.extend(feed.tokens)
            rows.append([self._logits(cached[: i + 1], hashes[i]) for i in range(len(cached) - feed.logits, len(cached))])
        return rows

    def _logits(self, tokens: list[int], prefix_hash: int) -> np.ndarray:
        """The logits after the prefix `tokens` (`prefix_hash` names it)."""
        rng = np.random.default_rng([self.seed, prefix_hash])
        row = rng.standard_normal(self.vocabulary.size, dtype=np.float32)
        row *= self.scale
        return row


class ScriptedRuntime(Runtime):
    """Answers each call with the next of `responses`: a text, or a whole `Generation` given
    as it is (to stand in for a runtime's particular ending, a steered one say).

    For a text, one token is counted per UTF-8 byte. An answer longer than `max_tokens` is cut (at a
    character boundary) and finishes with "length"; a whole answer that the call's grammar
    rejects raises `GrammarIgnored`, as a server that ignored the grammar would. Every call's
    arguments are kept in `calls`. A text that has no UTF-8 encoding (a lone surrogate) is
    refused with `InvalidRequest`, as no model could write it; a `Generation` is given as it is.
    """

    name = "scripted"

    def __init__(self, responses: list[str | Generation], *, tool_call_envelope: ToolCallEnvelope = "json"):
        if isinstance(responses, (str, Generation)) or not isinstance(responses, (list, tuple)):
            raise InvalidRequest("responses", f"must be a list of texts or Generations, not {type(responses).__name__}")
        for i, response in enumerate(responses):
            if isinstance(response, str):  # a model writes tokens' bytes: only text with UTF-8 bytes
                check_text(f"responses[{i}]", response)
            elif not isinstance(response, Generation):
                raise InvalidRequest(f"responses[{i}]", f"must be a text or a Generation, not {type(response).__name__}")
        self.responses = list(responses)
        self.tool_call_envelope = tool_call_envelope
        self.calls: list[Request] = []

    async def _generate(self, request: Request) -> Generation:
        return self._answer(request)

    def _stream(self, request: Request) -> TextStream:

        async def produce(put: Callable[[str], None]) -> Generation:
            generation = self._answer(request)
            for start in range(0, len(generation.text), 4):
                put(generation.text[start : start + 4])
                await asyncio.sleep(0)
            return generation

        return TextStream(produce)

    def _answer(self, request: Request) -> Generation:
        self.calls.append(request)
        if not self.responses:
            raise RuntimeFailure(
                f"ScriptedRuntime has no response left for call {len(self.calls)}: "
                "give it one response per expected generation"
            )
        text = self.responses.pop(0)
        if isinstance(text, Generation):
            return text
        return held_to_request(request, text)


def held_to_request(request: Request, text: str) -> Generation:
    """`text` as a model's answer to `request`: one token per UTF-8 byte, cut at `max_tokens`
    (a character boundary; finish "length"), and a whole answer its grammar rejects raised as
    `GrammarIgnored`, as a server that ignored the grammar would."""
    prompt = render_plain(request.messages, request.tools)
    data = text.encode("utf-8")
    if len(data) > request.max_tokens:
        cut = data[: request.max_tokens].decode("utf-8", errors="ignore")
        return Generation(cut, "length", Usage(len(prompt.encode()), request.max_tokens))
    usage = Usage(len(prompt.encode()), len(data))
    if request.grammar is None:
        return Generation(text, "stop", usage)
    if not request.grammar.accepts(text):
        raise GrammarIgnored(
            f"scripted response {json.dumps(text)[:200]} is not a sentence of {request.grammar!r}",
            text=text,
        )
    return Generation(text, "grammar_complete", usage)


@dataclass(frozen=True)
class RequestInfo:
    """What a `FunctionRuntime`'s function is told of a request besides its messages: the
    tools shown (OpenAI function-tool dicts), the grammar the answer is held to, the settings,
    and which call this is (1 for the first)."""

    tools: list[dict[str, Any]] | None
    grammar: Grammar | None
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    call: int


AnswerFunction = Callable[[Messages, RequestInfo], "str | Generation | Awaitable[str | Generation]"]
"""`fn(messages, info)`: the answer's text (or a whole `Generation`), sync or async."""


class FunctionRuntime(Runtime):
    """Answers each call with what `fn(messages, info)` returns, so a test decides each answer
    from the conversation so far (a tool's result, the turn's grammar) rather than in advance.

    A text is held to the request as `ScriptedRuntime`'s are (tokens counted per byte, cut at
    `max_tokens`, a whole answer the grammar rejects raised as `GrammarIgnored`); a `Generation`
    is given as it is. `fn` may be sync or async; what it raises reaches the caller (an agent
    reports it as `ModelRequestFailed`, the messages kept). Every request is kept in `calls`.
    """

    name = "function"

    def __init__(self, fn: AnswerFunction, *, tool_call_envelope: ToolCallEnvelope = "json"):
        if not callable(fn):
            raise InvalidRequest("fn", f"must be a function of (messages, info), not {type(fn).__name__}")
        self.fn = fn
        self.tool_call_envelope = tool_call_envelope
        self.calls: list[Request] = []

    async def _generate(self, request: Request) -> Generation:
        return await self._answer(request)

    def _stream(self, request: Request) -> TextStream:

        async def produce(put: Callable[[str], None]) -> Generation:
            generation = await self._answer(request)
            for start in range(0, len(generation.text), 4):
                put(generation.text[start : start + 4])
                await asyncio.sleep(0)
            return generation

        return TextStream(produce)

    async def _answer(self, request: Request) -> Generation:
        self.calls.append(request)
        info = RequestInfo(request.tools, request.grammar, request.max_tokens, request.temperature,
                           request.top_p, request.seed, len(self.calls))
        answer = self.fn(request.messages, info)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, Generation):
            return answer
        if not isinstance(answer, str):
            raise RuntimeFailure(
                f"FunctionRuntime's function returned {type(answer).__name__} for call {info.call}, "
                "not the answer's text or a Generation"
            )
        try:
            check_text("answer", answer)
        except InvalidRequest as exc:
            raise RuntimeFailure(f"FunctionRuntime's answer to call {info.call} cannot be written: {exc}") from None
        return held_to_request(request, answer)

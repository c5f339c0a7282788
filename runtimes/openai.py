"""Any OpenAI-compatible server over HTTP (llama.cpp's server, vLLM, SGLang, `mlc_llm serve`).

The grammar travels in the form the server takes, named by the server (`dialect`): GBNF text in
llama.cpp's `grammar` field, in vLLM's `structured_outputs.grammar` or in SGLang's `ebnf`; or, for
any server that takes only schemas, the grammar's JSON Schema in `response_format`. Whatever
comes back is checked here in the way that fits the dialect (`_answer_check`), so a server that
ignored the grammar is reported, never trusted. Connections are pooled; connection errors, 5xx
and 429 are retried with exponential backoff; a 4xx is not. A stream that ends before the server
says why it finished is an error, never a half document passed on as whole.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal

import httpx

from grammar import Grammar

from ._chat import with_tool_instructions
from ._errors import (
    ConnectionFailure,
    GenerationTimeout,
    GrammarIgnored,
    InvalidRequest,
    ResponseTooLarge,
    RuntimeFailure,
    ServerError,
    StreamInterrupted,
)
from ._protocol import FinishReason, Generation, Request, Runtime, TextStream, TokenScore, ToolCallEnvelope, Usage
from ._answer import read_chunk, read_completion
from ._answer_check import verdict
from ._retry import with_retries
from ._sse import sse_data

Dialect = Literal["llama.cpp", "vllm", "sglang", "json_schema", "gbnf"]
DIALECTS = ("llama.cpp", "vllm", "sglang", "json_schema")
DIALECT_ALIASES = {"gbnf": "llama.cpp"}  # the name llama.cpp's dialect had first

MAX_RESPONSE_BYTES = 16 * 2**20
ERROR_BODY_SHOWN = 64 * 2**10  # of an error status's body, what is read and kept


def source_schema(g: Grammar) -> dict[str, Any] | bool:
    """The JSON Schema a grammar was built from, for servers that take schemas, not grammars."""
    schema = getattr(g, "schema", None)
    if schema is None:
        raise RuntimeFailure(
            f"{g!r} was not built from a JSON Schema, so the json_schema dialect cannot send it "
            "(free text, a preamble before calls, a reasoning span, a regex or GBNF have none); build it "
            "with grammar.from_json_schema, or use a dialect that sends GBNF: 'vllm', 'sglang', 'llama.cpp'"
        )
    return schema


class OpenAICompatible(Runtime):
    """A model behind an OpenAI-compatible HTTP API. The server cannot close a document at the
    token budget as a local decoder does (`steers_budget` is False).

    `base_url` is the server root or its `/v1` root. `timeout` bounds each attempt as a whole
    (seconds: sending, reading the answer, parsing it and checking it against the grammar);
    `max_retries` more attempts follow a retryable failure, `backoff`, 2·`backoff`, ... seconds
    apart. `max_response_bytes` bounds what one answer (or one whole stream) may send; past it
    reading stops with `ResponseTooLarge`.

    `scores=True` asks the server for `logprobs` (whole answers and streams): each token's
    log-probability as the server reports it, with no `masked_mass` (a server does not say what
    its grammar removed), and None where it sends none or they do not spell the answer. vLLM
    0.32 reports them after its grammar's mask (a forced token's is 0): the probability under
    the held model, not the free one a local runtime gives.
    """

    steers_budget = False

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        dialect: Dialect = "llama.cpp",
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_connections: int = 64,
        tool_call_envelope: ToolCallEnvelope = "json",
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ):
        dialect = DIALECT_ALIASES.get(dialect, dialect)  # type: ignore[assignment]
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(map(repr, DIALECTS))} (or 'gbnf'), not {dialect!r}")
        root = base_url.rstrip("/")
        self.base_url = root if root.endswith("/v1") else root + "/v1"
        self.model = model
        self.dialect = dialect
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_connections = max_connections
        if isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int) or max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be a positive integer, not {max_response_bytes!r}")
        self.max_response_bytes = max_response_bytes
        self.tool_call_envelope = tool_call_envelope
        self.name = f"openai:{model}@{self.base_url}"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # A pool belongs to the event loop that opened its connections.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    # --- the protocol ---------------------------------------------------------------------------

    async def _generate(self, request: Request) -> Generation:
        path, body = self._body(request, stream=False)
        return await with_retries(
            lambda: self._generate_once(request, path, body), retries=self.max_retries, backoff=self.backoff,
            retryable=_retryable, what=f"{self.name} request",
        )

    def _stream(self, request: Request) -> TextStream:
        path, body = self._body(request, stream=True)

        async def produce(put: Callable[[str], None]) -> Generation:
            sent: list[str] = []

            def emit(piece: str) -> None:
                sent.append(piece)
                put(piece)

            def retryable(exc: Exception) -> bool:
                return not sent and _retryable(exc)  # pieces already given out cannot be taken back

            return await with_retries(
                lambda: self._stream_once(request, path, body, emit), retries=self.max_retries,
                backoff=self.backoff, retryable=retryable, what=f"{self.name} streamed request",
            )

        return TextStream(produce)

    async def aclose(self) -> None:
        clients = list(self._clients.values())
        self._clients.clear()
        for client in clients:
            await client.aclose()

    # --- requests -------------------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._headers,
                timeout=httpx.Timeout(self.timeout),
                limits=httpx.Limits(
                    max_connections=self.max_connections, max_keepalive_connections=self.max_connections
                ),
            )
        return client

    def _body(self, request: Request, *, stream: bool) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if request.seed is not None:
            body["seed"] = request.seed
        if request.heal:
            raise InvalidRequest("heal", f"{self.name}: the server tokenizes the prompt itself, so it cannot be "
                                 "healed here; heal a raw prompt on a local runtime")
        if request.sampling != "masked":
            raise InvalidRequest("sampling", f"{self.name}: the server samples on its own, so "
                                 f"sampling={request.sampling!r} needs a local runtime")
        if request.scores:
            body["logprobs"] = True if not isinstance(request.messages, str) else 1
        if request.grammar is not None:
            span = request.grammar.reasoning
            if span is not None and span.max_tokens is not None:
                raise RuntimeFailure(
                    f"{self.name}: a reasoning span's token budget (max_tokens={span.max_tokens}) is kept by the "
                    "decoder, and a server decodes on its own; use a ReasoningSpan without max_tokens here"
                )
            body.update(self._grammar_fields(request.grammar))
        if isinstance(request.messages, str):
            body["prompt"] = request.messages
            return "/completions", body
        messages = request.messages
        if request.tools:  # shown as text: the grammar, not the server, decides the call format
            messages = with_tool_instructions(messages, request.tools, self.tool_call_envelope)
        body["messages"] = messages
        return "/chat/completions", body

    def _grammar_fields(self, g: Grammar) -> dict[str, Any]:
        """The request fields that carry the grammar to this dialect's server."""
        if self.dialect == "json_schema":
            return {"response_format": {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": source_schema(g), "strict": True},
            }}
        gbnf = g.to_gbnf()
        if self.dialect == "vllm":  # vLLM >= 0.10's StructuredOutputsParams; its xgrammar backend reads GBNF
            return {"structured_outputs": {"grammar": gbnf}}
        if self.dialect == "sglang":  # SGLang's ChatCompletionRequest/CompletionRequest `ebnf`
            return {"ebnf": gbnf}
        return {"grammar": gbnf}

    async def _generate_once(self, request: Request, path: str, body: dict[str, Any]) -> Generation:
        """One attempt, bounded as a whole by `timeout`: sending, reading, parsing and checking."""
        try:
            async with asyncio.timeout(self.timeout):
                async with self._client().stream("POST", path, json=body) as response:
                    await self._refuse_error_status(response)
                    data = await self._read_body(response)
                # Parsing and the grammar check are CPU work on up to max_response_bytes: done
                # beside the event loop, so the timeout still fires on time.
                return await asyncio.to_thread(self._finish_completion, request, data)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise GenerationTimeout(f"{self.name}: no answer within {self.timeout} s") from exc
        except httpx.TransportError as exc:
            raise ConnectionFailure(f"{self.name}: {type(exc).__name__}: {exc}") from exc

    def _finish_completion(self, request: Request, data: bytes) -> Generation:
        answer = read_completion(self._json(data, "the answer"), source=self.name)
        generation = self._checked(request, answer.text, answer.finish_reason, answer.usage or Usage(0, 0))
        if request.scores and answer.scores is not None:
            generation.token_scores = _spelling(answer.scores, answer.text)
        return generation

    async def _stream_once(self, request: Request, path: str, body: dict[str, Any],
                           emit: Callable[[str], None]) -> Generation:
        pieces: list[str] = []
        finish: str | None = None
        usage: Usage | None = None
        scored: list[TokenScore] | None = [] if request.scores else None
        try:
            async with asyncio.timeout(self.timeout):
                async with self._client().stream("POST", path, json=body) as response:
                    await self._refuse_error_status(response)
                    async for data in sse_data(self._read_lines(response)):
                        if data.strip() == "[DONE]":
                            break
                        chunk = read_chunk(self._json(data, "a stream event"), source=self.name)
                        usage = chunk.usage or usage
                        if scored is not None and chunk.scores is not None:
                            scored.extend(chunk.scores)
                        elif chunk.text:
                            scored = None  # a piece whose tokens went unscored: no scores rather than wrong ones
                        if chunk.text:
                            pieces.append(chunk.text)
                            emit(chunk.text)
                        finish = chunk.finish_reason or finish
                text = "".join(pieces)
                if finish is None:
                    raise StreamInterrupted(
                        f"{self.name}: the stream ended without a finish reason after {len(text)} characters",
                        text=text,
                    )
                if usage is None:  # the server did not report usage: one streamed piece is one token
                    usage = Usage(0, len(pieces))
                generation = await asyncio.to_thread(self._checked, request, text, finish, usage)
                if scored is not None:
                    generation.token_scores = _spelling(scored, text)
                return generation
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise GenerationTimeout(f"{self.name}: the stream did not finish within {self.timeout} s") from exc
        except httpx.TransportError as exc:
            raise StreamInterrupted(f"{self.name}: the stream broke: {type(exc).__name__}: {exc}",
                                    text="".join(pieces)) from exc

    def _checked(self, request: Request, text: str, server_finish: str | None, usage: Usage) -> Generation:
        """The generation as the server reported it, held to the grammar in the way that fits
        the dialect: a whole answer is `grammar_complete`; one cut at `max_tokens` is `length`
        only if the grammar can continue it; anything else is `GrammarIgnored`."""
        finish = _finish(server_finish)
        g = request.grammar
        if g is None:
            return Generation(text, finish, usage)
        schema = source_schema(g) if self.dialect == "json_schema" else None
        found = verdict(g, text, schema=schema)
        if found == "whole":
            return Generation(text, "grammar_complete", usage)
        if found == "prefix" and finish == "length":
            return Generation(text, "length", usage)  # cut by the budget: the caller decides
        held = "the schema sent" if schema is not None else f"the grammar sent ({self.dialect} dialect)"
        how = "cut at max_tokens, it is no prefix of" if finish == "length" else "it is no sentence of"
        raise GrammarIgnored(
            f"{self.name} did not hold its answer to {held}: {how} {g!r}: {json.dumps(text)[:300]}",
            text=text,
        )

    # --- reading answers, bounded -----------------------------------------------------------------

    async def _refuse_error_status(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        head = bytearray()
        async for piece in response.aiter_bytes():  # enough of an error body to show, no more
            head += piece
            if len(head) >= ERROR_BODY_SHOWN:
                break
        body = head[:ERROR_BODY_SHOWN].decode("utf-8", "replace")
        raise ServerError(
            f"{response.request.method} {response.request.url} answered {response.status_code}: {body[:500]}",
            status=response.status_code,
            body=body,
        )

    def _too_large(self, what: str) -> ResponseTooLarge:
        return ResponseTooLarge(
            f"{self.name}: {what} is longer than max_response_bytes={self.max_response_bytes}; reading stopped there",
            max_bytes=self.max_response_bytes,
        )

    async def _read_body(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_response_bytes:
            raise self._too_large(f"the answer ({declared} bytes declared)")
        data = bytearray()
        async for piece in response.aiter_bytes():
            data += piece
            if len(data) > self.max_response_bytes:
                raise self._too_large("the answer")
        return bytes(data)

    async def _read_lines(self, response: httpx.Response) -> AsyncIterator[str]:
        """The stream's lines, its bytes counted against `max_response_bytes` as they come."""
        buffer = bytearray()
        read = 0
        async for piece in response.aiter_bytes():
            read += len(piece)
            if read > self.max_response_bytes:
                raise self._too_large("the stream")
            scan = len(buffer)
            buffer += piece
            while (end := buffer.find(b"\n", scan)) >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                scan = 0
                yield self._text(line, "a stream line")
        if buffer:
            yield self._text(bytes(buffer), "a stream line")

    def _text(self, data: bytes, what: str) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ServerError(f"{self.name}: {what} is not UTF-8: {exc}") from exc

    def _json(self, data: bytes | str, what: str) -> Any:
        try:
            return json.loads(data)
        except RecursionError as exc:
            raise ServerError(f"{self.name}: {what} nests too deep to parse") from exc
        except ValueError as exc:  # not JSON, not UTF-8, or an integer past Python's digit limit
            shown = data[:200] if isinstance(data, str) else data[:200].decode("utf-8", "replace")
            raise ServerError(f"{self.name}: {what} is not JSON ({exc}): {shown!r}") from exc


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, ServerError):
        return exc.status is not None and (exc.status >= 500 or exc.status == 429)
    return isinstance(exc, ConnectionFailure)


def _finish(server_finish: str | None) -> FinishReason:
    return "length" if server_finish == "length" else "stop"


def _spelling(scores: list[TokenScore], text: str) -> list[TokenScore] | None:
    """The scores of the tokens that spell `text`: a server also lists the end-of-turn token it
    stopped on (vLLM: `<|im_end|>`), which is no part of the answer; None where they do not
    spell it."""
    data = text.encode("utf-8")
    kept, spelled = [], 0
    for score in scores:
        if spelled == len(data):
            break
        kept.append(score)
        spelled += len(score.bytes)
    return kept if b"".join(s.bytes for s in kept) == data else None

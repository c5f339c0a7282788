"""Any OpenAI-compatible server over HTTP (llama.cpp's server, vLLM, SGLang, `mlc_llm serve`).

The grammar travels in the form the server takes (`dialect`): GBNF text in a `grammar` field
(llama.cpp) or a JSON schema in `response_format` (vLLM, SGLang, MLC). Whatever comes back is
checked against the grammar here, so a server that ignored it is reported, never trusted.
Connections are pooled; connection errors, 5xx and 429 are retried with exponential backoff;
a 4xx is not. A stream that ends before the server says why it finished is an error, never a
half document passed on as whole.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable
from typing import Any, Literal

import httpx

from grammar import Grammar

from ._chat import with_tool_instructions
from ._errors import (
    ConnectionFailure,
    GenerationTimeout,
    GrammarIgnored,
    RuntimeFailure,
    ServerError,
    StreamInterrupted,
)
from ._protocol import FinishReason, Generation, Request, Runtime, TextStream, ToolCallEnvelope, Usage
from ._retry import with_retries
from ._sse import sse_data

Dialect = Literal["gbnf", "json_schema"]


def source_schema(g: Grammar) -> dict[str, Any] | bool:
    """The JSON Schema a grammar was built from, for servers that take schemas, not grammars."""
    schema = getattr(g, "schema", None)
    if schema is None:
        raise RuntimeFailure(
            f"{g!r} was not built from a JSON Schema, so the json_schema dialect cannot send it; "
            "build it with grammar.from_json_schema, or use dialect='gbnf' with a server that takes GBNF"
        )
    return schema


class OpenAICompatible(Runtime):
    """A model behind an OpenAI-compatible HTTP API.

    `base_url` is the server root or its `/v1` root. `timeout` bounds each attempt as a whole
    (seconds); `max_retries` more attempts follow a retryable failure, `backoff`, 2·`backoff`,
    ... seconds apart.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        dialect: Dialect = "gbnf",
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_connections: int = 64,
        tool_call_envelope: ToolCallEnvelope = "json",
    ):
        if dialect not in ("gbnf", "json_schema"):
            raise ValueError(f"dialect must be 'gbnf' or 'json_schema', not {dialect!r}")
        root = base_url.rstrip("/")
        self.base_url = root if root.endswith("/v1") else root + "/v1"
        self.model = model
        self.dialect = dialect
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_connections = max_connections
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
        answer = await with_retries(
            lambda: self._post(path, body), retries=self.max_retries, backoff=self.backoff,
            retryable=_retryable, what=f"{self.name} request",
        )
        choice = _first_choice(answer)
        text = (choice.get("message") or {}).get("content") or choice.get("text") or ""
        usage = answer.get("usage") or {}
        return _checked(request, text, choice.get("finish_reason"),
                        Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)))

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
        if request.grammar is not None:
            span = request.grammar.reasoning
            if span is not None and span.max_tokens is not None:
                raise RuntimeFailure(
                    f"{self.name}: a reasoning span's token budget (max_tokens={span.max_tokens}) is kept by the "
                    "decoder, and a server decodes on its own; use a ReasoningSpan without max_tokens here"
                )
            if self.dialect == "gbnf":
                body["grammar"] = request.grammar.to_gbnf()
            else:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": source_schema(request.grammar), "strict": True},
                }
        if isinstance(request.messages, str):
            body["prompt"] = request.messages
            return "/completions", body
        messages = request.messages
        if request.tools:  # shown as text: the grammar, not the server, decides the call format
            messages = with_tool_instructions(messages, request.tools, self.tool_call_envelope)
        body["messages"] = messages
        return "/chat/completions", body

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with asyncio.timeout(self.timeout):
                response = await self._client().post(path, json=body)
                _raise_for_status(response, response.text)
                return response.json()
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise GenerationTimeout(f"{self.name}: no answer within {self.timeout} s") from exc
        except httpx.TransportError as exc:
            raise ConnectionFailure(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise ServerError(f"{self.name}: the answer is not JSON: {exc}") from exc

    async def _stream_once(self, request: Request, path: str, body: dict[str, Any],
                           emit: Callable[[str], None]) -> Generation:
        pieces: list[str] = []
        finish: str | None = None
        usage: Usage | None = None
        try:
            async with asyncio.timeout(self.timeout):
                async with self._client().stream("POST", path, json=body) as response:
                    if response.status_code >= 400:
                        _raise_for_status(response, (await response.aread()).decode("utf-8", "replace"))
                    async for data in sse_data(response.aiter_lines()):
                        if data.strip() == "[DONE]":
                            break
                        chunk = json.loads(data)
                        if "error" in chunk:
                            raise ServerError(f"{self.name}: error in stream: {chunk['error']}", body=data)
                        if chunk.get("usage"):
                            usage = Usage(chunk["usage"].get("prompt_tokens", 0),
                                          chunk["usage"].get("completion_tokens", 0))
                        for choice in chunk.get("choices") or ():
                            piece = (choice.get("delta") or {}).get("content") or choice.get("text") or ""
                            if piece:
                                pieces.append(piece)
                                emit(piece)
                            finish = choice.get("finish_reason") or finish
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise GenerationTimeout(f"{self.name}: the stream did not finish within {self.timeout} s") from exc
        except httpx.TransportError as exc:
            raise StreamInterrupted(f"{self.name}: the stream broke: {type(exc).__name__}: {exc}",
                                    text="".join(pieces)) from exc
        except json.JSONDecodeError as exc:
            raise ServerError(f"{self.name}: a stream event is not JSON: {exc}") from exc
        text = "".join(pieces)
        if usage is None:  # the server did not report usage: one streamed piece is one token
            usage = Usage(0, len(pieces))
        if finish is None:
            raise StreamInterrupted(
                f"{self.name}: the stream ended without a finish reason after {len(text)} characters",
                text=text,
            )
        return _checked(request, text, finish, usage)


def _first_choice(answer: dict[str, Any]) -> dict[str, Any]:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not choices:
        raise ServerError(f"the answer has no choices: {json.dumps(answer)[:300]}")
    return choices[0]


def _raise_for_status(response: httpx.Response, body: str) -> None:
    if response.status_code < 400:
        return
    raise ServerError(
        f"{response.request.method} {response.request.url} answered {response.status_code}: {body[:500]}",
        status=response.status_code,
        body=body,
    )


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, ServerError):
        return exc.status is not None and (exc.status >= 500 or exc.status == 429)
    return isinstance(exc, ConnectionFailure)


def _checked(request: Request, text: str, server_finish: str | None, usage: Usage) -> Generation:
    """The generation as the server reported it, with the grammar enforced on whole answers."""
    finish: FinishReason = "length" if server_finish == "length" else "stop"
    if request.grammar is None:
        return Generation(text, finish, usage)
    if request.grammar.accepts(text):
        return Generation(text, "grammar_complete", usage)
    if finish == "length":
        return Generation(text, "length", usage)  # cut by the budget: the caller decides
    raise GrammarIgnored(
        f"the server's answer is not a sentence of the requested grammar {request.grammar!r}: "
        f"{json.dumps(text)[:300]}",
        text=text,
    )

"""The HTTP runtime against small misbehaving servers on 127.0.0.1: every fault ends in a typed
error or a retry, never a hang or a half document passed on as valid."""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from bench._servers import free_port

import grammar
from grammar import Grammar
from grammar._ir import chars, lit, repeat, seq
from runtimes import (
    ConnectionFailure,
    GenerationTimeout,
    GrammarIgnored,
    OpenAICompatible,
    RuntimeFailure,
    ServerError,
    StreamInterrupted,
)

COUNT = Grammar({"root": seq(lit('{"n":'), repeat(chars([(48, 57)]), 1, 4), lit("}"))})


def completion(text: str, finish: str | None = "stop") -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3}}


def chunk(text: str | None = None, finish: str | None = None) -> bytes:
    delta = {"content": text} if text is not None else {}
    event = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(event)}\n\n".encode()


Behaviour = Callable[[BaseHTTPRequestHandler, dict, int], None]


class QuietServer(ThreadingHTTPServer):
    """Clients that hang up early (timeouts, cut streams) are expected here, not errors."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeServer:
    """An HTTP server whose every answer is written by `behaviour(handler, body, hit)`."""

    def __init__(self, behaviour: Behaviour):
        self.behaviour = behaviour
        self.bodies: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                server.behaviour(self, body, len(server.bodies))

            def log_message(self, *args):
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Behaviour], FakeServer]]:
    started: list[FakeServer] = []

    def start(behaviour: Behaviour) -> FakeServer:
        started.append(FakeServer(behaviour))
        return started[-1]

    yield start
    for server in started:
        server.close()


def reply(handler: BaseHTTPRequestHandler, status: int, payload: dict | str) -> None:
    data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def runtime(url: str, **options) -> OpenAICompatible:
    options.setdefault("backoff", 0.01)
    return OpenAICompatible(url, model="test", **options)


CHAT = [{"role": "user", "content": "count"}]


async def test_a_valid_answer_is_checked_against_the_grammar(serve):
    server = serve(lambda h, body, hit: reply(h, 200, completion('{"n":42}')))
    async with runtime(server.url) as rt:
        gen = await rt.generate(CHAT, grammar=COUNT, max_tokens=20, seed=3)
    assert (gen.text, gen.finish_reason) == ('{"n":42}', "grammar_complete")
    assert (gen.usage.prompt_tokens, gen.usage.completion_tokens) == (7, 3)
    sent = server.bodies[0]
    assert sent["grammar"] == COUNT.to_gbnf() and sent["messages"] == CHAT and sent["seed"] == 3
    assert sent["max_tokens"] == 20 and sent["stream"] is False


async def test_an_answer_the_grammar_rejects_is_reported(serve):
    server = serve(lambda h, body, hit: reply(h, 200, completion("forty-two")))
    async with runtime(server.url) as rt:
        with pytest.raises(GrammarIgnored) as caught:
            await rt.generate(CHAT, grammar=COUNT)
    assert caught.value.text == "forty-two"


async def test_an_answer_cut_by_the_budget_is_length_not_an_error(serve):
    server = serve(lambda h, body, hit: reply(h, 200, completion('{"n":4', "length")))
    async with runtime(server.url) as rt:
        gen = await rt.generate(CHAT, grammar=COUNT, max_tokens=3)
    assert gen.finish_reason == "length"


async def test_5xx_and_429_are_retried_then_succeed(serve):
    statuses = {1: 500, 2: 429, 3: 503}
    server = serve(lambda h, body, hit: reply(h, statuses[hit], {"error": "busy"}) if hit in statuses
                   else reply(h, 200, completion('{"n":1}')))
    async with runtime(server.url, max_retries=3) as rt:
        gen = await rt.generate(CHAT, grammar=COUNT)
    assert gen.text == '{"n":1}' and len(server.bodies) == 4


async def test_5xx_after_the_last_retry_is_a_server_error(serve):
    server = serve(lambda h, body, hit: reply(h, 502, {"error": "down"}))
    async with runtime(server.url, max_retries=2) as rt:
        with pytest.raises(ServerError) as caught:
            await rt.generate(CHAT)
    assert caught.value.status == 502 and len(server.bodies) == 3


async def test_4xx_is_never_retried(serve):
    server = serve(lambda h, body, hit: reply(h, 400, {"error": "bad grammar"}))
    async with runtime(server.url, max_retries=3) as rt:
        with pytest.raises(ServerError, match="bad grammar") as caught:
            await rt.generate(CHAT, grammar=COUNT)
    assert caught.value.status == 400 and len(server.bodies) == 1


async def test_connection_refused_is_a_connection_failure():
    async with runtime(f"http://127.0.0.1:{free_port()}", max_retries=2) as rt:
        with pytest.raises(ConnectionFailure):
            await rt.generate(CHAT)
        with pytest.raises(ConnectionFailure):
            [piece async for piece in rt.stream(CHAT)]


async def test_a_server_slower_than_the_timeout_is_a_generation_timeout(serve):
    def slow(handler, body, hit):
        time.sleep(1.5)
        reply(handler, 200, completion('{"n":1}'))

    server = serve(slow)
    async with runtime(server.url, timeout=0.2, max_retries=0) as rt:
        with pytest.raises(GenerationTimeout):
            await rt.generate(CHAT)
        with pytest.raises(GenerationTimeout):
            [piece async for piece in rt.stream(CHAT)]


def stream_events(events: list[bytes]) -> Behaviour:
    def behaviour(handler, body, hit):
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        for event in events:
            handler.wfile.write(event)
            handler.wfile.flush()
        handler.close_connection = True

    return behaviour


async def test_a_stream_delivers_pieces_and_its_generation(serve):
    events = [chunk('{"n":'), chunk("12"), chunk("}"), chunk(None, "stop"), b"data: [DONE]\n\n"]
    server = serve(stream_events(events))
    async with runtime(server.url) as rt:
        stream = rt.stream(CHAT, grammar=COUNT)
        pieces = [piece async for piece in stream]
    assert pieces == ['{"n":', "12", "}"]
    assert stream.generation.finish_reason == "grammar_complete"
    assert server.bodies[0]["stream"] is True


async def test_a_stream_cut_mid_document_is_an_error_not_a_document(serve):
    server = serve(stream_events([chunk('{"n":'), chunk("12")]))
    async with runtime(server.url) as rt:
        stream = rt.stream(CHAT, grammar=COUNT)
        with pytest.raises(StreamInterrupted) as caught:
            [piece async for piece in stream]
    assert caught.value.text == '{"n":12'
    assert stream.generation is None
    assert len(server.bodies) == 1  # pieces were already handed out: no silent retry


async def test_a_stream_cut_mid_event_is_an_error(serve):
    server = serve(stream_events([chunk('{"n":1}'), b'data: {"choices": [{"index": 0, "delta": {}, "finish_']))
    async with runtime(server.url) as rt:
        with pytest.raises(StreamInterrupted):
            [piece async for piece in rt.stream(CHAT, grammar=COUNT)]


async def test_a_stream_that_fails_before_any_piece_is_retried(serve):
    good = stream_events([chunk('{"n":7}'), chunk(None, "stop"), b"data: [DONE]\n\n"])
    server = serve(lambda h, body, hit: reply(h, 500, {"error": "warming up"}) if hit == 1 else good(h, body, hit))
    async with runtime(server.url) as rt:
        assert "".join([p async for p in rt.stream(CHAT, grammar=COUNT)]) == '{"n":7}'
    assert len(server.bodies) == 2


async def test_a_streamed_answer_the_grammar_rejects_is_reported(serve):
    server = serve(stream_events([chunk("nope"), chunk(None, "stop"), b"data: [DONE]\n\n"]))
    async with runtime(server.url) as rt:
        with pytest.raises(GrammarIgnored):
            [piece async for piece in rt.stream(CHAT, grammar=COUNT)]


async def test_plain_strings_use_the_completions_endpoint(serve):
    paths: list[str] = []

    def behaviour(handler, body, hit):
        paths.append(handler.path)
        reply(handler, 200, {"choices": [{"index": 0, "text": " Paris", "finish_reason": "length"}]})

    server = serve(behaviour)
    async with runtime(server.url + "/v1") as rt:
        gen = await rt.generate("The capital of France is", max_tokens=2)
    assert paths == ["/v1/completions"] and server.bodies[0]["prompt"] == "The capital of France is"
    assert (gen.text, gen.finish_reason) == (" Paris", "length")


async def test_tools_are_listed_in_a_system_message(serve):
    server = serve(lambda h, body, hit: reply(h, 200, completion("ok")))
    tool = {"type": "function", "function": {"name": "lookup", "description": "Look up.",
                                             "parameters": {"type": "object", "properties": {}}}}
    async with runtime(server.url) as rt:
        await rt.generate(CHAT, tools=[tool])
    sent = server.bodies[0]["messages"]
    assert sent[0]["role"] == "system" and "lookup: Look up." in sent[0]["content"] and sent[1:] == CHAT
    assert "tools" not in server.bodies[0]


async def test_json_schema_dialect_sends_the_source_schema(serve):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": False}
    server = serve(lambda h, body, hit: reply(h, 200, completion('{"n":5}')))
    async with runtime(server.url, dialect="json_schema") as rt:
        gen = await rt.generate(CHAT, grammar=grammar.from_json_schema(schema))
        with pytest.raises(RuntimeFailure, match="not built from a JSON Schema"):
            await rt.generate(CHAT, grammar=COUNT)
    assert gen.finish_reason == "grammar_complete"
    sent = server.bodies[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == schema and sent["json_schema"]["strict"]
    assert "grammar" not in server.bodies[0]


# --- dialects: the grammar in the field each server reads, the check that fits it -----------


GRAMMAR_FIELDS = {"grammar", "structured_outputs", "ebnf", "response_format"}


@pytest.mark.parametrize(
    "dialect, key, field",
    [("llama.cpp", "grammar", lambda b: b["grammar"]), ("gbnf", "grammar", lambda b: b["grammar"]),
     ("vllm", "structured_outputs", lambda b: b["structured_outputs"]["grammar"]),
     ("sglang", "ebnf", lambda b: b["ebnf"])],
)
async def test_each_grammar_dialect_sends_gbnf_where_its_server_reads_it(serve, dialect, key, field):
    server = serve(lambda h, body, hit: reply(h, 200, completion('{"n":42}')))
    async with runtime(server.url, dialect=dialect) as rt:
        gen = await rt.generate(CHAT, grammar=COUNT)
    assert gen.finish_reason == "grammar_complete" and field(server.bodies[0]) == COUNT.to_gbnf()
    assert GRAMMAR_FIELDS & set(server.bodies[0]) == {key}


def test_gbnf_is_the_old_name_of_the_llama_cpp_dialect_and_others_are_refused():
    assert OpenAICompatible("http://127.0.0.1:1", model="m", dialect="gbnf").dialect == "llama.cpp"
    assert OpenAICompatible("http://127.0.0.1:1", model="m").dialect == "llama.cpp"
    with pytest.raises(ValueError, match="'vllm'"):
        OpenAICompatible("http://127.0.0.1:1", model="m", dialect="guided")


@pytest.mark.parametrize("streamed", [False, True])
async def test_an_answer_cut_where_the_grammar_cannot_go_is_ignored_not_length(serve, streamed):
    behaviour = (stream_events([chunk("Sure! The"), chunk(None, "length"), b"data: [DONE]\n\n"]) if streamed
                 else lambda h, body, hit: reply(h, 200, completion("Sure! The", "length")))
    server = serve(behaviour)
    async with runtime(server.url, dialect="vllm") as rt:
        with pytest.raises(GrammarIgnored, match="cut at max_tokens") as caught:
            if streamed:
                [piece async for piece in rt.stream(CHAT, grammar=COUNT, max_tokens=3)]
            else:
                await rt.generate(CHAT, grammar=COUNT, max_tokens=3)
    assert caught.value.text == "Sure! The"


PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}


@pytest.mark.parametrize(
    "text, finish, outcome",
    [
        ('{\n  "name": "Ann Smith",\n  "age": 31\n}', "stop", "grammar_complete"),
        ('{"age": 31, "name": "Ann"}', "stop", "grammar_complete"),  # valid: the schema fixes no order
        ('{\n  "name": "Ann   Smith",\n  "ag', "length", "length"),
        ('{"name": "Ann", "age": "31"}', "stop", GrammarIgnored),
        ("Ann is 31.", "stop", GrammarIgnored),
        ("Ann is", "length", GrammarIgnored),
        ('{"name": "Ann", "age": 3 1', "length", GrammarIgnored),  # "3 1" is no JSON number
    ],
)
async def test_the_json_schema_dialect_checks_by_the_schema_with_the_servers_blanks(serve, text, finish, outcome):
    server = serve(lambda h, body, hit: reply(h, 200, completion(text, finish)))
    async with runtime(server.url, dialect="json_schema") as rt:
        if isinstance(outcome, str):
            gen = await rt.generate(CHAT, grammar=grammar.from_json_schema(PERSON), max_tokens=30)
            assert gen.finish_reason == outcome and gen.text == text
        else:
            with pytest.raises(outcome):
                await rt.generate(CHAT, grammar=grammar.from_json_schema(PERSON), max_tokens=30)


async def test_an_agent_with_tools_works_in_the_json_schema_dialect(serve):
    from pydantic import BaseModel

    from agentkit import Agent, tool

    class Total(BaseModel):
        total: int

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    answers = ['{\n  "name": "add",\n  "arguments": {"a": 2, "b": 3}\n}', '{\n  "total": 5\n}']
    server = serve(lambda h, body, hit: reply(h, 200, completion(answers[hit - 1])))
    async with runtime(server.url, dialect="json_schema") as rt:
        result = await Agent([add], runtime=rt, output_type=Total, tool_choice="required").run("2 plus 3?")
    assert result.output == Total(total=5)
    assert [m["content"] for m in result.messages if m["role"] == "tool"] == ["5"]
    first = server.bodies[0]["response_format"]["json_schema"]["schema"]
    call = first["anyOf"][0]
    assert call["properties"]["name"] == {"const": "add"} and call["required"] == ["name", "arguments"]
    second = server.bodies[1]["response_format"]["json_schema"]["schema"]
    assert len(second["anyOf"]) == 2  # a call, or the typed answer


async def test_a_turn_that_may_be_free_text_is_refused_in_the_json_schema_dialect(serve):
    from agentkit import Agent, ModelRequestFailed, tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    server = serve(lambda h, body, hit: reply(h, 200, completion("5")))
    async with runtime(server.url, dialect="json_schema") as rt:
        with pytest.raises(ModelRequestFailed, match="not built from a JSON Schema") as caught:
            await Agent([add], runtime=rt).run("2 plus 3?")
    assert caught.value.messages and not server.bodies  # refused before sending


def with_logprobs(text: str, pieces: list[str], logprobs: object) -> dict:
    answer = completion(text)
    answer["choices"][0]["logprobs"] = logprobs if logprobs is not None else {
        "content": [{"token": p, "logprob": -0.5 * i, "bytes": list(p.encode())} for i, p in enumerate(pieces)]}
    return answer


async def test_scores_come_from_the_servers_logprobs(serve):
    # vLLM lists the end-of-turn token it stopped on too: no part of the answer's text.
    server = serve(lambda h, body, hit: reply(h, 200, with_logprobs('{"n":42}', ['{"n":', "4", "2", "}", "<|im_end|>"],
                                                                    None)))
    async with runtime(server.url) as rt:
        gen = await rt.generate(CHAT, grammar=COUNT, max_tokens=20, scores=True)
        plain = await rt.generate(CHAT, grammar=COUNT, max_tokens=20)
    assert server.bodies[0]["logprobs"] is True and "logprobs" not in server.bodies[1]
    assert [(s.bytes, s.logprob, s.masked_mass) for s in gen.token_scores] == [
        (b'{"n":', 0.0, None), (b"4", -0.5, None), (b"2", -1.0, None), (b"}", -1.5, None)]
    assert plain.token_scores is None


@pytest.mark.parametrize("logprobs", [{"content": [{"token": 3, "logprob": -1}]}, {"content": "x"}, [], {},
                                      {"content": [{"token": '{"n":4', "logprob": -1.0}]}])
async def test_logprobs_of_another_shape_give_no_scores_and_no_failure(serve, logprobs):
    server = serve(lambda h, body, hit: reply(h, 200, with_logprobs('{"n":42}', [], logprobs)))
    async with runtime(server.url) as rt:
        gen = await rt.generate(CHAT, grammar=COUNT, max_tokens=20, scores=True)
    assert gen.text == '{"n":42}' and gen.token_scores is None


def scored_chunk(text: str, logprob: float | None, finish: str | None = None, token: str | None = None) -> bytes:
    """A stream event adding `text`, with its token's logprob (`token`: the token, where it is
    not the text, as the end-of-turn token a server lists after an empty last piece)."""
    choice: dict = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
    if logprob is not None:
        spelled = text if token is None else token
        choice["logprobs"] = {"content": [{"token": spelled, "logprob": logprob, "bytes": list(spelled.encode())}]}
    return f"data: {json.dumps({'choices': [choice]})}\n\n".encode()


async def test_a_streams_scores_are_gathered_from_its_chunks(serve):
    events = [scored_chunk('{"n":', -0.1), scored_chunk("1", -0.5), scored_chunk("2", -0.25), scored_chunk("}", 0.0),
              scored_chunk("", 0.0, "stop", token="<|im_end|>"), b"data: [DONE]\n\n"]
    server = serve(stream_events(events))
    async with runtime(server.url) as rt:
        stream = rt.stream(CHAT, grammar=COUNT, scores=True)
        assert "".join([piece async for piece in stream]) == '{"n":12}'
    got = stream.generation
    assert server.bodies[0]["logprobs"] is True
    assert got is not None and [s.logprob for s in got.token_scores] == [-0.1, -0.5, -0.25, 0.0]


async def test_a_stream_with_a_piece_left_unscored_gives_no_scores(serve):
    events = [scored_chunk('{"n":', -0.1), scored_chunk("12", None), scored_chunk("}", 0.0, "stop"), b"data: [DONE]\n\n"]
    server = serve(stream_events(events))
    async with runtime(server.url) as rt:
        stream = rt.stream(CHAT, grammar=COUNT, scores=True)
        assert [piece async for piece in stream] == ['{"n":', "12", "}"]
    assert stream.generation.token_scores is None


# --- logprobs past a float's range (issue #65): an extra, never a failure ---------------------

FOUR_HUNDRED_DIGITS = "9" * 400


def with_raw_logprob(text: str, raw: str) -> str:
    """An answer whose one token's logprob is the JSON number text `raw`, as a server may write it."""
    answer = with_logprobs(text, [], {"content": [{"token": text, "logprob": "@", "bytes": list(text.encode())}]})
    return json.dumps(answer).replace('"@"', raw)


@pytest.mark.parametrize("raw, read", [(f"-{FOUR_HUNDRED_DIGITS}", -math.inf), (FOUR_HUNDRED_DIGITS, 0.0),
                                       ("-1e400", -math.inf), ("NaN", None)])
async def test_a_logprob_past_a_floats_range_is_its_limit_and_nan_is_no_score(serve, raw, read):
    server = serve(lambda h, body, hit: reply(h, 200, with_raw_logprob('{"n":42}', raw)))
    async with runtime(server.url) as rt:
        gen = await rt.generate(CHAT, grammar=COUNT, max_tokens=20, scores=True)
    assert gen.text == '{"n":42}'
    assert (None if gen.token_scores is None else [s.logprob for s in gen.token_scores]) == (
        None if read is None else [read])


async def test_a_streamed_logprob_of_four_hundred_digits_is_no_failure(serve):
    events = [scored_chunk('{"n":', -0.1).replace(b"-0.1", f"-{FOUR_HUNDRED_DIGITS}".encode()),
              scored_chunk("1}", -0.5, "stop"), b"data: [DONE]\n\n"]
    server = serve(stream_events(events))
    async with runtime(server.url) as rt:
        stream = rt.stream(CHAT, grammar=COUNT, scores=True)
        assert "".join([piece async for piece in stream]) == '{"n":1}'
    assert [s.logprob for s in stream.generation.token_scores] == [-math.inf, -0.5]


async def test_extract_with_confidence_reads_a_servers_four_hundred_digit_logprob(serve):
    from pydantic import BaseModel

    from agentkit import aextract

    class Count(BaseModel):
        n: int

    server = serve(lambda h, body, hit: reply(h, 200, with_raw_logprob('{"n":42}', f"-{FOUR_HUNDRED_DIGITS}")))
    async with runtime(server.url) as rt:
        found = await aextract(Count, "forty-two", runtime=rt, confidence=True)
    assert found.value == Count(n=42) and found.fields["/n"].probability == 0.0


async def test_a_temperature_below_the_greedy_floor_is_sent_as_zero(serve):
    server = serve(lambda h, body, hit: reply(h, 200, completion('{"n":1}')))
    async with runtime(server.url) as rt:
        await rt.generate(CHAT, grammar=COUNT, temperature=1e-308)
    assert server.bodies[0]["temperature"] == 0.0

"""The HTTP runtime against a hostile server: answers of any size, shape, status and encoding
end in a result or one of the runtime's typed errors, within its bounds on bytes and time, never
a raw exception, a hang or a client that reads without end."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from hostile_server import HostileServer, Reply, answer, stream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit import Agent, RunError
from grammar import Grammar
from grammar._ir import chars, lit, repeat, seq
from runtimes import (
    GenerationTimeout,
    MalformedAnswer,
    OpenAICompatible,
    ResponseTooLarge,
    RuntimeFailure,
    ServerError,
)
from runtimes._answer import read_chunk, read_completion

COUNT = Grammar({"root": seq(lit('{"n":'), repeat(chars([(48, 57)]), 1, 4), lit("}"))})
CHAT = [{"role": "user", "content": "count"}]
LIMIT = 256 * 2**10  # the client's max_response_bytes in these tests


def completion(content: object, finish: object = "stop", usage: object = None) -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": usage if usage is not None else {"prompt_tokens": 1, "completion_tokens": 1}}


def event(payload: object) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


@pytest.fixture(scope="module")
def server():
    with HostileServer() as running:
        yield running


def runtime(url: str, **options) -> OpenAICompatible:
    options = {"timeout": 2.0, "max_retries": 1, "backoff": 0.0, "max_response_bytes": LIMIT, **options}
    return OpenAICompatible(url, model="test", **options)


async def generate(server: HostileServer, reply: Reply, *, streamed: bool = False, g: Grammar | None = COUNT, **options):
    server.reply = reply
    async with runtime(server.url, **options) as rt:
        if streamed:
            s = rt.stream(CHAT, grammar=g, max_tokens=8)
            text = "".join([piece async for piece in s])
            assert s.generation is not None and s.generation.text == text
            return s.generation
        return await rt.generate(CHAT, grammar=g, max_tokens=8)


# --- bounds: bytes and time (#35, 5) ---------------------------------------------------------


async def test_a_content_past_the_byte_bound_stops_reading(server):
    body = json.dumps(completion("x" * (4 * LIMIT))).encode()
    with pytest.raises(ResponseTooLarge) as caught:
        await generate(server, answer(200, body))
    assert caught.value.max_bytes == LIMIT and "max_response_bytes=262144" in str(caught.value)


async def test_an_endless_body_without_a_length_stops_at_the_bound(server):
    endless = Reply(["HTTP/1.1 200 OK", "Content-Type: application/json", "Connection: close"],
                    [b'{"choices": [{"message": {"content": "', b"x" * 65536], repeat=True)
    with pytest.raises(ResponseTooLarge):
        await generate(server, endless)


async def test_a_declared_length_past_the_bound_is_refused_before_reading(server):
    with pytest.raises(ResponseTooLarge, match="declared"):
        await generate(server, answer(200, b"{}", length=LIMIT + 1))


@pytest.mark.parametrize("line", [b"data: " + b"x" * 65536, b"data: " + b"x" * 1000 + b"\n"])
async def test_an_endless_stream_stops_at_the_bound(server, line):
    with pytest.raises(ResponseTooLarge, match="the stream"):
        await generate(server, stream([event({"choices": [{"delta": {"content": '{"n":'}}]}), line], repeat=True),
                       streamed=True)


async def test_an_error_body_is_read_only_as_far_as_it_is_shown(server):
    endless = Reply(["HTTP/1.1 400 Bad", "Content-Type: text/plain", "Connection: close"], [b"e" * 65536], repeat=True)
    with pytest.raises(ServerError) as caught:
        await generate(server, endless)
    assert caught.value.status == 400 and len(caught.value.body) <= 64 * 2**10


async def test_the_grammar_check_runs_within_the_timeout(server, monkeypatch):
    slow_check = Grammar.accepts

    def accepts(self, text):
        time.sleep(1.5)  # a check as slow as one over a huge answer
        return slow_check(self, text)

    monkeypatch.setattr(Grammar, "accepts", accepts)
    for streamed in (False, True):
        reply = (stream([event({"choices": [{"delta": {"content": '{"n":1}'}, "finish_reason": "stop"}]})])
                 if streamed else answer(200, json.dumps(completion('{"n":1}')).encode()))
        with pytest.raises(GenerationTimeout):
            await generate(server, reply, streamed=streamed, timeout=0.3)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "16"])
def test_the_byte_bound_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="max_response_bytes"):
        OpenAICompatible("http://127.0.0.1:1", model="m", max_response_bytes=bad)


# --- shapes: one validating reader (#35, 6) --------------------------------------------------


@pytest.mark.parametrize(
    "payload, path",
    [
        ({"choices": ["hello"]}, "choices[0]"),
        ({"choices": [{"message": "hello"}]}, "choices[0].message"),
        (completion(123), "choices[0].message.content"),
        (completion([{"type": "image_url", "image_url": {}}]), "choices[0].message.content[0].type"),
        (completion([{"type": "text", "text": 5}]), "choices[0].message.content[0].text"),
        (completion(["a"]), "choices[0].message.content[0]"),
        (completion("ok", finish=3), "choices[0].finish_reason"),
        (completion("ok", usage="lots"), "usage"),
        (completion("ok", usage={"prompt_tokens": "3"}), "usage.prompt_tokens"),
        (completion("ok", usage={"completion_tokens": True}), "usage.completion_tokens"),
        ({"choices": []}, "choices"),
        ({"choices": {"0": {}}}, "choices"),
        (["hello"], "(answer)"),
        ({"choices": [{"text": 7}]}, "choices[0].text"),
    ],
)
def test_an_answer_of_the_wrong_shape_names_the_path(payload, path):
    with pytest.raises(MalformedAnswer) as caught:
        read_completion(payload)
    assert caught.value.path == path and str(caught.value).startswith(f"{path}: expected")


def test_the_path_error_says_what_was_expected_and_what_came():
    with pytest.raises(MalformedAnswer, match=r"^choices\[0\]\.message\.content: expected a string.*got int$"):
        read_completion(completion(123))


def test_content_parts_of_text_are_joined():
    got = read_completion(completion([{"type": "text", "text": '{"n":'}, {"type": "text", "text": "4}"}]))
    assert got.text == '{"n":4}'


@pytest.mark.parametrize(
    "payload, path",
    [
        ([{"delta": {"content": "x"}}], "(chunk)"),
        ("hello", "(chunk)"),
        ({"choices": "x"}, "choices"),
        ({"choices": [{"delta": 5}]}, "choices[0].delta"),
        ({"choices": [{"delta": {"content": 5}}]}, "choices[0].delta.content"),
        ({"choices": [], "usage": "many"}, "usage"),
    ],
)
def test_a_stream_chunk_of_the_wrong_shape_names_the_path(payload, path):
    with pytest.raises(MalformedAnswer) as caught:
        read_chunk(payload)
    assert caught.value.path == path


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_malformed_answer_through_the_runtime_is_typed(server, streamed):
    reply = stream([event([1, 2])]) if streamed else answer(200, json.dumps({"choices": ["hello"]}).encode())
    with pytest.raises(MalformedAnswer, match="openai:test@"):
        await generate(server, reply, streamed=streamed)


async def test_deep_nesting_and_huge_integers_are_typed(server):
    with pytest.raises(ServerError, match="nests too deep"):
        await generate(server, answer(200, b"[" * 200_000))
    with pytest.raises(ServerError, match="not JSON"):
        await generate(server, answer(200, b'{"usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}"))


# --- the class: any hostile answer gives a result or a typed error ---------------------------

JSON_KEYS = st.sampled_from(["choices", "message", "delta", "content", "text", "finish_reason", "usage",
                             "prompt_tokens", "completion_tokens", "error", "type", "index", "x"])
JSON_LEAVES = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
               | st.text(max_size=20) | st.sampled_from(['{"n":12}', "stop", "length", "text"]))
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(JSON_KEYS, inner, max_size=5), max_leaves=25)


@st.composite
def near_completions(draw) -> object:
    """Answers one or two fields away from a well-formed one."""
    content = draw(st.sampled_from(['{"n":12}', '{"n":', "free text", ""]) | JSON_VALUES)
    finish = draw(st.sampled_from(["stop", "length", None]) | JSON_VALUES)
    message = draw(st.just({"role": "assistant", "content": content}) | JSON_VALUES)
    choice = draw(st.just({"index": 0, "message": message, "finish_reason": finish}) | JSON_VALUES)
    usage = draw(st.just({"prompt_tokens": 1, "completion_tokens": 2}) | JSON_VALUES)
    return {"choices": draw(st.just([choice]) | JSON_VALUES), "usage": usage}


def payload_bytes(draw, value: object) -> bytes:
    data = json.dumps(value).encode()
    cut = draw(st.none() | st.integers(0, max(0, len(data) - 1)))
    return data if cut is None else data[:cut]


@st.composite
def hostile_replies(draw) -> Reply:
    status = draw(st.sampled_from([200] * 6 + [201, 204, 301, 400, 404, 429, 500, 503]) | st.integers(200, 599))
    kind = draw(st.sampled_from(["json", "bytes", "huge", "deep", "lying", "stream", "endless"]))
    content_type = draw(st.sampled_from(["application/json", "text/event-stream", "text/html", "application/octet-stream"]))
    if kind == "json":
        body = payload_bytes(draw, draw(near_completions() | JSON_VALUES))
        return answer(status, body, content_type)
    if kind == "bytes":
        return answer(status, draw(st.binary(max_size=300)), content_type)
    if kind == "huge":
        return answer(status, json.dumps(completion("x" * draw(st.integers(LIMIT // 2, 2 * LIMIT)))).encode())
    if kind == "deep":
        return answer(status, draw(st.sampled_from([b"[", b'{"a":'])) * draw(st.integers(1000, 100_000)))
    if kind == "lying":
        body = payload_bytes(draw, draw(near_completions()))
        return answer(status, body, content_type, length=len(body) + draw(st.integers(-len(body), 50)))
    events = [payload_bytes(draw, value) for value in draw(st.lists(near_completions() | JSON_VALUES, max_size=4))]
    pieces = [b"data: " + e + draw(st.sampled_from([b"\n\n", b"\n", b""])) for e in events]
    if draw(st.booleans()):
        pieces.append(b"data: [DONE]\n\n")
    if kind == "endless":
        pieces.append(draw(st.sampled_from([b"data: {}\n\n", b": ping\n", b"x" * 4096])))
    return stream(pieces or [b"\n"], status=status, repeat=kind == "endless")


def outcome_of(coroutine) -> object:
    """The coroutine's result or error; a hang (past twice the runtime's bounds) fails the test."""
    async def bounded():
        return await asyncio.wait_for(coroutine, timeout=15)

    try:
        return asyncio.run(bounded())
    except Exception as exc:  # the assertion below is the point: which errors come out
        return exc


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(reply=hostile_replies(), streamed=st.booleans(), with_grammar=st.booleans())
def test_any_hostile_answer_gives_a_result_or_a_typed_error(hostile, reply, streamed, with_grammar):
    got = outcome_of(generate(hostile, reply, streamed=streamed, g=COUNT if with_grammar else None))
    assert not isinstance(got, TimeoutError) or isinstance(got, GenerationTimeout), "hang"
    assert isinstance(got, RuntimeFailure) or not isinstance(got, BaseException), repr(got)
    if with_grammar and not isinstance(got, BaseException):
        assert got.finish_reason == "length" or COUNT.accepts(got.text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(reply=hostile_replies(), streamed=st.booleans())
def test_an_agent_over_a_hostile_server_keeps_its_messages(hostile, reply, streamed):
    hostile.reply = reply

    async def run():
        async with runtime(hostile.url) as rt:
            agent = Agent(runtime=rt, max_steps=2, max_tokens=8, max_retries=0)
            if streamed:
                async for _ in agent.run_stream("count"):
                    pass
                return None
            return await agent.run("count")

    got = outcome_of(run())
    if isinstance(got, BaseException):
        assert isinstance(got, RunError), repr(got)
        assert any(m.get("content") == "count" for m in got.messages), got.messages


@pytest.fixture(scope="module")
def hostile():
    with HostileServer() as running:
        yield running

"""What an operator sees on the packages' loggers ("agentkit", "grammar", "runtimes"): a model
load, a slow compile, an HTTP retry and its cause; and no handler installed by the library."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import grammar
import grammar._timing
import runtimes
from grammar import Vocabulary
from runtimes.testing import RandomRuntime


def test_the_library_installs_no_handlers() -> None:
    for name in ("agentkit", "grammar", "runtimes"):
        assert logging.getLogger(name).handlers == []


def test_a_compile_over_the_threshold_is_reported(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grammar._timing, "SLOW_COMPILE_MS", 0.0)
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"<eos>"], eos_ids=[256])
    with caplog.at_level(logging.INFO, logger="grammar"):
        g = grammar.from_json_schema(schema)
        grammar.compile(g, vocab)
    records = [r for r in caplog.records if r.name == "grammar" and r.levelno == logging.INFO]
    assert [r.getMessage().split(" compile took ")[0] for r in records] == ["json-schema", "grammar"]
    assert f"{len(json.dumps(schema))} characters of JSON Schema" in records[0].getMessage()
    assert "257-id vocabulary" in records[1].getMessage()
    for stage in ("tables", "analysis", "automaton"):  # where the compile's time went
        assert f"{stage} " in records[1].getMessage()


def test_a_compiled_grammars_profile_accounts_for_each_new_mask() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                                               "note": {"type": "string", "maxLength": 30}},
              "required": ["code", "note"], "additionalProperties": False}
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b'{"', b'":"', b'","', b'"}', b"<eos>"], eos_ids=[260])
    compiled = grammar.CompiledGrammar(grammar.from_json_schema(schema), vocab)
    assert compiled.profile.masks == 0 and not compiled.profile.paths
    assert compiled.profile.build > 0
    matcher = grammar.Matcher(compiled)
    text = '{"code":"ABC","note":"a short note"}'
    for ch in text.encode():
        matcher.next_token_mask()
        assert matcher.accept_token(ch)
    matcher.next_token_mask()
    profile = compiled.profile
    # Each state's mask is found once; states whose masks are shared are found once for all.
    assert 0 < sum(profile.paths.values()) <= len(text) + 1
    assert "forced" in profile.paths  # the keys and punctuation are literals
    assert profile.masks == pytest.approx(sum(profile.path_seconds.values()))
    before = dict(profile.paths)
    again = grammar.Matcher(compiled)  # a second document meets no new state
    for ch in text.encode():
        again.next_token_mask()
        again.accept_token(ch)
    assert dict(profile.paths) == before
    assert "masks" in profile.summary() and "forced" in profile.summary()


def test_a_quick_compile_stays_below_info(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="grammar"):
        grammar.from_json_schema({"type": "boolean"})
    assert [r for r in caplog.records if r.name == "grammar"] == []


class _FlakyServer:
    """Answers 503 to the first request and a chat completion to the next."""

    def __init__(self) -> None:
        hits: list[int] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                hits.append(1)
                if len(hits) == 1:
                    body, status = b"overloaded", 503
                else:
                    answer = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}
                    body, status = json.dumps(answer).encode(), 200
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def flaky_server() -> Iterator[_FlakyServer]:
    server = _FlakyServer()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_a_retry_is_reported_with_its_cause(caplog: pytest.LogCaptureFixture, flaky_server: _FlakyServer) -> None:
    rt = runtimes.OpenAICompatible(flaky_server.url, model="m", backoff=0.01)

    async def ask() -> runtimes.Generation:
        try:
            return await rt.generate("Hello")
        finally:
            await rt.aclose()

    with caplog.at_level(logging.WARNING, logger="runtimes"):
        assert asyncio.run(ask()).text == "hi"
    [record] = [r for r in caplog.records if r.name == "runtimes"]
    message = record.getMessage()
    assert record.levelno == logging.WARNING
    assert "request failed (ServerError:" in message and "/v1/completions answered 503" in message
    assert "retry 1 of 3" in message


@pytest.mark.model
def test_a_model_load_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    path = runtimes.default_model_path()
    with caplog.at_level(logging.INFO, logger="runtimes"):
        rt = runtimes.LlamaCpp(path)
    try:
        messages = [r.getMessage() for r in caplog.records if r.name == "runtimes"]
        assert any(m.startswith(f"llama.cpp loading {path}") for m in messages)
        [loaded] = [m for m in messages if m.startswith("llama.cpp loaded")]
        assert f"{rt.vocabulary.size}-id vocabulary" in loaded and f"{rt.context_length}-position context" in loaded
    finally:
        asyncio.run(rt.aclose())


def test_budget_steering_is_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    g = grammar.from_json_schema({"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
                                  "required": ["notes"]})
    runtime = RandomRuntime(seed=2)  # a random model that rambles (at this seed): 24 tokens need steering
    with caplog.at_level(logging.INFO, logger="runtimes"):
        generation = runtime.generate_sync("notes", grammar=g, max_tokens=24, temperature=2.0, seed=2, heal=False)
    assert generation.steered
    [record] = [r for r in caplog.records if r.name == "runtimes" and "budget steering" in r.getMessage()]
    assert f"after {generation.steered_from} characters" in record.getMessage()

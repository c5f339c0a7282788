"""OpenTelemetry spans of a run (the `otel` extra), read back from the SDK's in-memory exporter;
and nothing imported where the package is absent."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentkit import Agent, InvalidArgument, ModelRetry, StepLimitExceeded, tool
from runtimes.testing import ScriptedRuntime

REPO = Path(__file__).resolve().parents[2]


def call(name: str, arguments: str) -> str:
    return f'{{"name":"{name}","arguments":{arguments}}}'


@pytest.fixture(scope="module")
def exporter() -> Any:
    pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is not installed (pip install -e '.[dev]')")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the process's first: ours
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return memory


@pytest.fixture
def spans(exporter: Any) -> Any:
    exporter.clear()
    return exporter


def by_name(finished: Any, prefix: str) -> list[Any]:
    return [s for s in finished if s.name.startswith(prefix)]


@tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    from opentelemetry import trace

    with trace.get_tracer("weather-service").start_as_current_span("fetch forecast"):
        return {"city": city, "temp_c": 21}


@tool
def fussy(city: str) -> str:
    """Refuses short names."""
    if len(city) < 4:
        raise ModelRetry("the full name, please")
    if city == "Nowhere":
        raise LookupError("no such city")
    return "ok"


async def test_a_run_its_model_requests_and_its_tool_calls_are_spans(spans: Any) -> None:
    rt = ScriptedRuntime([call("get_weather", '{"city":"Oslo"}'), "21 C in Oslo."])
    result = await Agent([get_weather], rt, temperature=0.3, seed=5).run("Oslo?")
    finished = spans.get_finished_spans()
    [run] = by_name(finished, "invoke_agent")
    chats = by_name(finished, "chat ")
    [tool_span] = by_name(finished, "execute_tool")
    [inner] = by_name(finished, "fetch forecast")
    assert [c.parent.span_id for c in chats] == [run.context.span_id] * 2
    assert tool_span.parent.span_id == run.context.span_id
    assert inner.parent.span_id == tool_span.context.span_id  # a tool's own spans nest under its call
    first = chats[0].attributes
    assert first["gen_ai.operation.name"] == "chat" and first["gen_ai.request.model"] == "scripted"
    assert first["gen_ai.request.temperature"] == 0.3 and first["gen_ai.request.seed"] == 5
    assert first["agentkit.grammar_held"] is True
    assert tuple(first["gen_ai.response.finish_reasons"]) == ("grammar_complete",)
    assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == result.usage.completion_tokens
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == result.usage.prompt_tokens
    assert tool_span.attributes["gen_ai.tool.name"] == "get_weather"
    assert tool_span.attributes["gen_ai.tool.call.id"] == result.tool_calls[0].call.id
    assert tool_span.attributes["agentkit.tool.outcome"] == "ok"
    assert tool_span.end_time >= tool_span.start_time
    assert run.attributes["gen_ai.usage.output_tokens"] == result.usage.completion_tokens
    assert run.attributes["agentkit.steps"] == 2 and run.status.is_ok


async def test_outcomes_and_errors_are_on_the_spans(spans: Any) -> None:
    rt = ScriptedRuntime([call("fussy", '{"city":"Rio"}'), call("fussy", '{"city":"Nowhere"}'),
                          call("fussy", '{"city":"Lima"}')])
    with pytest.raises(StepLimitExceeded):
        await Agent([fussy], rt, max_steps=3, answer_on_repeat=False, grounded_arguments=False).run("go")
    finished = spans.get_finished_spans()
    outcomes = [s.attributes["agentkit.tool.outcome"] for s in by_name(finished, "execute_tool")]
    assert outcomes == ["retry", "error", "ok"]
    failed = by_name(finished, "execute_tool")[1]
    assert failed.attributes["error.type"] == "LookupError" and not failed.status.is_ok
    [run] = by_name(finished, "invoke_agent")
    assert run.attributes["error.type"] == "StepLimitExceeded" and not run.status.is_ok


async def test_a_turn_with_no_grammar_says_so(spans: Any) -> None:
    await Agent([], ScriptedRuntime(["Hello."])).run("Hi")
    [chat] = by_name(spans.get_finished_spans(), "chat ")
    assert chat.attributes["agentkit.grammar_held"] is False


async def test_a_streamed_run_has_the_same_spans(spans: Any) -> None:
    rt = ScriptedRuntime([call("get_weather", '{"city":"Oslo"}'), "21 C."])
    events = [e async for e in Agent([get_weather], rt).run_stream("Oslo?")]
    assert events
    names = sorted(s.name.split(" ")[0] for s in spans.get_finished_spans())
    assert names == ["chat", "chat", "execute_tool", "fetch", "invoke_agent"]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_without_opentelemetry_nothing_is_imported_and_runs_work() -> None:
    done = _python('''
        import importlib.abc, sys

        class Absent(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "opentelemetry":
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Absent())
        from agentkit import Agent
        from runtimes.testing import ScriptedRuntime
        result = Agent([], ScriptedRuntime(["Hi."])).run_sync("Hello")
        assert result.output == "Hi.", result
        assert not [m for m in sys.modules if m.startswith("opentelemetry")], sorted(sys.modules)
        print("ok")
    ''')
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_importing_agentkit_imports_no_opentelemetry() -> None:
    done = _python('''
        import sys
        import agentkit
        assert not [m for m in sys.modules if m.startswith("opentelemetry")]
        print("ok")
    ''')
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


async def test_an_agents_own_tracer_provider(spans: Any) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    own = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(own))
    await Agent([], ScriptedRuntime(["Hi."]), tracer_provider=provider).run("Hello")
    assert sorted(s.name.split(" ")[0] for s in own.get_finished_spans()) == ["chat", "invoke_agent"]
    assert spans.get_finished_spans() == ()  # not the global provider's
    with pytest.raises(InvalidArgument, match="tracer_provider"):
        Agent([], tracer_provider="console")


class _FailingTracer:
    """A tracer whose `failing` method raises; every other one hands out spans that record
    nothing, so each point where a run touches its tracer can be made to fail alone."""

    def __init__(self, failing: str):
        self.failing = failing

    def _maybe_fail(self, where: str) -> None:
        if where == self.failing:
            raise RuntimeError(f"tracer bug in {where}")

    def start_span(self, name: str, **kwargs: Any) -> Any:
        self._maybe_fail("start_span run" if name.startswith("invoke_agent") else "start_span chat")
        return _FailingSpan(self)

    def start_as_current_span(self, name: str, **kwargs: Any) -> Any:
        self._maybe_fail("start_as_current_span")
        return _FailingSpanContext(self)


class _FailingSpan:
    def __init__(self, tracer: _FailingTracer):
        self.tracer = tracer

    def set_attributes(self, attributes: Any) -> None:
        self.tracer._maybe_fail("set_attributes")

    def set_attribute(self, key: str, value: Any) -> None:
        self.tracer._maybe_fail("set_attribute")

    def end(self) -> None:
        self.tracer._maybe_fail("end")


class _FailingSpanContext:
    def __init__(self, tracer: _FailingTracer):
        self.tracer = tracer

    def __enter__(self) -> _FailingSpan:
        return _FailingSpan(self.tracer)

    def __exit__(self, *exc: Any) -> None:
        self.tracer._maybe_fail("exit tool span")


class _FailingProvider:
    def __init__(self, failing: str):
        self.failing = failing

    def get_tracer(self, *args: Any, **kwargs: Any) -> _FailingTracer:
        if self.failing == "get_tracer":
            raise RuntimeError("provider bug")
        return _FailingTracer(self.failing)


@pytest.mark.parametrize("failing", ["get_tracer", "start_span run", "start_span chat", "start_as_current_span",
                                     "set_attributes", "set_attribute", "end", "exit tool span"])
def test_a_tracer_that_raises_anywhere_leaves_the_run_untraced_not_failed(
        exporter: Any, failing: str, caplog: pytest.LogCaptureFixture) -> None:
    """The tracer provider is the user's (or the process's): whatever it raises, the run ends
    as it would untraced, and the log says tracing failed."""
    rt = ScriptedRuntime([call("get_weather", '{"city":"Oslo"}'), "Sunny."])
    result = Agent([get_weather], runtime=rt, tracer_provider=_FailingProvider(failing)).run_sync("Weather in Oslo?")
    assert result.output == "Sunny." and [r.result for r in result.tool_calls] == [{"city": "Oslo", "temp_c": 21}]
    assert any("tracing failed" in r.getMessage() for r in caplog.records)

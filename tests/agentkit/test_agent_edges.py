"""Smaller hostile uses of an agent (issue #65): a malformed `allowed_tools`, an OpenTelemetry
install whose import raises, and a tool whose error message is megabytes long."""

from __future__ import annotations

import logging
import sys
import types
from typing import Any

import pytest

from agentkit import Agent, InvalidArgument, tool
from agentkit._loop import tracing as _tracing
from runtimes.testing import ScriptedRuntime


@tool
def f(x: int) -> int:
    """Echo."""
    return x


@pytest.mark.parametrize("allowed", [[["f"]], [None], [1], [{"f"}], ("f", b"f")])
def test_allowed_tools_that_are_not_names_are_refused_naming_the_argument(allowed: Any) -> None:
    with pytest.raises(InvalidArgument) as info:
        Agent([f], ScriptedRuntime(["ok"])).run_sync("go", allowed_tools=allowed)
    assert info.value.argument == "allowed_tools" and "tool names" in info.value.reason


class _BrokenOtel(types.ModuleType):
    """A package whose import goes wrong in another way than `ImportError`."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"a broken plugin while reading {name}")


def test_an_opentelemetry_whose_import_raises_turns_tracing_off_once(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", _BrokenOtel("opentelemetry"))
    monkeypatch.setattr(_tracing, "_trace", _tracing._UNSET)
    caplog.set_level(logging.WARNING, logger="agentkit")
    for _ in range(2):
        assert Agent([f], ScriptedRuntime(["ok"])).run_sync("go").output == "ok"
    notes = [r for r in caplog.records if "opentelemetry" in r.getMessage()]
    assert len(notes) == 1 and "RuntimeError" in notes[0].getMessage()


@pytest.mark.parametrize("kind", ["raises", "retry"])
def test_a_tools_huge_error_message_is_logged_cut(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    from agentkit import ModelRetry

    message = "x" * 10_000_000

    @tool
    def noisy(x: int) -> int:
        """Fails loudly."""
        raise (ValueError(message) if kind == "raises" else ModelRetry(message))

    caplog.set_level(logging.INFO, logger="agentkit")
    rt = ScriptedRuntime(['{"name": "noisy", "arguments": {"x": 1}}', "Done."])
    result = Agent([noisy], rt, max_retries=3).run_sync("go with 1")
    assert result.output == "Done."
    lines = [r.getMessage() for r in caplog.records]
    assert lines and max(len(line) for line in lines) < 2_000
    assert any("10,000,000 characters" in line for line in lines)

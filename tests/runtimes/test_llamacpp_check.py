"""The long-prompt check: a llama.cpp that would die in native code is a typed error, not a signal."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from runtimes import RuntimeFailure, RuntimeUnavailable
from runtimes import _llamacpp_check as check

DIES_BY_SIGILL = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"]
DIES_BY_SIGSEGV = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
RUNS = [sys.executable, "-c", "pass"]
FAILS = [sys.executable, "-c", "import sys; sys.exit('no such model')"]


@pytest.fixture
def child(monkeypatch, tmp_path):
    """Point the check at a child of the test's choosing, with a fresh record of passes."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(check, "_check_key", lambda model_path: f"key:{model_path}")

    def use(command: list[str]) -> None:
        monkeypatch.setattr(check, "_child_command", lambda model_path: command)

    return use


def test_a_child_killed_by_sigill_is_runtime_unavailable_with_cause_and_fix(child):
    child(DIES_BY_SIGILL)
    with pytest.raises(RuntimeUnavailable) as raised:
        check.ensure_long_prompts_run(Path("model.gguf"))
    message = str(raised.value)
    assert "SIGILL" in message and "illegal instruction" in message
    assert "model.gguf" in message
    assert "scripts/build_llama.sh" in message and "--no-cache-dir" in message


def test_another_signal_names_it(child):
    child(DIES_BY_SIGSEGV)
    with pytest.raises(RuntimeUnavailable, match="SIGSEGV"):
        check.ensure_long_prompts_run(Path("model.gguf"))


def test_a_failing_child_is_a_runtime_failure_with_its_words(child):
    child(FAILS)
    with pytest.raises(RuntimeFailure, match="exit 1.*no such model") as raised:
        check.ensure_long_prompts_run(Path("model.gguf"))
    assert not isinstance(raised.value, RuntimeUnavailable)


def test_a_pass_is_remembered_and_a_crash_is_not(child):
    child(DIES_BY_SIGILL)
    for _ in range(2):  # a crash runs the check again next time
        with pytest.raises(RuntimeUnavailable):
            check.ensure_long_prompts_run(Path("model.gguf"))
    child(RUNS)
    check.ensure_long_prompts_run(Path("model.gguf"))
    child(DIES_BY_SIGILL)  # the same build and model passed: no second child
    check.ensure_long_prompts_run(Path("model.gguf"))
    with pytest.raises(RuntimeUnavailable):  # another model is checked anew
        check.ensure_long_prompts_run(Path("other.gguf"))


def test_loading_a_model_whose_check_crashes_raises_before_loading(child, smollm2_gguf):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: pip install 'agentkit[llama]'")
    from runtimes import LlamaCpp

    child(DIES_BY_SIGILL)
    with pytest.raises(RuntimeUnavailable, match="SIGILL"):
        LlamaCpp(smollm2_gguf)


@pytest.mark.model
def test_the_real_check_reads_a_long_prompt_of_the_default_model(monkeypatch, tmp_path, smollm2_gguf):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: pip install 'agentkit[llama]'")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    check.ensure_long_prompts_run(smollm2_gguf)
    assert len(check._passed_checks()) == 1

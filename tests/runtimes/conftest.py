"""Fixtures of the runtime tests: the default model in process, a real llama.cpp server, and a
real vLLM server."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bench import _servers as servers


@pytest.fixture(scope="session")
def default_runtime(smollm2_gguf: Path):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: pip install 'agentkit[llama]'")
    import runtimes

    return runtimes.default()


@pytest.fixture(scope="session")
def llama_server(smollm2_gguf: Path) -> str:
    """The root URL of `python -m llama_cpp.server` serving SmolLM2 on 127.0.0.1."""
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("llama_cpp.server") is None:
        pytest.skip("llama_cpp.server is not importable: pip install 'agentkit[server]'")
    yield from served(servers.llama_server(smollm2_gguf))


def served(server: servers.Server):
    """`server`'s root URL once it serves, for a fixture to yield; stopped after."""
    try:
        ready(server)
        yield server.url
    finally:
        server.stop()


def ready(server: servers.Server) -> None:
    """Waits for `server` to serve; one that does not start fails the test that needs it."""
    try:
        server.wait_ready()
    except servers.ServerDidNotStart as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def vllm_installed() -> dict[str, str]:
    installation = servers.vllm_installation()
    if installation is None:
        pytest.skip("vLLM is not installed on this machine: bash scripts/setup_vllm.sh installs it "
                    "(several minutes, once per machine)")
    return installation


@pytest.fixture(scope="session")
def vllm_server(vllm_installed: dict[str, str]):
    """The root URL of a vLLM server started once per session, stopped with all its processes."""
    yield from served(servers.vllm_server(vllm_installed))

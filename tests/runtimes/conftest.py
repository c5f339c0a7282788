"""Fixtures of the runtime tests: the default model in process, and a real llama.cpp server."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from ports import free_port


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
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf), "--host", "127.0.0.1",
        "--port", str(port), "--n_threads", "2", "--n_ctx", "2048", "--interrupt_requests", "false",
    ]
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"llama_server_{port}.log", "wb")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {server.returncode}; see {log.name}")
            try:
                if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start within 120 s; see {log.name}")
            time.sleep(0.25)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()

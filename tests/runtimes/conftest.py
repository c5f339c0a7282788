"""Fixtures of the runtime tests: the default model in process, a real llama.cpp server, and a
real vLLM server."""

from __future__ import annotations

import importlib.util
import os
import signal
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


REPO = Path(__file__).resolve().parents[2]
VLLM_START_LIMIT = 900  # seconds: the first start on a machine compiles for minutes


def vllm_installation() -> dict[str, str] | None:
    """The cached vLLM venv's python and the model folder, as scripts/setup_vllm.sh placed them
    (None where that script has not run on this machine)."""
    found = subprocess.run(["bash", str(REPO / "scripts" / "setup_vllm.sh"), "--where"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        return None
    return dict(line.split("=", 1) for line in found.stdout.split())


class VllmServer:
    """vLLM's OpenAI-compatible server serving SmolLM2 on 127.0.0.1, in a process group of its
    own (its engine and workers are child processes), stopped as a whole."""

    def __init__(self, installation: dict[str, str]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [
            installation["python"], "-m", "vllm.entrypoints.openai.api_server",
            "--model", installation["model"], "--served-model-name", "smollm2",
            "--host", "127.0.0.1", "--port", str(self.port), "--max-model-len", "2048",
            # Eager mode starts in about 20 s instead of 2 to 3 minutes of torch.compile (whose
            # cache vLLM 0.32.0's CPU build fails to load back), for a tiny model on 2 cores.
            "--enforce-eager",
        ]
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
        self.log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"vllm_server_{self.port}.log", "wb")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                        start_new_session=True)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + VLLM_START_LIMIT
        while True:
            if self.process.poll() is not None:
                pytest.fail(f"vLLM exited with {self.process.returncode}; see {self.log.name}")
            try:
                if httpx.get(f"{self.url}/v1/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM did not start within {VLLM_START_LIMIT} s; see {self.log.name}")
            time.sleep(0.5)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        self.kill(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self.kill(signal.SIGKILL)  # the engine and workers too, should any outlive the server
        self.process.wait()
        self.log.close()


@pytest.fixture(scope="session")
def vllm_installed() -> dict[str, str]:
    installation = vllm_installation()
    if installation is None:
        pytest.skip("vLLM is not installed on this machine: bash scripts/setup_vllm.sh installs it "
                    "(several minutes, once per machine)")
    return installation


@pytest.fixture(scope="session")
def vllm_server(vllm_installed: dict[str, str]):
    """The root URL of a vLLM server started once per session, stopped with all its processes."""
    server = VllmServer(vllm_installed)
    try:
        server.wait_ready()
        yield server.url
    finally:
        server.stop()

"""Model servers on 127.0.0.1 for the benchmarks and the tests that talk to a real server:
llama-cpp-python's, vLLM's (from the venv `scripts/setup_vllm.sh` keeps) and vllm-router in front
of several. Each runs in a process group of its own (vLLM's engine and workers are children),
logs to a file, and is stopped as a whole."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
VLLM_START_LIMIT = 900.0  # seconds: the first start on a machine compiles for minutes


class ServerDidNotStart(RuntimeError):
    """A server exited, or did not answer `/v1/models`, before its start limit."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_path(name: str, port: int) -> Path:
    return Path(os.environ.get("TMPDIR", "/tmp")) / f"{name}_{port}.log"


class Server:
    """One server process, started at once; `wait_ready` polls until it serves."""

    def __init__(self, name: str, command: Sequence[str], port: int, *, env: dict[str, str] | None = None,
                 start_limit: float = 120.0, ready_path: str = "/v1/models"):
        self.name = name
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.start_limit = start_limit
        self.ready_path = ready_path
        self.log = open(log_path(name, port), "wb")
        self.process = subprocess.Popen(list(command), stdout=self.log, stderr=subprocess.STDOUT,
                                        env=env, start_new_session=True)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_limit
        while True:
            if self.process.poll() is not None:
                raise ServerDidNotStart(f"{self.name} exited with {self.process.returncode}; see {self.log.name}")
            try:
                if httpx.get(self.url + self.ready_path, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise ServerDidNotStart(f"{self.name} did not start within {self.start_limit:.0f} s; "
                                        f"see {self.log.name}")
            time.sleep(0.25)

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
        self.kill(signal.SIGKILL)  # children too, should any outlive the leader
        self.process.wait()
        self.log.close()

    def __enter__(self) -> Server:
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def llama_server(model: Path, *, threads: int = 2, n_ctx: int = 2048) -> Server:
    """llama-cpp-python's OpenAI-compatible server (`pip install 'agentkit[server]'`)."""
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
        "--port", str(port), "--n_threads", str(threads), "--n_ctx", str(n_ctx),
        "--interrupt_requests", "false",
    ]
    return Server("llama_server", command, port)


def vllm_installation() -> dict[str, str] | None:
    """The cached vLLM venv's python and the model folder, as scripts/setup_vllm.sh placed them
    (None where that script has not run on this machine)."""
    found = subprocess.run(["bash", str(REPO / "scripts" / "setup_vllm.sh"), "--where"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        return None
    return dict(line.split("=", 1) for line in found.stdout.split())


def vllm_server(installation: dict[str, str], *, cpus: str | None = None, kv_cache_gib: int = 1) -> Server:
    """vLLM's OpenAI-compatible server serving SmolLM2 as `smollm2`; `cpus` ("0", "1", "0-1")
    binds its threads, so replicas on one machine do not share cores."""
    port = free_port()
    command = [
        installation["python"], "-m", "vllm.entrypoints.openai.api_server",
        "--model", installation["model"], "--served-model-name", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "2048",
        # Eager mode starts in about 20 s instead of 2 to 3 minutes of torch.compile (whose
        # cache vLLM 0.32.0's CPU build fails to load back), for a tiny model on 2 cores.
        "--enforce-eager",
    ]
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib)}
    if cpus is not None:
        env["VLLM_CPU_OMP_THREADS_BIND"] = cpus
    return Server("vllm_server", command, port, env=env, start_limit=VLLM_START_LIMIT)


def vllm_router(binary: str, workers: Sequence[str], *, policy: str = "round_robin") -> Server:
    """vllm-router (`bash scripts/setup_vllm.sh --router`) spreading requests over `workers`."""
    port = free_port()
    command = [binary, "--host", "127.0.0.1", "--port", str(port), "--worker-urls", *workers,
               "--policy", policy, "--log-level", "warning"]
    return Server("vllm_router", command, port, start_limit=60.0)

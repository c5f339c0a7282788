"""A check, once per llama.cpp build and model, that a long prompt runs without killing us.

llama.cpp picks matrix kernels by the CPU features it was compiled for. A build made with
`-march=native` on a machine that lists instructions it cannot execute (AMX tiles on some VMs)
loads a model and reads a short prompt fine, then dies with SIGILL on the first long one,
taking the whole interpreter with it. So before a model is used in this process, a child
process reads a long prompt with it; if the child dies by a signal, loading raises
`RuntimeUnavailable` with the cause and the fix instead. A passing check is remembered under
a key of the library files, the model file and the CPU, so it costs one child per change.

The child runs `read_long_prompt(MODEL)` and exits 0 once the prompt is read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import signal
import subprocess
import sys
from pathlib import Path

from ._errors import RuntimeFailure, RuntimeUnavailable

logger = logging.getLogger("runtimes")

PROMPT_TOKENS = 640
CHECK_TIMEOUT_S = 600.0
REBUILD_HINT = (
    "rebuild llama-cpp-python for the instructions this CPU executes: from the agentkit checkout, "
    "`bash scripts/build_llama.sh` (it tries each instruction set in a child process and never "
    "reuses pip's cached wheel); or by hand, `CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON "
    "-DGGML_FMA=ON -DGGML_F16C=ON\" pip install --no-cache-dir --force-reinstall "
    "llama-cpp-python==0.3.36`"
)


def ensure_long_prompts_run(model_path: Path) -> None:
    """Raise `RuntimeUnavailable` if llama.cpp dies reading a long prompt of this model here."""
    key = _check_key(model_path)
    passed = _passed_checks()
    if key in passed:
        return
    logger.info("checking llama.cpp on a %d-token prompt of %s in a child process", PROMPT_TOKENS, model_path.name)
    try:
        done = subprocess.run(
            _child_command(model_path),
            capture_output=True,
            timeout=CHECK_TIMEOUT_S,
            env={**os.environ, "PYTHONPATH": _import_path()},
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeFailure(
            f"LlamaCpp: the check of llama.cpp on a {PROMPT_TOKENS}-token prompt of {model_path.name} "
            f"did not finish within {CHECK_TIMEOUT_S:.0f} s"
        ) from exc
    if done.returncode == 0:
        _remember(passed, key)
        return
    tail = done.stderr.decode("utf-8", errors="replace").strip().splitlines()[-3:]
    if done.returncode < 0:
        raise RuntimeUnavailable(_crash_message(model_path, -done.returncode, tail))
    raise RuntimeFailure(
        f"LlamaCpp: the check of llama.cpp on {model_path.name} failed (exit {done.returncode}): "
        + " | ".join(tail)
    )


def _crash_message(model_path: Path, signal_number: int, tail: list[str]) -> str:
    try:
        name = signal.Signals(signal_number).name
    except ValueError:
        name = f"signal {signal_number}"
    if signal_number == signal.SIGILL:
        cause = (
            "SIGILL, an illegal instruction: this llama-cpp-python build uses CPU instructions "
            "this machine does not execute (a -march=native build on a VM that lists AMX but traps "
            "it, or a wheel built on another machine)"
        )
    else:
        cause = f"{name}: llama.cpp crashed in native code"
    said = f" Its last words: {' | '.join(tail)}." if tail else ""
    return (
        f"LlamaCpp: llama.cpp died reading a {PROMPT_TOKENS}-token prompt of {model_path.name} "
        f"in a child process ({cause}). Loading it here would kill this interpreter.{said} "
        f"Fix: {REBUILD_HINT}."
    )


def _child_command(model_path: Path) -> list[str]:
    program = "import sys; from runtimes._llamacpp_check import read_long_prompt; read_long_prompt(sys.argv[1])"
    return [sys.executable, "-c", program, str(model_path)]


def _import_path() -> str:
    """PYTHONPATH for the child: this package's parent first, then what we were given."""
    here = str(Path(__file__).resolve().parent.parent)
    given = os.environ.get("PYTHONPATH")
    return here + (os.pathsep + given if given else "")


def _check_key(model_path: Path) -> str:
    """What the check's outcome depends on: llama.cpp's libraries, the model, the CPU."""
    import llama_cpp

    parts = [platform.machine(), _cpu_model_name(), sys.version]
    library_dir = Path(llama_cpp.__file__).parent / "lib"
    for path in sorted(library_dir.glob("*.so*")) + [model_path.resolve()]:
        stat = path.stat()
        parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _cpu_model_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags")):
                return line
    except OSError:
        pass
    return platform.processor()


def _record_path() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache / "agentkit" / "llamacpp-checks.json"


def _passed_checks() -> set[str]:
    try:
        return set(json.loads(_record_path().read_text()))
    except (OSError, ValueError, TypeError):
        return set()


def _remember(passed: set[str], key: str) -> None:
    path = _record_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(sorted(passed | {key})))
        temporary.replace(path)
    except OSError as exc:  # a read-only home still runs; the check just runs again next time
        logger.debug("could not record the llama.cpp check in %s: %s", path, exc)


def read_long_prompt(model_path: str) -> None:
    """The child's work: load the model and read a long prompt in one batch."""
    import llama_cpp

    llama = llama_cpp.Llama(model_path, n_ctx=PROMPT_TOKENS + 64, n_batch=PROMPT_TOKENS, n_threads=2, verbose=False)
    text = " ".join(f"Item {i}: the quick brown fox jumps over the lazy dog." for i in range(PROMPT_TOKENS))
    ids = llama.tokenize(text.encode(), add_bos=True)[:PROMPT_TOKENS]
    llama.eval(ids)
    llama.close()

"""What this installation runs on, for users and issue reports: `python -m runtimes`.

Prints the machine and the CPU features it lists, the llama.cpp build and the features it was
compiled for, the default model, the outcome of the long-prompt check, one short generation
with its speed, and how the model writes tool calls (which decides what an agent asks for).
Exits 1 if any part fails, after printing the rest.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
import time
from pathlib import Path

_LISTED_FEATURES = ("avx", "avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile")


def _listed_cpu() -> str:
    name, flags = platform.processor() or "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                name = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    except OSError:
        return name
    listed = [feature for feature in _LISTED_FEATURES if feature in flags]
    return f"{name}; lists {' '.join(listed) or 'none of ' + ' '.join(_LISTED_FEATURES)}"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _tool_call_form(envelope: str) -> str:
    """How this model's template writes calls, and so what an agent asks it for by default."""
    if envelope == "python":
        return "a Python list, as the chat template teaches (an Agent's default keeps it)"
    taught = "in <tool_call> tags" if envelope == "hermes" else "as a bare JSON object"
    return f"taught {taught}; an Agent's default (tool_prompt='json_list') asks for one JSON list of calls"


def main() -> int:
    failed = False
    print(f"python      {sys.version.split()[0]} on {platform.system()} {platform.machine()}")
    print(f"agentkit    {_version('agentkit')}")
    print(f"cpu         {_listed_cpu()}")
    print(f"llama.cpp   llama-cpp-python {_version('llama-cpp-python')}")
    try:
        import llama_cpp

        info = llama_cpp.llama_print_system_info().decode(errors="replace").strip()
        print(f"            compiled for: {info}")
    except ImportError as exc:
        print(f"            not importable: {exc}")
        return 1
    from runtimes import RuntimeFailure, default, default_model_path

    try:
        path = default_model_path()
        print(f"model       {path} ({path.stat().st_size / 1e6:.0f} MB)")
        started = time.perf_counter()
        runtime = default()  # runs the long-prompt check first
        print(f"check       a long prompt runs: loaded with the check in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        generation = runtime.generate_sync(
            [{"role": "user", "content": "Say hello in five words."}], max_tokens=16, temperature=0.0
        )
        elapsed = time.perf_counter() - started
        tokens = generation.usage.completion_tokens
        print(f"generation  {generation.text.strip()!r} ({tokens} tokens in {elapsed:.2f} s, {tokens / elapsed:.0f}/s)")
        print(f"tool calls  {_tool_call_form(runtime.tool_call_envelope)}")
    except RuntimeFailure as exc:
        print(f"failed      {type(exc).__name__}: {exc}")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

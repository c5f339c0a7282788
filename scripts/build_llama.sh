#!/usr/bin/env bash
# Builds and installs llama-cpp-python with the instruction sets this machine can execute.
#
# pip's default build uses -march=native, which enables every feature the CPU *lists*. Some VMs
# list AMX but trap its instructions, so a native build dies with SIGILL on the first long
# prompt. Here each x86-64 feature group is executed in a child process first (cpu_probe.c) and
# only those that ran are enabled; AMX is never built (a 135M-1.5B model on a few cores gains
# nothing from it). The wheel is cached under a key of the version, the flags, the compiler and
# the architecture, never in pip's cache (which does not key a built wheel by CMAKE_ARGS).
#
#   AGENTKIT_LLAMA_BUILD=native   build with -march=native as pip would (for comparison)
#   AGENTKIT_LLAMA_CMAKE_ARGS=... use exactly these CMake arguments
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="0.3.36"
build="${AGENTKIT_LLAMA_BUILD:-probed}"
[[ -n "${AGENTKIT_LLAMA_CMAKE_ARGS:-}" ]] && build="custom"
# Only what the project uses: the library, not the multimodal one.
cmake_args="$("$here/llama_cmake_args.sh")"
[[ "$build" == "custom" ]] || cmake_args="-DLLAVA_BUILD=OFF $cmake_args"

compiler="$(cc --version | head -n 1)"
key="$(printf '%s\n' "$version" "$cmake_args" "$compiler" "$(uname -m)" | sha256sum | cut -c1-16)"
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/agentkit/llama-cpp-python/$key"
if ! ls "$wheels"/llama_cpp_python-"$version"-*.whl >/dev/null 2>&1; then
    echo "llama.cpp: compiling llama-cpp-python $version ($build build; minutes on two cores)"
    rm -rf "$wheels.tmp"
    CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        python -m pip wheel --quiet --no-cache-dir --no-deps "llama-cpp-python==$version" -w "$wheels.tmp"
    printf '%s\n' "$cmake_args" > "$wheels.tmp/CMAKE_ARGS"
    rm -rf "$wheels" && mv "$wheels.tmp" "$wheels"
else
    echo "llama.cpp: reusing the wheel built with: $cmake_args"
fi
python -m pip install --quiet --no-deps --force-reinstall "$wheels"/llama_cpp_python-"$version"-*.whl

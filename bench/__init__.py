"""Benchmarks, run as `python -m bench.NAME`; they compare agentkit with its peers side by side."""

"""The matcher's share of an MLC decode step, on the real MLC-compiled library, host vs device apply.

    python -m bench.mlc_step [--rounds 3] [--schema NAME] [--library DIR]

The library is SmolLM2-135M-Instruct compiled for the CPU by `scripts/build_mlc.sh` (DIR defaults
to the folder it builds into; `../shared/mlc` must be beside the repository for its tokenizer).
A greedy constrained generation gives a token sequence; each round then prefills the prompt and
feeds those tokens through the model, and at every position times, on the same logits:

- the model step: `embed` + `decode` + the KV cache's begin/end forward (the next position's);
- host masking (what `MLC` does with `mask_on_device=False`): the sparse token mask (fill) and
  the greedy selection among the allowed logits only (apply);
- device masking (the default): the packed bitmask (fill), and its upload plus the library's
  `apply_bitmask_inplace` kernel on the logits (apply), then the plain argmax (select).

Both read the logits back to the host ("read"), timed apart. Round 0 is a warm-up (the first
visit of each grammar state computes its mask; `bench.runtime` reports that cost). With a few
dozen tokens per round, p99 is close to the largest sample.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import grammar
from bench.runtime import PROMPTS, SCHEMAS, chat
from runtimes._sampling import Sampler

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO.parent / "shared" / "mlc"
BUDGET = 256  # max_tokens of the reference generation: room enough that it is never steered


def load(library: Path):
    sys.path.insert(0, str(RECIPE))
    import compat  # noqa: F401  (mlc_llm's tokenizer over Hugging Face tokenizers, for apache-tvm)

    from runtimes import MLC

    return MLC(library / "model", library / "lib" / "model-cpu.so", device="cpu")


def built_library() -> Path:
    """The folder `scripts/build_mlc.sh` builds into for this Python."""
    found = subprocess.run(["bash", str(REPO / "scripts" / "build_mlc.sh"), "--where"], check=True,
                           capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    return Path(found.stdout.strip())


def feed(rt, prompt: list[int], tokens: list[int], compiled: grammar.CompiledGrammar) -> dict[str, list[float]]:
    """Seconds per position of each part of a step, `tokens` fed after `prompt`."""
    lib, width = rt._lib, rt.logits_width
    sampler = Sampler()
    matcher = grammar.Matcher(compiled, stop_when_complete=True)
    times: dict[str, list[float]] = defaultdict(list)
    logits = rt.prefill(prompt)
    for i, token in enumerate(tokens):
        t0 = time.perf_counter()
        row = rt._host_logits(logits)
        t1 = time.perf_counter()
        mask = matcher.next_token_mask()
        t2 = time.perf_counter()
        host_choice = sampler.select(row, mask)
        t3 = time.perf_counter()
        matcher.fill_next_token_bitmask(rt._bitmask, 0)
        t4 = time.perf_counter()
        rt._bitmask_device.copyfrom(rt._bitmask)
        rows = rt._reshape(logits, lib.shape([1, width]))
        rt._apply_bitmask(rows, rt._seq_ids, rt._bitmask_device)
        t5 = time.perf_counter()
        device_row = rt._host_logits(rows)
        t6 = time.perf_counter()
        device_choice = sampler.select(device_row)
        t7 = time.perf_counter()
        if host_choice != token or device_choice != token:
            raise SystemExit(f"position {i}: host chose {host_choice}, device {device_choice}, the reference {token}")
        times["read"].append(t1 - t0)
        times["host fill"].append(t2 - t1)
        times["host apply"].append(t3 - t2)
        times["device fill"].append(t4 - t3)
        times["device apply"].append(t5 - t4)
        times["device select"].append(t7 - t6)
        matcher.accept_token(token)
        if i + 1 < len(tokens):
            t8 = time.perf_counter()
            logits = rt.forward(token)
            times["step"].append(time.perf_counter() - t8)
    return times


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds after the warm-up")
    parser.add_argument("--schema", choices=sorted(SCHEMAS), default="person")
    parser.add_argument("--library", type=Path, help="the folder scripts/build_mlc.sh built (default: its cache)")
    args = parser.parse_args()
    if not RECIPE.is_dir():
        raise SystemExit(f"no MLC build recipe at {RECIPE} (../shared/mlc beside the repository)")
    rt = load(args.library or built_library())
    if not rt.mask_on_device:
        raise SystemExit(f"the library's kernel is not used: {rt.host_masking_reason}")
    messages = chat(PROMPTS[args.schema])
    reference = rt.generate_sync(messages, grammar=grammar.from_json_schema(SCHEMAS[args.schema]), max_tokens=BUDGET)
    if reference.finish_reason != "grammar_complete" or reference.steered:
        raise SystemExit(f"the reference generation is no greedy whole document: {reference}")
    compiled = rt.compiled(grammar.from_json_schema(SCHEMAS[args.schema]))
    prompt = rt._prompt_ids(messages, None)
    samples: dict[str, list[float]] = defaultdict(list)
    with rt.model_lock:
        for r in range(args.rounds + 1):
            times = feed(rt, prompt, reference.token_ids, compiled)
            if r:
                for part, values in times.items():
                    samples[part].extend(values)
    print(f"{rt.name} on the CPU, vocabulary {rt.vocabulary.size} ids, schema {args.schema!r}: "
          f"{len(reference.token_ids)} tokens × {args.rounds} rounds ({reference.finish_reason})\n")
    print(f"{'part':14} {'p50 µs':>10} {'p99 µs':>10}")
    for part in ("step", "read", "host fill", "host apply", "device fill", "device apply", "device select"):
        print(f"{part:14} {statistics.median(samples[part]) * 1e6:>10.1f} {percentile(samples[part], 99) * 1e6:>10.1f}")
    step = statistics.median(samples["step"])
    print(f"\n{'matcher share':14} {'p50':>10} {'p99':>10}   (fill + apply per token, over the median step)")
    for path in ("host", "device"):
        per_token = [f + a for f, a in zip(samples[f"{path} fill"], samples[f"{path} apply"], strict=True)]
        print(f"{path:14} {statistics.median(per_token) / step:>10.3%} {percentile(per_token, 99) / step:>10.3%}")


if __name__ == "__main__":
    main()

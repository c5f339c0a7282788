"""What a forward pass costs by the tokens it reads: the bound on what fewer passes can save.

    python -m bench.pass_cost [--model NAME|PATH ...] [--tokens 1,2,4,8] [--repeats 6]

Speculative decoding and jump-forward read several tokens in one pass. They save time only
where a pass of k tokens costs much less than k passes of one: where a pass is bound by reading
the weights (a GPU, many cores), not by arithmetic. This prints, per model, the median time of a
pass that reads k tokens after a 300-token context, and its ratio to a pass of the first k.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench import models

CONTEXT = 300


def pass_times(model: str | None, counts: list[int], repeats: int) -> dict[int, float]:
    """Median milliseconds of a pass reading k tokens, for each k of `counts`."""
    rt = models.runtime(model)
    context = rt._context
    context.decode([(0, 0, list(range(1000, 1000 + CONTEXT)), 1)])
    found = {}
    for k in counts:
        times = []
        for _ in range(repeats):
            context.keep(0, CONTEXT)
            started = time.perf_counter()
            context.decode([(0, CONTEXT, list(range(2000, 2000 + k)), k)])
            times.append(time.perf_counter() - started)
        found[k] = statistics.median(times) * 1e3
    print(f"# {rt.name}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", metavar="NAME|PATH",
                        help=f"repeatable: a GGUF file or one of {', '.join(models.MODELS)} (default: the default model)")
    parser.add_argument("--tokens", default="1,2,4,8", help="the k to time, comma-separated")
    parser.add_argument("--repeats", type=int, default=6)
    args = parser.parse_args(argv)
    counts = [int(k) for k in args.tokens.split(",")]
    for model in args.model or [None]:
        times = pass_times(model, counts, args.repeats)
        print(f"| tokens read | ms per pass | × a pass of {counts[0]} |")
        print("|---:|---:|---:|")
        for k, ms in times.items():
            print(f"| {k} | {ms:.1f} | {ms / times[counts[0]]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

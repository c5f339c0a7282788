"""Instructions one compile plus one document cost, for comparing two versions of the engine.

Timings on a shared two-core machine swing by 10-15% from minute to minute, too much to tell a
2% change; instruction counts under callgrind repeat to 0.1%. The collector is switched off
while counting (its pauses depend on what else the process holds), and only the calls inside
`sum` are counted:

    PYTHONHASHSEED=0 valgrind --tool=callgrind --collect-atstart=no \\
        --toggle-collect=builtin_sum --callgrind-out-file=/dev/null \\
        python3.11 -m bench.instructions "20 properties" --runs 3

prints "Collected : N"; N / runs is one compile plus one document. Run it from two checkouts
(`git worktree add`) to compare. Without valgrind it prints the time per run instead.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np

from bench import vocabularies
from bench._engines import Ours
from bench.masker import SCHEMAS, _canonical
from runtimes.testing import GreedyTokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("schema", choices=sorted(SCHEMAS))
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    vocab = vocabularies.smollm2()
    engine = Ours()
    engine.prepare(vocab)
    schema, instance = SCHEMAS[args.schema]
    tokens = GreedyTokenizer(vocab).encode_bytes(_canonical(instance)) + [min(vocab.eos_ids)]
    bitmask = np.zeros((1, -(-vocab.size // 32)), np.int32)

    def run(_: int) -> int:
        matcher = engine.matcher(engine.compile(schema))
        for token in tokens:
            engine.fill(matcher, bitmask)
            engine.accept(matcher, token)
        return 0

    run(0)  # first-use costs (imports, caches of the vocabulary) stay out of the count
    gc.collect()
    gc.disable()
    start = time.perf_counter()
    sum(map(run, range(args.runs)))  # the counted region: see the module docstring
    print(f"{args.schema}: {(time.perf_counter() - start) / args.runs * 1e3:.2f} ms per compile+document")


if __name__ == "__main__":
    main()

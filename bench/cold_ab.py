"""Two checkouts' cold path side by side, for a change smaller than this machine's noise.

    python -m bench.cold_ab OLD_TREE NEW_TREE [--vocab smollm2] [--dev 50] [--rounds 3] [--closed]

A cold run (a fresh compile of a schema plus every mask of its first document, as
`bench.masker` times it) swings by 30% and more from run to run on a shared machine, one
checkout against itself included, so two `bench.masker` runs cannot show a change of a few
percent. Here one worker process per checkout (each importing that tree's `grammar`) is handed
the same JSONSchemaBench DEV schema in turn, round after round in ABBA order; each times CPU
seconds with the cycle collector paused; per schema the best of its rounds counts, and the
figure is the median over schemas of NEW / OLD. A checkout against itself gives 1.00 within a
percent or so; single schemas still swing, so read the median, not one schema.

`--closed` hands both the schemas with their objects closed (`bench._dev_schemas.closed`), as
agentkit's tools and `extract` compile them. Both trees need `bench/_dev_schemas.py` and the
corpus beside them (`../shared`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _worker(vocab_name: str, limit: int, closed: bool) -> None:
    """Read `KEY` lines on stdin; answer each with the CPU seconds of one cold run."""
    import gc

    import numpy as np

    import grammar
    from bench import vocabularies
    from bench._dev_schemas import closed_dev_schemas, dev_schemas
    from grammar.testing import token_tables
    from runtimes.testing import GreedyTokenizer

    vocab = getattr(vocabularies, vocab_name)()
    token_tables(vocab)
    tokenizer = GreedyTokenizer(vocab)
    schemas = closed_dev_schemas(limit) if closed else dev_schemas(limit)
    print(json.dumps(list(schemas)), flush=True)
    bitmask = np.full((1, -(-vocab.size // 32)), -1, dtype=np.int32)
    for line in sys.stdin:
        schema, document = schemas[line.strip()]
        tokens = tokenizer.encode_bytes(document)
        gc.collect()
        gc.disable()
        started = time.process_time()
        try:
            matcher = grammar.Matcher(grammar.CompiledGrammar(grammar.from_json_schema(schema), vocab))
            for token in tokens:
                matcher.fill_next_token_bitmask(bitmask)
                if not matcher.accept_token(token):
                    raise AssertionError(f"token {token} rejected")
            seconds: float | None = time.process_time() - started
        except Exception:  # a tree that cannot compile the schema is left out of the ratio
            seconds = None
        finally:
            gc.enable()
        print(json.dumps(seconds), flush=True)


def compare(old: Path, new: Path, vocab: str = "smollm2", limit: int = 50, rounds: int = 3,
            closed: bool = False) -> dict:
    """Per DEV schema, the best cold seconds of each tree, and the median ratio new / old."""
    workers = [
        subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", vocab, str(limit)] + ["--closed"] * closed,
            cwd=tree, env={**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"},
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        for tree in (old, new)
    ]
    try:
        keys = [json.loads(w.stdout.readline() or "null") for w in workers]
        if keys[0] is None or keys[0] != keys[1]:
            raise SystemExit("the two trees do not list the same DEV schemas (is ../shared beside both?)")
        best: dict[str, list[float | None]] = {}
        for key in keys[0]:
            times: list[float | None] = [None, None]
            for r in range(rounds):
                for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                    workers[i].stdin.write(key + "\n")
                    workers[i].stdin.flush()
                    t = json.loads(workers[i].stdout.readline())
                    if t is not None:
                        times[i] = t if times[i] is None else min(times[i], t)
            best[key] = times
    finally:
        for w in workers:
            w.stdin.close()
            w.wait()
    ratios = {k: b / a for k, (a, b) in best.items() if a and b}
    return {"best": best, "ratios": ratios, "median": statistics.median(ratios.values())}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        # Run as a script, this file's folder leads sys.path: the tree's packages come first.
        here = Path(__file__).resolve().parent
        sys.path[:] = [p for p in sys.path if not p or Path(p).resolve() != here]
        _worker(argv[1], int(argv[2]), argv[3:] == ["--closed"])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--vocab", default="smollm2", choices=["smollm2", "gemma3", "qwen25"])
    parser.add_argument("--dev", type=int, default=50, help="DEV schemas (bench._dev_schemas)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--closed", action="store_true", help="the schemas' objects closed")
    args = parser.parse_args(argv)
    found = compare(args.old.resolve(), args.new.resolve(), args.vocab, args.dev, args.rounds, args.closed)
    ratios = sorted(found["ratios"].items(), key=lambda kv: kv[1])
    for key, ratio in ratios:
        old_s, new_s = found["best"][key]
        print(f"  {ratio:5.2f}  {old_s * 1e3:8.1f} -> {new_s * 1e3:8.1f} ms  {key}")
    totals = [sum(b[i] for b in found["best"].values() if b[0] and b[1]) for i in (0, 1)]
    print(f"{len(ratios)} schemas, {args.vocab}: total {totals[0]:.2f} s -> {totals[1]:.2f} s; "
          f"median new/old {found['median']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

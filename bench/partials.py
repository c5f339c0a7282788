"""Streaming an extraction's partial values against extracting it whole: the same answer from
`runtimes.testing.ScriptedRuntime` (which streams it in 4-character pieces), read by
`extract`, by `astream_extract` and by its sync twin `stream_extract`, each timed as the best of
`--rounds`.

    python -m bench.partials [--chars 16000] [--rounds 5]

Four answer shapes of about `--chars` characters: records (a list of small objects, the common
case), numbers (a flat list of integers: the most changes per character, and the widest open
list to copy for each partial), keys (an object of many keys) and text (one long string). The
ratios are streaming's time over extracting's; streaming reads the answer once, so they stay
bounded as the answer grows.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from agentkit import astream_extract, extract, stream_extract
from runtimes.testing import ScriptedRuntime


class Record(BaseModel):
    name: str
    age: int
    tags: list[str]


class Text(BaseModel):
    title: str
    body: str


def answers(chars: int) -> dict[str, tuple[Any, str]]:
    """Per shape, the output type and an answer of about `chars` characters."""
    record = {"name": "Ann Lee", "age": 31, "tags": ["chess", "go"]}
    records = [record] * max(1, chars // len(json.dumps(record, separators=(",", ":"))))
    numbers = list(range(chars // 5))
    keys = {f"k{i}": i for i in range(chars // 12)}
    text = {"title": "A note", "body": "word " * (chars // 5)}
    return {
        "records": (list[Record], json.dumps(records, separators=(",", ":"))),
        "numbers": (list[int], json.dumps(numbers, separators=(",", ":"))),
        "keys": (dict[str, int], json.dumps(keys, separators=(",", ":"))),
        "text": (Text, json.dumps(text, separators=(",", ":"))),
    }


def best(run: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, default=16_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"{'shape':<8} {'chars':>6} {'partials':>8} {'extract s':>9} {'stream s':>8} {'ratio':>5} {'sync s':>6} {'ratio':>5}")
    for shape, (output_type, answer) in answers(args.chars).items():
        def runtime() -> ScriptedRuntime:
            return ScriptedRuntime([answer])

        async def stream() -> list[Any]:
            return [v async for v in astream_extract(output_type, "x", runtime=runtime(), max_tokens=len(answer))]

        extract(output_type, "x", runtime=runtime(), max_tokens=len(answer))  # the grammar compiled once
        whole = best(lambda: extract(output_type, "x", runtime=runtime(), max_tokens=len(answer)), args.rounds)
        streamed = best(lambda: asyncio.run(stream()), args.rounds)
        synced = best(lambda: list(stream_extract(output_type, "x", runtime=runtime(), max_tokens=len(answer))),
                      args.rounds)
        shown = len(asyncio.run(stream())) - 1
        print(f"{shape:<8} {len(answer):>6} {shown:>8} {whole:>9.3f} {streamed:>8.3f} {streamed / whole:>5.1f} "
              f"{synced:>6.3f} {synced / whole:>5.1f}")


if __name__ == "__main__":
    main()

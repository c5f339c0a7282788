"""Progress of a benchmark, on stderr so it never mixes with the report on stdout: tqdm's bar
where tqdm is installed, else a line per step (at most about twenty per loop)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def progress(items: Sequence[T], label: str) -> Iterator[T]:
    """`items`, one by one, with a progress display labelled `label`."""
    try:
        from tqdm import tqdm
    except ImportError:
        yield from _lines(items, label)
    else:
        yield from tqdm(items, desc=label, file=sys.stderr, leave=False)


def _lines(items: Sequence[T], label: str) -> Iterator[T]:
    every = max(1, len(items) // 20)
    for n, item in enumerate(items, 1):
        yield item
        if n % every == 0 or n == len(items):
            print(f"  {label}: {n}/{len(items)}", file=sys.stderr, flush=True)

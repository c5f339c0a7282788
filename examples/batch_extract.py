"""Extract typed records from many texts at once, with bounded concurrency.

    python examples/batch_extract.py

`aextract` is async; an asyncio.Semaphore bounds how many extractions are in flight, and those
in flight share each forward pass of the model (the local runtime batches them, as a server
does). Each text gives either a valid Product or a typed error, never half a record.
"""

from __future__ import annotations

import asyncio
import time
from typing import Literal

from pydantic import BaseModel, Field

from agentkit import AgentkitError, aextract


class Product(BaseModel):
    name: str
    price_eur: float = Field(ge=0)
    category: Literal["food", "clothing", "electronics", "other"]


TEXTS = [
    "Fresh sourdough bread, 4.50 euros a loaf.",
    "Wireless headphones with noise cancelling, now 89 EUR.",
    "A wool winter coat in navy blue for 120 euros.",
    "USB-C charging cable, two metres, 9.99.",
    "Organic apples, 3 euros per kilo.",
    "Running shoes, size 42, on sale for 65 euros.",
]


async def extract_all(texts: list[str], concurrency: int = 3) -> list[Product | AgentkitError]:
    limit = asyncio.Semaphore(concurrency)

    async def one(text: str) -> Product | AgentkitError:
        async with limit:
            try:
                return await aextract(Product, text, max_tokens=96)
            except AgentkitError as error:  # IncompleteOutput, OutputValidationError, ...
                return error

    return await asyncio.gather(*(one(t) for t in texts))


if __name__ == "__main__":
    start = time.perf_counter()
    results = asyncio.run(extract_all(TEXTS))
    for text, result in zip(TEXTS, results, strict=True):
        shown = result.model_dump_json() if isinstance(result, Product) else f"{type(result).__name__}: {result}"
        print(f"{text}\n  -> {shown}")
    ok = sum(isinstance(r, Product) for r in results)
    print(f"{ok}/{len(TEXTS)} extracted in {time.perf_counter() - start:.1f} s")

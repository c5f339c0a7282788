"""Extract a typed Person and route the fields the model was unsure of to a person.

    python examples/confident_extract.py ["Some text about a person"]

`extract(..., confidence=True)` returns the value and, per leaf field, how sure the model was
of it (the product of its tokens' probabilities under the model). Fields below the threshold
are the ones to check by hand or ask again; the rest can be trusted as far as the model goes.
"""

from __future__ import annotations

import sys

from pydantic import BaseModel

from agentkit import extract


class Person(BaseModel):
    name: str
    age: int
    city: str


TEXT = "Ann Lee, 31, moved from Lyon to a small town near Geneva last spring."
THRESHOLD = 0.5

if __name__ == "__main__":
    text = " ".join(sys.argv[1:]) or TEXT
    result = extract(Person, text, confidence=True, max_tokens=96)
    print(repr(result.value))
    for pointer, field in (result.fields or {}).items():
        print(f"  {pointer:8} p={field.probability:.3f}  least token {field.min_token_probability:.3f}  "
              f"grammar removed {field.masked_mass:.3f}")
    doubtful = result.doubtful(THRESHOLD)
    print("check by hand:", ", ".join(doubtful) if doubtful else "nothing")

"""A Person extracted as it is written, then checked by a validator that can ask again.

    python examples/stream_person.py ["Some text about a person"]

Runs on the embedded default model. `stream_extract` yields the value as it grows (only
complete fields: never half a name or number), then the whole typed Person; no event loop is
needed. Then `extract` with an `output_validator` that raises `ModelRetry` when the age is not
in the text: the model is told why and answers again (`max_retries` such corrections).
"""

from __future__ import annotations

import sys

from pydantic import BaseModel

from agentkit import AgentkitError, ModelRetry, extract, stream_extract


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]


TEXT = "Ann Lee is 31 years old. She loves chess and hiking."


def main(text: str) -> None:
    for value in stream_extract(Person, text, max_tokens=96):
        print(f"  {value!r}")

    def age_in_text(person: Person) -> Person:
        if str(person.age) not in text:
            raise ModelRetry(f"the text does not say the age is {person.age}; use the age it states")
        return person

    try:
        print(repr(extract(Person, text, max_tokens=96, max_retries=2, output_validator=age_in_text)))
    except AgentkitError as error:
        print(f"no valid Person: {type(error).__name__}: {error}")


if __name__ == "__main__":
    main(" ".join(sys.argv[1:]) or TEXT)

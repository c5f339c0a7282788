"""Extract a typed Person from free text: the goinfer README's struct, as a pydantic model.

    python examples/extract_person.py ["Some text about a person"]

The output always has the Person shape (it is decoded under Person's grammar and validated);
what each field says is the model's. A too-small token budget raises IncompleteOutput rather
than returning half a Person.
"""

from __future__ import annotations

import sys

from pydantic import BaseModel

from agentkit import extract


class Person(BaseModel):
    name: str
    age: int
    tags: list[str]
    email: str | None = None


TEXT = "Ann Lee is 31 years old. She loves chess and hiking. Her email is ann.lee@example.com."

if __name__ == "__main__":
    text = " ".join(sys.argv[1:]) or TEXT
    person = extract(Person, text, max_tokens=128)
    print(repr(person))
    print(person.model_dump_json())

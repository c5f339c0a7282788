"""The benchmarks' extraction workload: short texts about people, and what to extract from them
(bounded strings, an enum, an integer range and a list of bounded tags), as a JSON Schema for
engines that take one and as the pydantic model `extract` takes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "occupation": {"type": "string", "maxLength": 40},
        "city": {"type": "string", "maxLength": 30},
        "status": {"enum": ["employed", "retired", "student", "unknown"]},
        "skills": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
    },
    "required": ["name", "age", "occupation", "city", "status", "skills"],
    "additionalProperties": False,
}
TEXTS = [
    "Maria Lopez, 34, works as a nurse in Madrid and speaks three languages.",
    "Tom Becker is a 58-year-old retired train driver from Hamburg who loves chess.",
    "Aiko Tanaka (21) studies physics in Kyoto and plays the violin.",
    "Samuel Okafor, 45, is an architect in Lagos known for bamboo buildings.",
    "Lena Novak, a 29-year-old data analyst, lives in Prague and runs marathons.",
    "Pierre Dubois, 67, retired chef, still bakes bread every morning in Lyon.",
    "Priya Raman is 38 and teaches mathematics at a school in Chennai.",
    "Jonas Berg, 19, is a student of forestry in Umea who builds canoes.",
    "Fatima Zahra, 52, runs a pharmacy in Casablanca and paints on weekends.",
    "Carlos Mendes, 41, a software engineer in Porto, writes compilers.",
    "Olga Ivanova, 73, was a ballet dancer in Moscow and now coaches children.",
    "Kwame Mensah is a 26-year-old journalist in Accra covering elections.",
    "Sofia Rossi, 31, restores old paintings in Florence.",
    "Liam O'Brien, 48, fishes off the coast of Galway for a living.",
    "Mei Chen, 24, is a graduate student in Taipei researching batteries.",
    "Ahmed Hassan, 55, drives a taxi in Cairo and knows every street.",
]
INSTRUCTIONS = (
    "Extract the person described in the text as a JSON object with the keys name, age, "
    "occupation, city, status (employed, retired, student or unknown) and skills (at most three)."
)


def messages(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": text}]


class Person(BaseModel):
    """`SCHEMA` as the type a user hands to `extract`."""

    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=40)]
    age: Annotated[int, Field(ge=0, le=120)]
    occupation: Annotated[str, Field(max_length=40)]
    city: Annotated[str, Field(max_length=30)]
    status: Literal["employed", "retired", "student", "unknown"]
    skills: Annotated[list[Annotated[str, Field(max_length=20)]], Field(max_length=3)]

"""How many real values of a bounded format the grammar holds.

    python -m bench.format_fit [--formats uri hostname email] [--bounds 60 100 255 2083] [--split dev|held|all]

A format with a `maxLength` past what the exact product holds has its length spread over the
format's parts (docs/limits.md): the grammar accepts nothing the validator refuses, but it
refuses some values the validator accepts. This counts how many: the values are the strings of
JSONSchemaBench's test documents that the validator's format checker (Draft 2020-12) accepts
for the format (URLs with a scheme and `//`, hostnames of two labels or more, addresses with an
`@`), nobody here wrote them, and each is tried against `{"type": "string", "format": F,
"maxLength": B}` for each bound B it fits in. `--split dev` takes the documents of DEV.txt's
schemas (those a change may be tried on), `held` the others.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from jsonschema import Draft202012Validator

from bench.coverage import corpus_dir, dev_ids, jsonl
from grammar import from_json_schema

FORMATS = ("uri", "hostname", "email")
BOUNDS = (60, 100, 150, 255, 512, 2083)
LONGEST = 2083  # values past the longest bound are left out
# What a value must look like, beside the checker's verdict: the checker takes any word for a
# hostname and any text with an `@` for an email.
_SHAPES = {
    "uri": re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S*\Z"),  # (the checker takes a newline at the end)
    "hostname": re.compile(r"[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+\Z"),
    "email": re.compile(r"[^@\s]+@[^@\s]+\.[a-zA-Z]+\Z"),
}
_CHECKER = Draft202012Validator.FORMAT_CHECKER


@dataclass
class Fit:
    """Of the values within a bound, how many the grammar of the format under that bound holds."""

    format: str
    bound: int
    held: int
    values: int
    refused: list[str]  # shortest first

    @property
    def share(self) -> float:
        return self.held / self.values if self.values else 1.0


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def format_values(corpus: Path, split: str = "all", formats: tuple[str, ...] = FORMATS) -> dict[str, list[str]]:
    """The distinct strings of the corpus's test documents that have each format, sorted."""
    bench = corpus / "jsonschemabench"
    dev = dev_ids(corpus)
    found: dict[str, set[str]] = {name: set() for name in formats}
    for path in sorted(bench.glob("*.jsonl.gz")):
        for entry in jsonl(path):
            if split != "all" and (entry["id"] in dev) != (split == "dev"):
                continue
            for test in entry.get("tests") or []:
                document = test.get("data") if isinstance(test, dict) else test
                for text in _strings(document):
                    if len(text) > LONGEST:
                        continue
                    for name in formats:
                        if _SHAPES[name].match(text) and not text.replace(".", "").isdigit() and _CHECKER.conforms(text, name):
                            found[name].add(text)
    return {name: sorted(values) for name, values in found.items()}


def fits(values: dict[str, list[str]], bounds: tuple[int, ...] = BOUNDS) -> list[Fit]:
    """Per format and bound: the values within the bound, and how many its grammar accepts."""
    out = []
    for name, texts in values.items():
        for bound in bounds:
            g = from_json_schema({"type": "string", "format": name, "maxLength": bound})
            within = [t for t in texts if len(t) <= bound]
            refused = sorted((t for t in within if not g.accepts(json.dumps(t, ensure_ascii=False))), key=len)
            out.append(Fit(name, bound, len(within) - len(refused), len(within), refused))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--bounds", nargs="+", type=int, default=list(BOUNDS))
    parser.add_argument("--split", choices=["dev", "held", "all"], default="held")
    parser.add_argument("--examples", type=int, default=2, help="refused values to print per line, shortest first")
    args = parser.parse_args(argv)
    corpus = corpus_dir()
    if corpus is None:
        raise SystemExit("the corpus is not here (set AGENTKIT_CORPUS to its folder)")
    values = format_values(corpus, args.split, tuple(args.formats))
    print(f"values from JSONSchemaBench test documents ({args.split}): "
          + ", ".join(f"{len(v)} {name}" for name, v in values.items()))
    print(f"{'format':10s} {'maxLength':>9s} {'held':>13s}  refused, for example")
    for fit in fits(values, tuple(args.bounds)):
        examples = ", ".join(repr(t) for t in fit.refused[: args.examples])
        print(f"{fit.format:10s} {fit.bound:9d} {fit.held:5d}/{fit.values:<5d} {100 * fit.share:5.1f}%  {examples}")


if __name__ == "__main__":
    main()

"""How often the values are right: extraction's value accuracy, per value type and per schema.

    python -m bench.values                                   # measure half, default model, all engines
    python -m bench.values --model qwen2.5-coder-0.5b --engine agentkit --engine free
    python -m bench.values --engine agentkit:max_tokens=1024 --split tune --limit 12 --json out.json

The texts and their true values are `bench.value_texts` (120 texts over six schemas, half to
tune on and half only to measure; `--split` picks which, `measure` by default). Engines, each
given the same chat messages (those `extract` builds: its default instructions with the
schema, then the text) and decoding greedily:

- `agentkit`: `aextract(T, text, runtime=...)` with no other option, what a user gets by
  default; `agentkit:OPTION=VALUE,...` passes keyword options to it (a value is read as JSON
  where it parses, else kept as text), so each option is measured by this same command;
  `agentkit:form=model|compact|spaced|blanksN` sets the form of the output's JSON for that
  engine (`JSON_FORM`: the model's chat template's, compact, `json.dumps`'s separators, or up
  to N free blanks), and
  `agentkit:prompt=sketch|json-schema` how its instructions show the type (`SCHEMA_PROMPT`);
  `--prompt` sets the latter for every engine (free and Outlines are given the same messages);
- `free`: the same messages decoded with no grammar, the JSON read from the answer (in a
  fenced block or bare) and validated into `T`;
- `outlines`: Outlines' `Generator(model, T)` on llama-cpp-python with the same messages, where
  `outlines` is installed (a benchmark peer, never a dependency).

Scoring is fixed in code (`field_right`): strings equal ignoring case, runs of blanks and
surrounding punctuation; numbers equal to the cent; dates, times, enums and booleans exactly;
lists as multisets of such strings; a None right only where the truth is None. A document is
right when every field is. A failure (any error: out of tokens, not JSON, not valid) makes
every field of its document wrong and is counted by its kind. Texts run one at a time unless
`--concurrency N` lets N in flight (agentkit and free; the runtime batches them): an engine's
time per document is its wall time over the documents, a schema's the mean of its calls.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import re
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import Enum
from itertools import zip_longest
from typing import Any, Protocol

import pydantic

import runtimes
from agentkit import aextract
from agentkit._outputs import extract as extraction, output
from agentkit._outputs.extract import DEFAULT_INSTRUCTIONS, extraction_messages, output_spec
from bench import models
from bench._progress import progress
from bench.value_texts import CASES, KINDS, MODELS, Case

ENGINES = ("agentkit", "free", "outlines")
ABSENT = "optional-absent"
MAX_TOKENS = 512  # extract's default, given to every engine
CENT = Decimal("0.005")


# ---- scoring -------------------------------------------------------------------------------

def normal_text(value: Any) -> str:
    """`value` as compared: case folded, runs of blanks one space, punctuation around it gone."""
    text = " ".join(str(value).split()).casefold()
    start, end = 0, len(text)
    while start < end and (text[start].isspace() or unicodedata.category(text[start]).startswith("P")):
        start += 1
    while end > start and (text[end - 1].isspace() or unicodedata.category(text[end - 1]).startswith("P")):
        end -= 1
    return text[start:end]


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def field_right(kind: str, truth: Any, got: Any) -> bool:
    """Whether `got` is the true value `truth` of a field of `kind` (see `bench.value_texts`)."""
    if truth is None or got is None:
        return truth is None and got is None
    if kind in ("integer", "decimal"):
        t, g = _number(truth), _number(got)
        return t is not None and g is not None and abs(t - g) < CENT
    if kind == "enum":
        return getattr(truth, "value", truth) == getattr(got, "value", got)
    if kind == "date":
        return isinstance(got, datetime.date) and got.isoformat() == truth.isoformat()
    if kind in ("time", "bool"):
        return type(got) is type(truth) and got == truth
    if kind == "list":
        return isinstance(got, list) and Counter(map(normal_text, got)) == Counter(map(normal_text, truth))
    return isinstance(got, str) and normal_text(got) == normal_text(truth)


def fields_right(case: Case, value: pydantic.BaseModel | None) -> dict[str, bool]:
    """Each field of `case`'s schema: is `value` right there? (All wrong where `value` is None.)"""
    truth = case.model.model_validate(case.truth).model_dump()
    got = value.model_dump() if value is not None else None
    return {name: got is not None and field_right(kind, truth[name], got[name])
            for name, kind in KINDS[case.schema].items()}


def value_kind(case: Case, field: str) -> str:
    """The kind a field is reported under: its schema's, or optional-absent where the truth is None."""
    return ABSENT if case.truth[field] is None else KINDS[case.schema][field]


# ---- engines -------------------------------------------------------------------------------

class EngineUnavailable(RuntimeError):
    """An engine that cannot run here (a peer that is not installed), with the reason."""


class Unparseable(ValueError):
    """No JSON value could be read from a free answer."""


class Engine(Protocol):
    label: str

    async def read(self, case: Case) -> pydantic.BaseModel:
        """`case.text` read into `case.model`, or an exception (the failure, counted by kind)."""
        ...


RUN_PROMPT = output.SCHEMA_PROMPT  # `--prompt`: how free and Outlines are shown the type


def messages(case: Case) -> list[dict[str, Any]]:
    """The chat messages `extract` sends for `case` (its default instructions, the schema as
    `--prompt` says, the text)."""
    output.SCHEMA_PROMPT = RUN_PROMPT
    return extraction_messages(output_spec(case.model), case.text, None)


PROMPTS = ("sketch", "json-schema")
FORMS: dict[str, dict[str, Any] | None] = {"model": None, "compact": {}, "spaced": {"separators": (", ", ": ")}}


def json_form(name: str) -> dict[str, Any] | None:
    """The output form `agentkit:form=NAME` names: the model's own (its chat template's, the
    default), compact, spaced, or blanksN."""
    if name in FORMS:
        return FORMS[name]
    if isinstance(name, str) and re.fullmatch(r"blanks[1-9][0-9]*", name):
        return {"whitespace": int(name[len("blanks"):])}
    raise ValueError(f"unknown form {name!r}: model, compact, spaced or blanksN")


class Agentkit:
    def __init__(self, label: str, runtime: Any, options: dict[str, Any]):
        self.label, self.runtime, self.options = label, runtime, dict(options)
        self.form = json_form(self.options.pop("form")) if "form" in options else output.JSON_FORM
        self.prompt = self.options.pop("prompt", RUN_PROMPT)

    async def read(self, case: Case) -> pydantic.BaseModel:
        if output.JSON_FORM != self.form:  # engines run one after another: grammars built afresh
            output.JSON_FORM = self.form
            extraction._spec.cache_clear()
        output.SCHEMA_PROMPT = self.prompt
        return await aextract(case.model, case.text, runtime=self.runtime, **self.options)


class Free:
    label = "free"

    def __init__(self, runtime: Any):
        self.runtime = runtime

    async def read(self, case: Case) -> pydantic.BaseModel:
        generation = await self.runtime.generate(messages(case), max_tokens=MAX_TOKENS, temperature=0.0)
        return case.model.model_validate(json_in(generation.text))


class Outlines:
    """Outlines' `Generator(model, T)` on llama-cpp-python, the same messages, greedy."""

    label = "outlines"

    def __init__(self, model_path: str):
        try:
            import llama_cpp
            import outlines
        except ImportError as exc:
            raise EngineUnavailable(f"outlines or llama-cpp-python is not installed ({exc}); "
                                    "pip install outlines") from None
        self._chat = outlines.inputs.Chat
        self._generator = outlines.Generator
        self.model = outlines.from_llamacpp(llama_cpp.Llama(model_path, n_ctx=4096, n_threads=2, seed=0,
                                                             verbose=False))
        self.generators: dict[str, Any] = {}

    async def read(self, case: Case) -> pydantic.BaseModel:
        if case.schema not in self.generators:
            self.generators[case.schema] = self._generator(self.model, case.model)
        text = self.generators[case.schema](self._chat(messages(case)), max_tokens=MAX_TOKENS, temperature=0.0)
        try:
            json.loads(text)
        except ValueError:  # held to the schema's grammar, so only a cut answer fails to parse
            raise OutOfTokens(f"the answer ends unfinished: {text[-60:]!r}") from None
        return case.model.model_validate_json(text)


class OutOfTokens(RuntimeError):
    """A peer's answer that ran out of tokens before it was whole."""


_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n?(.*?)```", re.S)


def json_in(text: str) -> Any:
    """The JSON value an answer holds: a fenced block's, else the first object read from a `{`."""
    for block in _FENCE.findall(text):
        try:
            return json.loads(block)
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            return decoder.raw_decode(text, start)[0]
        except ValueError:
            start = text.find("{", start + 1)
    raise Unparseable(f"no JSON object in the answer: {text[:80]!r}")


def parse_engine(spec: str) -> tuple[str, dict[str, Any]]:
    """`agentkit:max_tokens=1024,grounded=auto` → ("agentkit", {"max_tokens": 1024, "grounded": "auto"})."""
    name, _, rest = spec.partition(":")
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    options: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"engine option {item!r} in {spec!r} is not OPTION=VALUE")
        try:
            options[key.strip()] = json.loads(raw)
        except ValueError:
            options[key.strip()] = raw
    if options and name != "agentkit":
        raise ValueError(f"only agentkit takes options, not {name!r} ({spec!r})")
    if "form" in options:
        json_form(options["form"])
    if options.get("prompt", "sketch") not in PROMPTS:
        raise ValueError(f"unknown prompt {options['prompt']!r}: {' or '.join(PROMPTS)}")
    return name, options


def build_engine(spec: str, runtime: Any, model_path: str | None) -> Engine:
    name, options = parse_engine(spec)
    if name == "agentkit":
        return Agentkit(spec, runtime, options)
    if name == "free":
        return Free(runtime)
    if model_path is None:
        raise EngineUnavailable("outlines needs a GGUF model file; this runtime has none")
    return Outlines(model_path)


# ---- running and reporting -----------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """One text read by one engine: each field right or not, the failure's kind, the time."""

    case: Case
    fields: dict[str, bool]
    failure: str | None
    seconds: float
    answer: Any  # the value read (JSON form), or the failure's message

    @property
    def right(self) -> bool:
        return self.failure is None and all(self.fields.values())


def select(split: str, limit: int | None = None, cases: Sequence[Case] = CASES) -> list[Case]:
    """The texts of `split` ("tune", "measure" or "all"), taken a schema at a time in turn, so that
    the first `limit` of them spread over every schema."""
    chosen = [c for c in cases if split == "all" or c.split == split]
    by_schema: dict[str, list[Case]] = defaultdict(list)
    for case in chosen:
        by_schema[case.schema].append(case)
    turns = [c for row in zip_longest(*by_schema.values()) for c in row if c is not None]
    return turns[:limit] if limit is not None else turns


async def score(engine: Engine, case: Case) -> Outcome:
    start = time.perf_counter()
    try:
        value = await engine.read(case)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # every failure counts, by its kind
        seconds = time.perf_counter() - start
        return Outcome(case, dict.fromkeys(KINDS[case.schema], False), type(exc).__name__, seconds, str(exc)[:300])
    seconds = time.perf_counter() - start
    return Outcome(case, fields_right(case, value), None, seconds, value.model_dump(mode="json"))


async def run(engine: Engine, cases: Sequence[Case], concurrency: int = 1) -> list[Outcome]:
    """Every case read by `engine`, at most `concurrency` at a time (a local runtime batches
    the calls in flight into one forward pass per step)."""
    gate = asyncio.Semaphore(concurrency)

    async def one(case: Case) -> Outcome:
        async with gate:
            return await score(engine, case)

    tasks = [asyncio.ensure_future(one(case)) for case in cases]
    return [await task for task in progress(tasks, engine.label)]


def summary(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Fields right per value type and per schema; documents right, failures and time per schema."""
    by_type: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_schema: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        s = by_schema.setdefault(o.case.schema, {"documents": 0, "fields": 0, "fields_right": 0, "all_right": 0,
                                                 "failures": Counter(), "seconds": 0.0})
        s["documents"] += 1
        s["fields"] += len(o.fields)
        s["fields_right"] += sum(o.fields.values())
        s["all_right"] += o.right
        s["seconds"] += o.seconds
        if o.failure:
            s["failures"][o.failure] += 1
        for name, ok in o.fields.items():
            cell = by_type[value_kind(o.case, name)]
            cell[0] += 1
            cell[1] += ok
    total = {"documents": len(outcomes), "fields": sum(len(o.fields) for o in outcomes),
             "fields_right": sum(sum(o.fields.values()) for o in outcomes),
             "all_right": sum(o.right for o in outcomes),
             "failures": Counter(o.failure for o in outcomes if o.failure),
             "seconds": sum(o.seconds for o in outcomes)}
    return {"total": total, "by_schema": by_schema,
            "by_type": {kind: {"fields": n, "fields_right": r} for kind, (n, r) in by_type.items()}}


def _pct(right: int, n: int) -> str:
    return f"{right / n:.0%}" if n else "–"


def _failures(counts: Counter) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in counts.most_common()) or "0"


def _cell(s: dict[str, Any]) -> str:
    failed = sum(s["failures"].values())
    return (f"{_pct(s['fields_right'], s['fields'])} · {s['all_right']}/{s['documents']}"
            + (f" · {failed} failed" if failed else "") + f" · {s['seconds'] / s['documents']:.1f} s")


TYPE_ORDER = ("name", "free string", "code", "email", "integer", "decimal", "enum", "date", "time", "list", "bool",
              ABSENT)


def report(results: dict[str, list[Outcome]], walls: dict[str, float] | None = None) -> str:
    """Markdown tables: each engine overall (its time per document: its wall time over the
    documents, where given), fields right per value type, and per schema (the mean time of a
    document's call)."""
    sums = {label: summary(outcomes) for label, outcomes in results.items()}
    labels = list(sums)
    lines = ["| engine | fields right | documents all right | failures | s per document |", "|---|---|---|---|---|"]
    for label, s in sums.items():
        t = s["total"]
        seconds = walls[label] if walls and label in walls else t["seconds"]
        lines.append(f"| {label} | {_pct(t['fields_right'], t['fields'])} ({t['fields_right']}/{t['fields']}) | "
                     f"{t['all_right']} of {t['documents']} | {_failures(t['failures'])} | "
                     f"{seconds / max(1, t['documents']):.2f} |")
    kinds = sorted({k for s in sums.values() for k in s["by_type"]},
                   key=lambda k: TYPE_ORDER.index(k) if k in TYPE_ORDER else len(TYPE_ORDER))
    lines += ["", "| value type | fields | " + " | ".join(labels) + " |", "|---|---|" + "---|" * len(labels)]
    for kind in kinds:
        n = next(s["by_type"][kind]["fields"] for s in sums.values() if kind in s["by_type"])
        cells = [_pct(s["by_type"][kind]["fields_right"], s["by_type"][kind]["fields"]) if kind in s["by_type"]
                 else "–" for s in sums.values()]
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    schemas = [name for name in MODELS if any(name in s["by_schema"] for s in sums.values())]
    lines += ["", "fields right · documents all right · failures · s per document's call", "",
              "| schema | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for name in schemas:
        cells = [_cell(s["by_schema"][name]) if name in s["by_schema"] else "–" for s in sums.values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def as_json(model: str, split: str, results: dict[str, list[Outcome]], walls: dict[str, float]) -> dict[str, Any]:
    return {"model": model, "split": split, "engines": {
        label: {"summary": summary(outcomes), "wall_seconds": round(walls.get(label, 0.0), 3), "documents": [
            {"id": o.case.id, "fields": o.fields, "failure": o.failure, "seconds": round(o.seconds, 3),
             "answer": o.answer} for o in outcomes]}
        for label, outcomes in results.items()}}


async def measure(engines: Sequence[Engine], cases: Sequence[Case], concurrency: int = 1
                  ) -> tuple[dict[str, list[Outcome]], dict[str, float]]:
    """Every engine over `cases`, one engine after another: the outcomes and each engine's wall
    time. Outlines reads one text at a time whatever `concurrency` says."""
    results, walls = {}, {}
    for engine in engines:
        start = time.perf_counter()
        results[engine.label] = await run(engine, cases, 1 if isinstance(engine, Outlines) else concurrency)
        walls[engine.label] = time.perf_counter() - start
    return results, walls


def main(argv: list[str] | None = None) -> int:
    global RUN_PROMPT
    parser = argparse.ArgumentParser(prog="python -m bench.values", description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", action="append", metavar="NAME[:OPTION=VALUE,...]",
                        help=f"repeatable; one of {', '.join(ENGINES)} (default: all three)")
    parser.add_argument("--split", choices=("measure", "tune", "all"), default="measure")
    parser.add_argument("--limit", type=int, default=None, help="at most this many texts, spread over the schemas")
    parser.add_argument("--schema", action="append", choices=sorted(MODELS), default=None,
                        help="only this schema's texts (repeatable; default: every schema)")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="texts in flight at once, batched by the runtime (agentkit and free; default 1)")
    parser.add_argument("--json", help="write every document's verdict and answer here")
    parser.add_argument("--prompt", choices=PROMPTS, default=RUN_PROMPT,
                        help=f"how the instructions show the type, for every engine (default {RUN_PROMPT})")
    models.add_model_option(parser)
    args = parser.parse_args(argv)
    RUN_PROMPT = args.prompt
    specs = args.engine or list(ENGINES)
    try:
        for spec in specs:
            parse_engine(spec)
    except ValueError as exc:
        parser.error(str(exc))
    runtime = models.runtime(args.model)
    model_path = str(models.resolve(args.model) if args.model else runtimes.default_model_path())
    engines: list[Engine] = []
    for spec in specs:
        try:
            engines.append(build_engine(spec, runtime, model_path))
        except EngineUnavailable as exc:
            print(f"{spec}: unavailable: {exc}", file=sys.stderr)
    cases = select(args.split, args.limit, [c for c in CASES if args.schema is None or c.schema in args.schema])
    print(f"model: {runtime.name}  split: {args.split} ({len(cases)} texts)  max_tokens: {MAX_TOKENS}  "
          f"concurrency: {args.concurrency}  instructions: {DEFAULT_INSTRUCTIONS!r} + the schema as {args.prompt}")
    results, walls = asyncio.run(measure(engines, cases, max(1, args.concurrency)))
    print(report(results, walls))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(as_json(runtime.name, args.split, results, walls), out, ensure_ascii=False, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

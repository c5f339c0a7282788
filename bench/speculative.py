"""Fewer forward passes than tokens: realistic extractions decoded free, constrained, with
jump-forward, with jump-forward and prompt lookup (`draft="prompt"`), and with jump-forward and
a draft model (`--draft`: `draft=PATH`), timed from the caller's side.

    python -m bench.speculative [--model NAME|PATH ...] [--draft NAME|PATH] [--rounds 1] [--max-tokens 320] [--docs N]

The documents: texts to extract from for bench.masker's contact, invoice and ticket schemas, and
people for bench._people's schema, each with its instructions as the system message. Per model
and round, every document is run once per mode, the modes in an order that turns by document.
Each document's prompt is read once first (a two-token call, untimed, which also compiles its
grammar and, with a draft model, has the draft model read it too), so every timed call finds it cached and the times are those of decoding: the same
prompt read would otherwise be added to every mode (`--cold-prompts`: forget the cache before
each call, and time the whole prompt read too). Greedy throughout.

Columns, per mode: ms per document and per output token (wall time of `generate`), output tokens and forward passes per document (`usage.forward_passes`: the passes
whose logits chose tokens), passes per token, the drafter's acceptance rate, and how many
outputs equal plain constrained greedy's token for token; with a draft model, the draft
model's own passes per document too (they cost time, not target passes). The last lines give
the two ratios of the acceptance figure for each drafter: constrained with jump-forward and the
drafter over free decoding of the same requests, in wall time per output token, and its passes
over its tokens.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grammar
from bench import _people, models
from bench._progress import progress
from bench.agent_tasks import AGENT_TOOL_PROMPT
from bench.masker import SCHEMAS as MASKER_SCHEMAS
from runtimes import Usage

MODES = ("free", "constrained", "+ jump-forward", "+ prompt lookup")
DRAFT_MODE = "+ draft model"
DRAFTERS = ("+ prompt lookup", DRAFT_MODE)
# How each mode sets the runtime: (grammar on, jump_forward, draft); the draft model's path is
# filled in by `run`.
SETTINGS = {
    "free": (False, False, None),
    "constrained": (True, False, None),
    "+ jump-forward": (True, True, None),
    "+ prompt lookup": (True, True, "prompt"),
}

_INSTRUCTIONS = {
    "contact": "Extract the contact in the message as a JSON object: name, email, phone (if given) and tags "
               "(short topics the person mentions).",
    "invoice": "Extract the invoice in the text as a JSON object: number, issued (a date, YYYY-MM-DD), customer, "
               "lines (description, qty, price) and currency.",
    "ticket": "Extract the support ticket as a JSON object: id, title, body (the description, word for word), "
              "reporter (email), labels and due (YYYY-MM-DD, if given).",
}
_TEXTS = {
    "contact": [
        "Hello, this is Ada Lovelace. You can reach me at ada@example.org or call +44 20 7946 0958. "
        "I mostly write about math and poetry.",
        "Hi team, Grace Hopper here (grace.hopper@navy.example.com, phone +1 202 555 0147). "
        "Happy to talk about compilers, debugging or teaching.",
    ],
    "invoice": [
        "Invoice INV-004217, issued 2024-11-05 to Babbage Engines Ltd. Line 1: Difference engine, brass, "
        "assembled, quantity 1, price 1200.00. Line 2: Punched cards (box of 500), quantity 3, price 18.50. "
        "All amounts in GBP.",
        "INVOICE INV-000981 dated 2025-02-17. Bill to: Northwind Traders. 2 x Espresso machine, 349.99 each; "
        "10 x Coffee beans 1kg, 21.50 each. Currency: EUR.",
    ],
    "ticket": [
        "Ticket OPS-3141: Nightly export fails on the reporting cluster. Reported by grace@example.com, "
        "due 2024-12-01, labels export, storage, p2. Since Monday the nightly export job stops after about "
        "twenty minutes with a timeout from the storage layer. Retrying by hand works.",
        "WEB-204 Login button does nothing on Safari. From: tim@example.net. Labels: frontend, safari. "
        "Clicking the login button on Safari 17 does nothing; the console shows a blocked popup warning.",
    ],
}


@dataclass(frozen=True)
class Document:
    name: str
    schema: dict
    messages: list[dict[str, str]]


def documents() -> list[Document]:
    """Two texts for each of masker's contact, invoice and ticket schemas, then people."""
    found = []
    for name, texts in _TEXTS.items():
        schema = MASKER_SCHEMAS[name][0]
        for i, text in enumerate(texts):
            found.append(Document(f"{name} {i + 1}", schema,
                                  [{"role": "system", "content": _INSTRUCTIONS[name]}, {"role": "user", "content": text}]))
    for i, text in enumerate(_people.TEXTS[:4]):
        found.append(Document(f"person {i + 1}", _people.SCHEMA, _people.messages(text)))
    return found


@dataclass
class Tally:
    seconds: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    passes: list[int] = field(default_factory=list)
    drafted: int = 0
    accepted: int = 0
    equal: int = 0
    runs: int = 0
    draft_passes: int = 0
    correct: int | None = None  # BFCL items: answers whose calls are right (AST)
    answers: dict[tuple[str, int], object] = field(default_factory=dict)  # (document, round): its answer


@dataclass(frozen=True)
class Job:
    """One request, run once per mode: `call(constrained)` makes it on the runtime as set for
    the mode and returns (usage, answer, right or None); `warm` reads its prompt, untimed."""

    name: str
    call: Callable[[bool], tuple[Any, object, bool | None]]
    warm: Callable[[], object] | None = None


def extraction_jobs(rt: Any, docs: list[Document], max_tokens: int) -> list[Job]:
    grammars = {doc.name: grammar.from_json_schema(doc.schema) for doc in docs}

    def job(doc: Document) -> Job:
        def call(constrained: bool) -> tuple[Any, object, bool | None]:
            g = rt.generate_sync(doc.messages, grammar=grammars[doc.name] if constrained else None, max_tokens=max_tokens)
            if constrained and g.finish_reason != "grammar_complete":
                print(f"  {doc.name}: finished with {g.finish_reason}", file=sys.stderr)
            return g.usage, g.token_ids, None
        return Job(doc.name, call, lambda: rt.generate_sync(doc.messages, grammar=grammars[doc.name], max_tokens=2))

    return [job(doc) for doc in docs]


def bfcl_jobs(rt: Any, limit: int, max_tokens: int) -> list[Job]:
    """The first `limit` BFCL simple_python items, each one turn of the default `Agent` (its
    prompt, tools and turn grammar; free: the same agent with the grammar dropped), as
    `bench.bfcl` runs them."""
    from bench import bfcl

    if bfcl.corpus_missing():
        return []
    items, _ = bfcl.load("simple_python", bfcl.corpus_bfcl(), limit)

    def job(item: Any) -> Job:
        def call(constrained: bool) -> tuple[Any, object, bool | None]:
            o = asyncio.run(bfcl.agent_turn(item, rt, "simple_python", max_tokens, AGENT_TOOL_PROMPT, free=not constrained))
            return o.usage, o.text, o.correct
        def warm() -> None:  # a turn cut at two tokens: its prompt read, nothing more
            asyncio.run(bfcl.agent_turn(item, rt, "simple_python", 2, AGENT_TOOL_PROMPT))

        return Job(item.id, call, warm)

    return [job(item) for item in items]


def run(rt: Any, jobs: list[Job], rounds: int, cold_prompts: bool, draft: str | None = None) -> dict[str, Tally]:
    """Every job once per mode and round, the modes in an order that turns by job."""
    modes = MODES + ((DRAFT_MODE,) if draft else ())
    settings = SETTINGS | ({DRAFT_MODE: (True, True, str(models.resolve(draft)))} if draft else {})
    tallies = {mode: Tally() for mode in modes}
    saved = rt.jump_forward, rt.draft
    drafter = None
    try:
        if draft:  # loaded once (the runtime keeps it between settings), for its pass count
            rt.draft = settings[DRAFT_MODE][2]
            drafter = rt._drafter
        for r in range(rounds):
            for d, job in enumerate(progress(jobs, f"round {r + 1}")):
                if job.warm is not None:
                    # Untimed, with the drafter that reads the prompt (the draft model has a
                    # cache of its own), so every mode's timed call finds its prompt read.
                    rt.jump_forward, rt.draft = True, settings[DRAFT_MODE][2] if draft else None
                    job.warm()
                turn = (d + r) % len(modes)
                for mode in modes[turn:] + modes[:turn]:
                    constrained, rt.jump_forward, rt.draft = settings[mode]
                    if cold_prompts:
                        rt.forget_caches()
                    passes_before = drafter.passes if drafter is not None else 0
                    started = time.perf_counter()
                    usage, answer, right = job.call(constrained)
                    elapsed = time.perf_counter() - started
                    usage = usage or Usage()  # a turn that failed before any generation
                    tally = tallies[mode]
                    if mode == DRAFT_MODE:
                        tally.draft_passes += drafter.passes - passes_before
                    tally.seconds.append(elapsed)
                    tally.tokens.append(usage.completion_tokens)
                    tally.passes.append(usage.forward_passes)
                    tally.drafted += usage.drafted_tokens
                    tally.accepted += usage.accepted_tokens
                    tally.runs += 1
                    if right is not None:
                        tally.correct = (tally.correct or 0) + right
                    tally.answers[(job.name, r)] = answer
        plain = tallies["constrained"].answers
        for mode in modes[1:]:
            tally = tallies[mode]
            tally.equal = sum(answer == plain[key] for key, answer in tally.answers.items())
    finally:
        rt.jump_forward, rt.draft = saved
    return tallies


def report(tallies: dict[str, Tally]) -> None:
    drafting = DRAFT_MODE in tallies
    scored = tallies["free"].correct is not None
    print("| mode | ms / document | ms / token | tokens / document | passes / document | passes / token "
          "| acceptance | equal to plain greedy |" + (" draft passes / document |" if drafting else "")
          + (" AST accuracy |" if scored else ""))
    print("|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if drafting else "") + ("---:|" if scored else ""))
    for mode, t in tallies.items():
        tokens, passes = sum(t.tokens), sum(t.passes)
        acceptance = f"{t.accepted / t.drafted:.0%} of {t.drafted / t.runs:.0f}" if t.drafted else "-"
        equal = f"{t.equal}/{t.runs}" if mode != "free" else "-"
        draft_passes = (f" {t.draft_passes / t.runs:.1f} |" if mode == DRAFT_MODE else " - |") if drafting else ""
        print(f"| {mode} | {statistics.fmean(t.seconds) * 1e3:.0f} | {sum(t.seconds) / tokens * 1e3:.1f} | "
              f"{tokens / t.runs:.1f} | {passes / t.runs:.1f} | {passes / tokens:.2f} | {acceptance} | {equal} |"
              + draft_passes + (f" {(t.correct or 0) / t.runs:.0%} |" if scored else ""))
    free = tallies["free"]
    print()
    for mode in DRAFTERS:
        if mode not in tallies:
            continue
        best = tallies[mode]
        per_token = (sum(best.seconds) / sum(best.tokens)) / (sum(free.seconds) / sum(free.tokens))
        print(f"{mode[2:]} + jump-forward vs free: wall time per output token {per_token:.2f}x; "
              f"forward passes / tokens {sum(best.passes) / sum(best.tokens):.2f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", metavar="NAME|PATH",
                        help=f"repeatable: a GGUF file or one of {', '.join(models.MODELS)} (default: the default model)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=320)
    parser.add_argument("--docs", type=int, default=None, help="only the first N documents")
    parser.add_argument("--cold-prompts", action="store_true", help="read every prompt anew in every call, timed")
    parser.add_argument("--draft", metavar="NAME|PATH",
                        help="a draft model with the same vocabulary (a GGUF file or a model name): adds a mode")
    parser.add_argument("--bfcl", type=int, default=0, metavar="N",
                        help="also the first N BFCL simple_python items, one default agent turn each")
    args = parser.parse_args(argv)
    docs = documents()[: args.docs]
    for model in args.model or [None]:
        rt = models.runtime(model)
        print(f"# {rt.name}: {len(docs)} extractions, {args.rounds} round(s), max_tokens={args.max_tokens}"
              + (", every prompt read in every call" if args.cold_prompts else ", prompts cached")
              + (f", draft model {args.draft}" if args.draft else ""), flush=True)
        report(run(rt, extraction_jobs(rt, docs, args.max_tokens), args.rounds, args.cold_prompts, args.draft))
        jobs = bfcl_jobs(rt, args.bfcl, args.max_tokens) if args.bfcl else []
        if jobs:
            print(f"\n# {rt.name}: {len(jobs)} BFCL simple_python items, one default agent turn each", flush=True)
            report(run(rt, jobs, args.rounds, args.cold_prompts, args.draft))
    return 0


if __name__ == "__main__":
    sys.exit(main())

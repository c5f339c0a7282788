"""Do the agent's answers come from its tools? Requests whose right answers only the tools hold
(`bench.values_world`), run through `Agent(tools, runtime=...)` as a user would, and scored
by a rule fixed before any tuning.

    python -m bench.agent_values                                   # default agent, default model
    python -m bench.agent_values --model qwen2.5-coder-0.5b --agent default --agent tool_choice=required

`--agent OPTION=VALUE ...` gives one run mode: the agent built with those options (VALUE read
as JSON where it parses, else as text: `tool_choice=required`, `max_steps=4`); repeat it for
several modes on the same loaded model, `--agent default` being no option at all. Without it
the one mode is the default agent. `--split` picks the `measure` half (default), the `tune`
half or `all`; `--limit N` the first N requests, taken in turn from each kind.

Scoring (fixed before tuning):

- A numeric answer is right when the final output states the expected number (thousands
  separators dropped, equal within 0.01) and no number the conversation does not hold: every
  number in the output must equal, within 0.01 and up to sign, one in the user's request, in a
  tool result or the expected answer; any other number is invented, and the answer wrong.
- A word answer is right when the output states the word (whole word, any case) and not its
  negation ("not X", "no X", "isn't X").
- A request no tool fits is right when the run answers without a call (a decline, whatever
  it says); any call is spurious.

Per mode the report gives: right answers (all, and per kind), needed calls made (each needed
tool called at least once with the arguments that matter; arguments of `multiply` in either
order), the one-step requests' needed call alone, requests with a spurious call (a call to a
tool the request does not need), declines on no-tool requests, runs ending in an error (and
their kinds), mean model turns and mean seconds per request.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit import Agent, RunError
from bench import models
from bench._progress import progress
from bench.values_world import COMMUTATIVE, KINDS, REQUESTS, TOOLS, Call, Request
from runtimes import Runtime

TOLERANCE = 0.01
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_NEGATIONS = ("not", "no", "isn't", "isn’t")


def numbers(text: str) -> list[float]:
    """The numbers written in `text`, thousands separators dropped; digits inside a word or an
    id (`K-4410` gives 4410, never -4410) and the parts of a date (`2024-03-18`) read apart."""
    return [float(n.replace(",", "")) for n in _NUMBER.findall(text)]


def states_number(output: str, expected: float, held: Iterable[float]) -> bool:
    """Whether `output` states `expected` and no number outside `held` (and `expected`)."""
    found = numbers(output)
    allowed = [abs(h) for h in (*held, expected)]
    return (any(math.isclose(n, expected, abs_tol=TOLERANCE) for n in found)
            and all(any(math.isclose(abs(n), h, abs_tol=TOLERANCE) for h in allowed) for n in found))


def states_word(output: str, word: str) -> bool:
    """Whether `output` states `word` (whole word, any case) and nowhere its negation."""
    said = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
    negated = re.compile(rf"(?<!\w)(?:{'|'.join(map(re.escape, _NEGATIONS))})\s+{re.escape(word)}(?!\w)", re.IGNORECASE)
    return bool(said.search(output)) and not negated.search(output)


def is_right(request: Request, output: str, held: Iterable[float], calls: Sequence[Call]) -> bool:
    """The fixed rule: the expected number or word stated, or for a request no tool fits, no call."""
    if request.answer is None:
        return not calls
    if isinstance(request.answer, str):
        return states_word(output, request.answer)
    return states_number(output, request.answer, held)


def call_matches(needed: Call, made: Call) -> bool:
    """Whether `made` calls `needed`'s tool with the arguments that matter."""
    name, want = needed
    if made[0] != name:
        return False
    got = made[1]
    if name in COMMUTATIVE:
        return len(got) == len(want) and _same_values(sorted(want.values(), key=_order), sorted(got.values(), key=_order))
    return all(key in got and _same(value, got[key]) for key, value in want.items())


def _order(value: object) -> tuple[int, float | str]:
    number = _as_number(value)
    return (0, number) if number is not None else (1, str(value))


def _same_values(want: Sequence[object], got: Sequence[object]) -> bool:
    return all(_same(w, g) for w, g in zip(want, got, strict=True))


def _same(want: object, got: object) -> bool:
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        number = _as_number(got)
        return number is not None and math.isclose(number, want, abs_tol=TOLERANCE)
    return isinstance(got, str) and got.strip().casefold() == str(want).casefold()


def _as_number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return None


@dataclass
class Outcome:
    """One request's run in one mode."""

    request: str
    kind: str
    mode: str
    output: str
    right: bool
    needed_made: bool
    spurious: int
    steps: int
    seconds: float
    calls: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    """What each call returned (or its error), as the model read it."""
    error: str | None = None
    """The `RunError` subclass's name where the run stopped early; the message is in `detail`."""
    detail: str = ""


def calls_in(messages: Sequence[dict[str, Any]]) -> list[Call]:
    """Every call the model made, in order, as (name, arguments) read from the assistant turns."""
    found: list[Call] = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                arguments = {}
            found.append((str(function.get("name")), arguments if isinstance(arguments, dict) else {}))
    return found


def held_numbers(request: Request, messages: Sequence[dict[str, Any]]) -> list[float]:
    """The numbers the conversation holds: the user's request and the tool results."""
    texts = [request.text] + [str(m.get("content")) for m in messages if m.get("role") == "tool"]
    return [n for text in texts for n in numbers(text)]


def score(request: Request, mode: str, output: str, messages: Sequence[dict[str, Any]], steps: int,
          seconds: float, error: RunError | None = None) -> Outcome:
    """The outcome of one run, from its final output (empty where it failed) and its messages."""
    calls = calls_in(messages)
    needed = {name for name, _ in request.calls}
    return Outcome(
        request.id, request.kind, mode, output,
        right=error is None and is_right(request, output, held_numbers(request, messages), calls),
        needed_made=bool(request.calls) and all(any(call_matches(n, c) for c in calls) for n in request.calls),
        spurious=sum(name not in needed for name, _ in calls),
        steps=steps, seconds=seconds,
        calls=[f"{name}({json.dumps(arguments, ensure_ascii=False)})" for name, arguments in calls],
        results=[str(m.get("content")) for m in messages if m.get("role") == "tool"],
        error=type(error).__name__ if error else None, detail=str(error) if error else "",
    )


async def run_one(request: Request, agent: Agent[Any], mode: str) -> Outcome:
    start = time.perf_counter()
    try:
        result = await agent.run(request.text)
    except RunError as exc:
        turns = sum(m.get("role") == "assistant" for m in exc.messages)
        return score(request, mode, "", exc.messages, turns, time.perf_counter() - start, exc)
    messages = [dict(m) for m in result.messages]
    return score(request, mode, str(result.output), messages, result.steps, time.perf_counter() - start)


def parse_options(items: Sequence[str]) -> dict[str, Any]:
    """`OPTION=VALUE` items as `Agent` keyword arguments (VALUE as JSON where it parses);
    `default` alone is no option."""
    options: dict[str, Any] = {}
    for item in items:
        if item == "default":
            continue
        key, sep, raw = item.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"--agent {item!r}: expected OPTION=VALUE (tool_choice=required) or 'default'")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
    return options


def mode_name(options: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "default"


def build_agent(runtime: Runtime, options: dict[str, Any]) -> Agent[Any]:
    """The user's agent: every tool, the runtime, and only the options the mode names."""
    return Agent(list(TOOLS), runtime=runtime, **options)


def run_mode(requests: Sequence[Request], runtime: Runtime, options: dict[str, Any],
             verbose: bool = False) -> list[Outcome]:
    """Each request run alone, in order, on a fresh run of one agent."""
    agent, mode = build_agent(runtime, options), mode_name(options)

    async def all_of() -> list[Outcome]:
        found = []
        for request in progress(requests, mode):
            outcome = await run_one(request, agent, mode)
            found.append(outcome)
            if verbose:
                mark = "ok  " if outcome.right else "FAIL"
                print(f"  {mode:<22} {mark} {outcome.request:<16} {outcome.steps} steps  {'; '.join(outcome.calls)}"
                      f"  -> {outcome.output[:100]!r}{'  ' + outcome.error if outcome.error else ''}", file=sys.stderr)
        return found

    return asyncio.run(all_of())


def select(split: str, limit: int | None) -> list[Request]:
    """The split's requests; with `limit`, the first `limit` taken in turn from each kind."""
    chosen = [r for r in REQUESTS if split == "all" or r.split == split]
    if limit is None:
        return chosen
    by_kind = [[r for r in chosen if r.kind == kind] for kind in KINDS]
    interleaved: list[Request] = []
    for i in range(max(map(len, by_kind))):
        interleaved += [group[i] for group in by_kind if i < len(group)]
    return interleaved[:limit]


@dataclass
class Summary:
    """One mode's counts (each `(k, n)`: k of n requests)."""

    mode: str
    right: tuple[int, int]
    right_by_kind: dict[str, tuple[int, int]]
    needed_made: tuple[int, int]
    one_step_needed_made: tuple[int, int]
    spurious: tuple[int, int]
    spurious_calls: int
    declines: tuple[int, int]
    errors: dict[str, int]
    mean_steps: float
    mean_seconds: float


def summarize(outcomes: Sequence[Outcome]) -> list[Summary]:
    summaries = []
    for mode in dict.fromkeys(o.mode for o in outcomes):
        rows = [o for o in outcomes if o.mode == mode]
        tools = [o for o in rows if o.kind != "no-tool"]
        one = [o for o in rows if o.kind == "one-step"]
        none = [o for o in rows if o.kind == "no-tool"]
        summaries.append(Summary(
            mode, _count(rows, "right"),
            {kind: _count([o for o in rows if o.kind == kind], "right") for kind in KINDS},
            _count(tools, "needed_made"), _count(one, "needed_made"),
            (sum(o.spurious > 0 for o in rows), len(rows)), sum(o.spurious for o in rows),
            _count(none, "right"), dict(Counter(o.error for o in rows if o.error)),
            sum(o.steps for o in rows) / len(rows), sum(o.seconds for o in rows) / len(rows),
        ))
    return summaries


def _count(rows: Sequence[Outcome], attribute: str) -> tuple[int, int]:
    return (sum(bool(getattr(o, attribute)) for o in rows), len(rows))


def report(outcomes: Sequence[Outcome]) -> str:
    """A Markdown table, one row per mode, and each mode's errors by kind."""
    head = ("| mode | right answers | one-step | two-step | declines (no tool fits) | needed calls made "
            "| one-step: needed call | spurious calls | errors | steps | s/request |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for s in summarize(outcomes):
        errors = sum(s.errors.values())
        lines.append(
            f"| {s.mode} | {_frac(s.right)} | {_frac(s.right_by_kind['one-step'])} | {_frac(s.right_by_kind['two-step'])} "
            f"| {_frac(s.declines)} | {_frac(s.needed_made)} | {_frac(s.one_step_needed_made)} "
            f"| {s.spurious[0]} requests ({s.spurious_calls} calls) | {errors} | {s.mean_steps:.2f} | {s.mean_seconds:.1f} |"
        )
    for s in summarize(outcomes):
        if s.errors:
            lines.append(f"\n{s.mode}: errors " + ", ".join(f"{n} {kind}" for kind, n in sorted(s.errors.items())))
    return "\n".join(lines)


def _frac(count: tuple[int, int]) -> str:
    k, n = count
    return f"{k}/{n} ({k / n:.0%})" if n else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_values", description=__doc__.split("\n\n")[0])
    models.add_model_option(parser)
    parser.add_argument("--agent", nargs="+", action="append", metavar="OPTION=VALUE",
                        help="one run mode: Agent options (tool_choice=required); 'default' for none; repeat for more")
    parser.add_argument("--split", choices=["measure", "tune", "all"], default="measure")
    parser.add_argument("--limit", type=int, help="only the first N requests, taken in turn from each kind")
    parser.add_argument("--json", type=Path, help="write every outcome and the summaries here")
    parser.add_argument("--verbose", action="store_true", help="print each request's calls and answer on stderr")
    args = parser.parse_args(argv)
    try:
        modes = [parse_options(items) for items in args.agent or [["default"]]]
    except ValueError as exc:
        parser.error(str(exc))
    requests = select(args.split, args.limit)
    runtime = models.runtime(args.model)
    outcomes: list[Outcome] = []
    for options in modes:
        outcomes += run_mode(requests, runtime, options, args.verbose)
        if args.json:  # after each mode, so a run stopped midway keeps the modes it finished
            args.json.write_text(json.dumps({
                "model": args.model or "default", "split": args.split,
                "summaries": [dataclasses.asdict(s) for s in summarize(outcomes)],
                "outcomes": [dataclasses.asdict(o) for o in outcomes],
            }, indent=1, ensure_ascii=False))
    print(report(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""BFCL evaluation: a model (the default one, or `--model`), unconstrained and constrained to tool calls, on the same
prompts, scored with BFCL's AST rules.

    python -m bench.bfcl                       # every category and item, as `Agent(tools)` runs it
    python -m bench.bfcl --limit 20            # the first 20 items of each category
    python -m bench.bfcl --categories parallel --json out.json
    python -m bench.bfcl --model qwen2.5-coder-0.5b --categories simple_python --limit 30
    python -m bench.bfcl --model qwen2.5-coder-0.5b --categories irrelevance

Data: `$AGENTKIT_CORPUS/bfcl` (default `../shared/corpus/bfcl`), BFCL v4 (Apache-2.0).

By default (`--prompt agent`) each item is one turn of `Agent(tools)` with its defaults, as a user
builds it (`--tool-prompt` changes only that option): its prompt, tool rendering and turn
grammar (calls or a text answer), the calls read as the agent reads them (every call waits for
approval, so none runs). The free run is the same agent with the grammar dropped
(`bench.agent_tasks.FreeDecoding`: calls read in every form models write them). These are the
figures a user of the default agent gets.

`--prompt template` and `--prompt python` are the benchmark's own runs, for comparing grammars:
both runs show the model the same messages and tool list (the runtime's own tool rendering);
the unconstrained answer is read in every form models write calls (`bench.free_calls`), so a
free failure is the model's, not the parser's; the constrained one is held by `grammar.tool_calls` with calls
forced and `max_calls` from the category. Scoring follows BFCL's documented AST checker: the
function name matches; every required parameter is present and no unknown one; each value
equals one of the `possible_answer` values (an int is accepted where a float is expected;
strings compared lowercased with spaces and `,./-_*^` removed; lists and dicts element by
element; an optional parameter may be absent where `""` is among its answers); in parallel
categories the calls match the expected calls in any order.

`--variant ENVELOPES[:WHITESPACE]` (repeatable) sets how the constrained runs may write a call:
`hermes,fenced,json:12` lets the model open each call in a `<tool_call>` tag, a ```json fence
or bare, with up to 12 blanks between JSON tokens; `model` (the default) is the runtime's own
envelope, compact. `+preamble` lets free text come before the calls (the first tag or fence
opens them, as `grammar.tool_calls(..., preamble=True)`), as the agent's turns allow. Each
variant is one more constrained run of every item beside the same free run, and gets its own
table.

`--prompt python` asks for calls as BFCL's prompt mode does: a system message lists the
function docs and asks for `[func_name1(params_name1=params_value1, ...), func_name2(params)]`,
and no tools go to the chat template; both runs see it, and the `python` variant holds the
constrained run to that list (`grammar.tool_calls(..., envelope="python")`).

`--think TOKENS` asks both runs to reason inside `<think></think>` before answering (a
sentence in the system message); the free answer is read after its reasoning, and each
constrained run opens with a reasoning span of at most TOKENS tokens
(`grammar.after_reasoning`), for models that think.

`irrelevance` items offer tools that do not fit the question: the right answer is no call.
Its constrained run is held by `grammar.tool_calls_or_text` (a call or text that cannot be
mistaken for one), and its "AST" columns are the rate of answers with no call, as BFCL scores
it. `--concurrency` items are in flight at once (default 8; the local runtime batches them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, get_args

import grammar
from agentkit import (
    Agent,
    ModelSettings,
    RunError,
    Tool,
    ToolArgumentsError,
    ToolDefinitionError,
    ToolPrompt,
    UnexpectedModelOutput,
)
from bench import models
from bench.agent_tasks import AGENT_TOOL_PROMPT, FreeDecoding
from bench._progress import progress
from bench.free_calls import parse_free_calls

CATEGORIES = ("simple_python", "multiple", "parallel", "irrelevance")
MAX_CALLS = {"simple_python": 1, "multiple": 1, "parallel": 8, "irrelevance": 1}
PROMPTS = ("agent", "template", "python")
NO_CALL = ("irrelevance",)
"""Categories whose right answer is no call at all."""
"""Calls one answer may hold, per category (BFCL's parallel items expect up to 8)."""

_TYPES = {
    "dict": "object", "object": "object", "float": "number", "number": "number",
    "integer": "integer", "int": "integer", "string": "string", "str": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "tuple": "array", "null": "null",
}


# --- BFCL's parameter dialect -> JSON Schema ----------------------------------------------------


def to_json_schema(node: Any, *, top: bool = True) -> Any:
    """A BFCL `parameters` value as JSON Schema: `dict` -> object, `float` -> number,
    `tuple` -> array, `any` -> no type; objects with declared properties are closed (BFCL
    counts an unknown parameter as wrong); BFCL's own `optional` flag is dropped."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type":
            if value == "any":
                continue
            if value not in _TYPES:
                raise ValueError(f"unknown BFCL type {value!r}")
            out["type"] = _TYPES[value]
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {name: to_json_schema(sub, top=False) for name, sub in value.items()}
        elif key == "items":
            out["items"] = to_json_schema(value, top=False)
        elif key == "additionalProperties" and isinstance(value, dict):
            out[key] = to_json_schema(value, top=False)
        elif key == "optional":
            continue
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if top:
        out["type"] = "object"
        out.setdefault("properties", {})
    if "required" in out and isinstance(out.get("properties"), dict):
        out["required"] = [name for name in out["required"] if name in out["properties"]]
    return out


def build_tools(functions: list[dict[str, Any]]) -> list[Tool]:
    """One schema-defined tool per BFCL function doc (never called: only validated)."""
    return [
        Tool.from_json_schema(f["name"], to_json_schema(f["parameters"]), _not_called, description=f.get("description"))
        for f in functions
    ]


def _not_called(arguments: dict[str, Any]) -> None:
    raise RuntimeError("BFCL tools are scored, never run")


# BFCL's system prompt for models scored in prompt mode (calls written as a Python list).
PYTHON_PROMPT = """You are an expert in composing functions. You are given a question and a set of possible functions. \
Based on the question, you will need to make one or more function/tool calls to achieve the purpose.
If none of the function can be used, point it out. If the given question lacks the parameters required by the \
function, also point it out. You should only return the function calls in your response.

If you decide to invoke any of the function(s), you MUST put it in the format of \
[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]
You SHOULD NOT include any other text in the response.

Here is a list of functions in JSON format that you can invoke.
{functions}
"""


THINK_PROMPT = "Before you answer, think step by step inside <think></think>; then give the answer."
"""What `--think` adds to the system message of both runs."""


def prompt_messages(item: Item, prompt: str, think: bool = False
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The messages and tools one item is asked with: the tools through the chat template
    (`template`), or listed in BFCL's prompt-mode system message (`python`); with `think`, the
    system message also asks for reasoning first."""
    notes = [THINK_PROMPT] if think else []
    if prompt == "template":
        return _with_system(item.messages, notes), [t.to_openai() for t in item.tools.values()]
    notes.insert(0, PYTHON_PROMPT.format(functions=json.dumps(item.functions, ensure_ascii=False)))
    return _with_system(item.messages, notes), None


def _with_system(messages: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    if not notes:
        return messages
    rest = messages
    system = "\n\n".join(notes)
    if rest and rest[0].get("role") == "system":
        system, rest = f"{rest[0]['content']}\n\n{system}", rest[1:]
    return [{"role": "system", "content": system}, *rest]


# --- reading answers ------------------------------------------------------------------------


def free_calls(text: str, tools: dict[str, Tool]) -> list[dict[str, Any]]:
    """The calls in a free answer, read in any form a model writes them (`bench.free_calls`)."""
    return parse_free_calls(text, {name: list(t.schema.get("properties", {})) for name, t in tools.items()})


def structurally_valid(calls: list[dict[str, Any]], tools: dict[str, Tool]) -> bool:
    """At least one call, each naming a known tool with arguments that validate."""
    if not calls:
        return False
    for call in calls:
        known = tools.get(call["name"])
        if known is None:
            return False
        try:
            known.validate(call["arguments"])
        except ToolArgumentsError:
            return False
    return True


# --- BFCL's AST rules ------------------------------------------------------------------------


def standardize(text: str) -> str:
    """BFCL's string normal form: lowercased, spaces and `,./-_*^` removed."""
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def value_matches(value: Any, answers: list[Any], schema: dict[str, Any], *, top: bool = False) -> bool:
    """Whether `value` equals one of the acceptable `answers` under BFCL's comparison.

    `""` among the answers means the parameter may be left out. BFCL's checker compares strings
    with that `""` still among the answers, so a string that standardizes to empty matches it,
    and it reads `""` as an empty list when it checks a parameter's list (`top`: a call's own
    parameter, not a key inside a dict value), so `[]` matches it there."""
    if "" in answers and _empty_like(value, schema, top):
        return True
    return any(_equal(value, answer, schema) for answer in answers if answer != "")


def _empty_like(value: Any, schema: dict[str, Any], top: bool) -> bool:
    kind = schema.get("type")
    if isinstance(value, str):  # a call's parameter is type-checked first; a dict's keys are not
        return standardize(value) == "" and (not top or kind in (None, "string"))
    return top and value == [] and kind == "array"


def _equal(value: Any, answer: Any, schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if isinstance(answer, bool) or isinstance(value, bool):
        return isinstance(answer, bool) and isinstance(value, bool) and value == answer
    if kind == "number" and isinstance(value, (int, float)) and isinstance(answer, (int, float)):
        return float(value) == float(answer)
    if isinstance(answer, str):
        return isinstance(value, str) and standardize(value) == standardize(answer)
    if isinstance(answer, list):
        item = schema.get("items", {}) if isinstance(schema.get("items"), dict) else {}
        return isinstance(value, list) and len(value) == len(answer) and all(
            _equal(v, a, item) for v, a in zip(value, answer, strict=True)
        )
    if isinstance(answer, dict):
        return isinstance(value, dict) and _dict_matches(value, answer, schema)
    if isinstance(answer, (int, float)) and isinstance(value, (int, float)):
        return type(value) is type(answer) and value == answer
    return value == answer


def _dict_matches(value: dict[str, Any], answer: dict[str, Any], schema: dict[str, Any]) -> bool:
    """A dict answer maps each key to its list of acceptable values (as parameters do)."""
    props = schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
    for key, options in answer.items():
        options = options if isinstance(options, list) else [options]
        if key not in value:
            if "" not in options:
                return False
        elif not value_matches(value[key], options, props.get(key, {})):
            return False
    return all(key in answer for key in value)


def call_matches(call: dict[str, Any], expected: dict[str, dict[str, list[Any]]], tools: dict[str, Tool]) -> bool:
    """One model call against one ground-truth call `{name: {param: [answers...]}}`."""
    [(name, params)] = expected.items()
    if call.get("name") != name or name not in tools or not isinstance(call.get("arguments"), dict):
        return False
    schema = tools[name].schema
    props = schema.get("properties", {})
    arguments = call["arguments"]
    if any(p not in arguments for p in schema.get("required", [])):
        return False
    if any(p not in props or p not in params for p in arguments):
        return False
    for param, answers in params.items():
        if param not in arguments:
            if "" not in answers:
                return False
        elif not value_matches(arguments[param], answers, props.get(param, {}), top=True):
            return False
    return True


def ast_correct(calls: list[dict[str, Any]], ground_truth: list[dict[str, Any]], tools: dict[str, Tool]) -> bool:
    """BFCL's AST verdict: as many calls as expected, matched one to one in any order."""
    if len(calls) != len(ground_truth):
        return False
    return _assign(calls, ground_truth, tools, set())


def _assign(calls: list[dict[str, Any]], expected: list[dict[str, Any]], tools: dict[str, Tool], used: set[int]) -> bool:
    if not expected:
        return True
    first, rest = expected[0], expected[1:]
    for i, call in enumerate(calls):
        if i not in used and call_matches(call, first, tools):
            if _assign(calls, rest, tools, used | {i}):
                return True
    return False


# --- running --------------------------------------------------------------------------------


@dataclass
class Item:
    id: str
    messages: list[dict[str, Any]]
    tools: dict[str, Tool]
    ground_truth: list[dict[str, Any]]
    functions: list[dict[str, Any]] = field(default_factory=list)  # BFCL's own function docs


@dataclass
class Outcome:
    id: str
    valid: bool
    correct: bool
    text: str
    calls: list[dict[str, Any]]
    error: str | None = None
    usage: Any = None  # the run's `RunUsage`, where one agent turn made it


@dataclass(frozen=True)
class Variant:
    """How a constrained run may write its calls: envelopes (None: the runtime's own), blanks,
    and whether free text may come first (`preamble`)."""

    envelopes: tuple[str, ...] | None = None
    whitespace: int | None = None
    preamble: bool = False
    name: str | None = None  # a run's label where it is not a variant (the agent's turn)

    @classmethod
    def parse(cls, text: str) -> Variant:
        text, plus, extra = text.partition("+")
        if plus and extra != "preamble":
            raise argparse.ArgumentTypeError(f"unknown variant option {extra!r}: only +preamble")
        spec, _, blanks = text.partition(":")
        chosen = None if spec == "model" else tuple(spec.split(","))
        return cls(chosen, int(blanks) if blanks else None, bool(plus))

    def label(self) -> str:
        if self.name is not None:
            return self.name
        spec = "model" if self.envelopes is None else ",".join(self.envelopes)
        return spec + (f":{self.whitespace}" if self.whitespace else "") + ("+preamble" if self.preamble else "")


@dataclass
class CategoryScore:
    name: str
    skipped: list[str] = field(default_factory=list)
    runs: list[tuple[Outcome, list[Outcome]]] = field(default_factory=list)  # free, then one per variant
    seconds: float = 0.0

    def pairs(self, variant: int = 0) -> list[tuple[Outcome, Outcome]]:
        return [(free, held[variant]) for free, held in self.runs]


def corpus_bfcl() -> Path:
    root = Path(os.environ.get("AGENTKIT_CORPUS", Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"))
    return root / "bfcl"


def corpus_missing() -> bool:
    """Whether the BFCL data is absent; if so, says where it was looked for (on stderr)."""
    if corpus_bfcl().is_dir():
        return False
    print(f"BFCL data not found at {corpus_bfcl()}: set AGENTKIT_CORPUS", file=sys.stderr)
    return True


def load(category: str, root: Path, limit: int | None, start: int = 0) -> tuple[list[Item], list[str]]:
    """The category's items (`limit` of them from the `start`-th), and ids whose tools cannot be
    built (with why)."""
    questions = _lines(root / f"BFCL_v4_{category}.json")
    answers: dict[str, list[dict[str, Any]]] = (
        {} if category in NO_CALL
        else {a["id"]: a["ground_truth"] for a in _lines(root / "possible_answer" / f"BFCL_v4_{category}.json")}
    )
    items, skipped = [], []
    for q in questions[start:None if limit is None else start + limit]:
        try:
            tools = {t.name: t for t in build_tools(q["function"])}
        except (ToolDefinitionError, ValueError) as exc:
            skipped.append(f"{q['id']}: {exc}")
            continue
        items.append(Item(q["id"], list(q["question"][0]), tools, answers.get(q["id"], []), q["function"]))
    return items, skipped


def _lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


_ATTEMPT = re.compile(r'^\s*(\{|\[\s*\{|```json)|"name"\s*:|<tool_call>|^\s*(```\w*\s*)?\[\s*[A-Za-z_][\w.]*\s*[(,\]]')


def attempted_call(text: str) -> bool:
    """Whether a free answer tries to call a tool, parsed or not: BFCL counts an irrelevance
    answer whose call does not decode (JSON with comments, `3 * 10**8`, cut by the budget) as
    no call, though the model meant one. A Python list that names a tool (`[find_roots]`,
    `[f(v=3 * 10**8)]`) is an attempt too."""
    return bool(_ATTEMPT.search(text))


def judge(item: Item, category: str, text: str, calls: list[dict[str, Any]], error: str | None) -> Outcome:
    """An answer's verdicts: well-formed calls (or, where no call is right, no call or
    well-formed ones), and right (the expected calls; or no call at all)."""
    if category in NO_CALL:
        valid = error is None and (not calls or structurally_valid(calls, item.tools))
        return Outcome(item.id, valid, error is None and not calls, text, calls, error)
    return Outcome(item.id, structurally_valid(calls, item.tools), ast_correct(calls, item.ground_truth, item.tools),
                   text, calls, error)


async def run_item(item: Item, runtime: Any, category: str, max_tokens: int,
                   variants: list[Variant] | None = None, prompt: str = "template") -> tuple[Outcome, Outcome]:
    """Both runs of one item (the first variant's constrained run). A run that fails (runtime
    or grammar error) counts as invalid, and its error is kept."""
    free, held = await run_variants(item, runtime, category, max_tokens, variants or [Variant()], prompt)
    return free, held[0]


async def run_variants(item: Item, runtime: Any, category: str, max_tokens: int,
                       variants: list[Variant], prompt: str = "template",
                       think: int | None = None) -> tuple[Outcome, list[Outcome]]:
    """The free run of one item and one constrained run per variant, all asked alike. With
    `think`, both are asked to reason first; the free answer is read after its reasoning, and
    each constrained run opens with a reasoning span of at most `think` tokens."""
    messages, tools_json = prompt_messages(item, prompt, think is not None)
    span = grammar.ReasoningSpan(max_tokens=think) if think is not None else None
    free, free_found, free_error = "", [], None
    try:
        free = (await runtime.generate(messages, tools=tools_json, max_tokens=max_tokens)).text
        free_found = free_calls(span.split(free)[1] if span else free, item.tools)
    except Exception as exc:  # any failure of the stack is a failed answer, reported as such
        free_error = f"{type(exc).__name__}: {exc}"
    helds = []
    for variant in variants:
        envelope = variant.envelopes or runtime.tool_call_envelope
        held, held_calls, held_error = "", [], None
        try:
            shape = grammar.tool_calls_or_text if category in NO_CALL else grammar.tool_calls
            g = shape(
                [t.tool_schema() for t in item.tools.values()],
                envelope=envelope,
                max_calls=MAX_CALLS.get(category, 1),
                lenient=True,
                whitespace=variant.whitespace,
                preamble=variant.preamble,
            )
            if span is not None:
                g = grammar.after_reasoning(g, span)
            held = (await runtime.generate(messages, grammar=g, tools=tools_json, max_tokens=max_tokens)).text
            answer = span.split(held)[1] if span else held
            held_calls = grammar.parse_tool_calls(answer, envelope=envelope, preamble=variant.preamble,
                                                  names=list(item.tools)) or []
        except Exception as exc:  # any failure of the stack is a failed answer, reported as such
            held_error = f"{type(exc).__name__}: {exc}"
        helds.append(judge(item, category, held, held_calls, held_error))
    return judge(item, category, free, free_found, free_error), helds


def agent_variant(tool_prompt: ToolPrompt) -> Variant:
    """The label of the agent's constrained run in reports."""
    return Variant(name=f"agent ({tool_prompt})")


def turn_agent(item: Item, runtime: Any, max_tokens: int, tool_prompt: ToolPrompt = AGENT_TOOL_PROMPT,
               model_settings: ModelSettings | None = None, tool_note: str | None = None) -> Agent[str]:
    """`Agent(tools)` as a user builds it (its defaults, this `tool_prompt` and `tool_note`) for
    one turn on the item, every call waiting for approval: the turn's calls are read as the
    agent reads them and none runs."""
    return Agent(list(item.tools.values()), runtime, max_steps=1, max_tokens=max_tokens, tool_prompt=tool_prompt,
                 tool_note=tool_note, requires_approval=lambda call: True, model_settings=model_settings,
                 **AGENT_OPTIONS)


AGENT_OPTIONS: dict[str, Any] = {}
"""`--agent-option KEY=VALUE`: more `Agent` options for `--prompt agent` (`grounded_arguments=auto`),
each measured on the same items as the defaults."""


def agent_option(text: str) -> tuple[str, Any]:
    """`KEY=VALUE`, the value read as JSON where it parses, else as text."""
    key, eq, raw = text.partition("=")
    if not eq or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    try:
        return key, json.loads(raw)
    except ValueError:
        return key, raw


async def agent_turn(item: Item, runtime: Any, category: str, max_tokens: int, tool_prompt: ToolPrompt,
                     *, free: bool = False, tool_note: str | None = None) -> Outcome:
    """One turn of `turn_agent` on the item's question, or of the same agent decoding freely; a
    run that fails (invalid arguments, a runtime error) counts as invalid, its error kept."""
    used = FreeDecoding(runtime, list(item.tools.values()), tool_prompt) if free else runtime
    agent = turn_agent(item, used, max_tokens, tool_prompt, tool_note=tool_note)
    text, calls, error, usage = "", [], None, None
    try:
        result = await agent.run(item.messages)
        usage = result.usage
        if result.pending:
            calls = [{"name": p.tool, "arguments": p.call.arguments} for p in result.pending]
            text = json.dumps(calls, ensure_ascii=False)
        else:
            text = str(result.output)
    except UnexpectedModelOutput as exc:  # free text that reads as neither calls nor an answer
        text = exc.text
    except RunError as exc:
        error = f"{type(exc).__name__}: {exc}"
        usage = getattr(exc, "usage", None)
    outcome = judge(item, category, text, calls, error)
    outcome.usage = usage
    return outcome


async def evaluate(categories: list[str], limit: int | None, max_tokens: int, runtime: Any, verbose: bool,
                   concurrency: int = 8, variants: list[Variant] | None = None,
                   prompt: str = "template", think: int | None = None,
                   tool_prompt: ToolPrompt = AGENT_TOOL_PROMPT, start: int = 0,
                   tool_note: str | None = None) -> list[CategoryScore]:
    """Every item of `categories`: its free run and, per variant, a constrained one (with
    `prompt="agent"`, the agent's turn alone, labelled by `agent_variant`)."""
    root = corpus_bfcl()
    scores = []
    gate = asyncio.Semaphore(concurrency)
    chosen = [agent_variant(tool_prompt)] if prompt == "agent" else variants or [Variant()]

    async def guarded(item: Item, category: str) -> tuple[Outcome, list[Outcome]]:
        async with gate:
            if prompt == "agent":
                free = await agent_turn(item, runtime, category, max_tokens, tool_prompt, free=True, tool_note=tool_note)
                return free, [await agent_turn(item, runtime, category, max_tokens, tool_prompt, tool_note=tool_note)]
            return await run_variants(item, runtime, category, max_tokens, chosen, prompt, think)

    for category in categories:
        items, skipped = load(category, root, limit, start)
        score = CategoryScore(category, skipped)
        began = time.perf_counter()
        running = [asyncio.ensure_future(guarded(item, category)) for item in items]
        for item, task in zip(items, progress(running, category), strict=True):
            free, held = await task
            score.runs.append((free, held))
            if verbose:
                marks = "  ".join(f"{v.label()} {_mark(h)}" for v, h in zip(chosen, held, strict=True))
                print(f"  {item.id}: unconstrained {_mark(free)}  {marks}", file=sys.stderr)
        score.seconds = time.perf_counter() - began
        scores.append(score)
    return scores


def _mark(o: Outcome) -> str:
    return ("valid" if o.valid else "invalid") + ("+correct" if o.correct else "")


def _rate(k: int, n: int) -> str:
    return f"{k / n:6.1%}" if n else "   n/a"


def report(scores: list[CategoryScore], variant: int = 0) -> str:
    head = (
        f"{'category':<14} {'n':>4}  {'valid(free)':>11} {'valid(held)':>11}  "
        f"{'AST(free)':>9} {'AST(held)':>9}  {'both':>4} {'free only':>9} {'held only':>9}  {'skipped':>7}"
    )
    lines = [head, "-" * len(head)]
    total: list[tuple[Outcome, Outcome]] = []
    for s in scores:
        total += s.pairs(variant)
        lines.append(_row(s.name, s.pairs(variant), len(s.skipped)))
    lines.append("-" * len(head))
    lines.append(_row("all", total, sum(len(s.skipped) for s in scores)))
    return "\n".join(lines)


def _row(name: str, pairs: list[tuple[Outcome, Outcome]], skipped: int) -> str:
    n = len(pairs)
    vf = sum(u.valid for u, _ in pairs)
    vh = sum(c.valid for _, c in pairs)
    af = sum(u.correct for u, _ in pairs)
    ah = sum(c.correct for _, c in pairs)
    both = sum(u.correct and c.correct for u, c in pairs)
    return (
        f"{name:<14} {n:>4}  {_rate(vf, n):>11} {_rate(vh, n):>11}  {_rate(af, n):>9} {_rate(ah, n):>9}  "
        f"{both:>4} {af - both:>9} {ah - both:>9}  {skipped:>7}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bfcl", description=__doc__.split("\n\n")[0])
    parser.add_argument("--categories", nargs="+", default=list(CATEGORIES), choices=CATEGORIES)
    parser.add_argument("--limit", type=int, default=None, help="items per category (default: all)")
    parser.add_argument("--start", type=int, default=0,
                        help="skip this many items of each category first (items a prompt was not tried on)")
    parser.add_argument("--max-tokens", type=int, default=256, help="token budget per answer")
    parser.add_argument("--json", type=Path, help="write every answer and verdict here")
    parser.add_argument("--verbose", action="store_true", help="print each item's verdicts")
    parser.add_argument("--concurrency", type=int, default=8, help="items in flight at once (default 8)")
    parser.add_argument("--variant", action="append", type=Variant.parse, metavar="ENVELOPES[:WHITESPACE][+preamble]",
                        help="a constrained run's envelopes (model, or e.g. hermes,fenced,json), blanks, and "
                        "+preamble for text before the calls; repeatable")
    parser.add_argument("--prompt", choices=PROMPTS, default="agent",
                        help="agent: one turn of Agent(tools) with its defaults (the user's figures); template: "
                        "the chat template's tool rendering; python: BFCL's prompt mode asking for a Python list "
                        "of calls (use with --variant python)")
    parser.add_argument("--tool-prompt", choices=get_args(ToolPrompt), default=AGENT_TOOL_PROMPT,
                        help="with --prompt agent: the agent's tool_prompt (default: the agent's default)")
    parser.add_argument("--tool-note", type=Path, metavar="FILE",
                        help="with --tool-prompt json_list: the agent's tool_note, read from FILE (default: "
                        "agentkit.JSON_LIST_NOTE), for trying a wording of the note on equal terms")
    parser.add_argument("--think", type=int, metavar="TOKENS",
                        help="ask both runs to reason in <think></think> first; each constrained run opens "
                        "with a reasoning span of at most TOKENS tokens (grammar.after_reasoning)")
    parser.add_argument("--agent-option", action="append", type=agent_option, default=[], metavar="KEY=VALUE",
                        help="with --prompt agent: one more Agent option (grounded_arguments=auto); repeatable")
    models.add_model_option(parser)
    args = parser.parse_args(argv)
    AGENT_OPTIONS.update(args.agent_option)
    if args.prompt == "agent" and (args.variant or args.think is not None):
        parser.error("--variant and --think are for --prompt template or python; the agent's turn is its own")
    if args.tool_note is not None and (args.prompt != "agent" or args.tool_prompt != "json_list"):
        parser.error("--tool-note is the note of --prompt agent with --tool-prompt json_list")
    note = args.tool_note.read_text(encoding="utf-8").strip() if args.tool_note is not None else None
    if corpus_missing():
        return 2
    runtime = models.runtime(args.model)
    mode = f"agent, tool_prompt={args.tool_prompt}" if args.prompt == "agent" else args.prompt
    mode += "".join(f", {k}={v}" for k, v in AGENT_OPTIONS.items())
    if note is not None:
        mode += f", tool_note from {args.tool_note}"
    print(f"model: {runtime.name}  envelope: {runtime.tool_call_envelope}  prompt: {mode}  "
          f"max_tokens: {args.max_tokens}" + (f"  think: {args.think} tokens" if args.think is not None else ""))
    variants = [agent_variant(args.tool_prompt)] if args.prompt == "agent" else args.variant or [Variant()]
    scores = asyncio.run(evaluate(args.categories, args.limit, args.max_tokens, runtime, args.verbose,
                                  args.concurrency, variants, args.prompt, args.think, args.tool_prompt, args.start,
                                  note))
    for k, variant in enumerate(variants):
        print(f"constrained: {variant.label()}")
        print(report(scores, k))
    for s in scores:
        for why in s.skipped:
            print(f"skipped {why}")
        print(f"{s.name}: {s.seconds:.0f} s for {len(s.runs)} items ({1 + len(variants)} generations each)"
              + ("; its AST columns are the rate of answers with no call" if s.name in NO_CALL else ""))
        if s.name in NO_CALL:
            attempts = sum(free.correct and attempted_call(free.text) for free, _ in s.runs)
            print(f"  of the free answers counted as no call, {attempts} attempt a call that does not parse "
                  f"(counted as calls, the free no-call rate is {_rate(sum(f.correct for f, _ in s.runs) - attempts, len(s.runs)).strip()})")
        for free, held in s.runs:
            for run, o in (("unconstrained", free), *((v.label(), h) for v, h in zip(variants, held, strict=True))):
                if o.error:
                    print(f"  {o.id}: the {run} run failed: {o.error[:200]}")
    if args.json:
        args.json.write_text(json.dumps(
            {s.name: [{"free": asdict(free), "held": {v.label(): asdict(h) for v, h in zip(variants, held, strict=True)}}
                      for free, held in s.runs] for s in scores},
            ensure_ascii=False, indent=1,
        ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

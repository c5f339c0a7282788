"""Multi-step agent tasks (`bench.agent_world`) run three ways on the same model: an `Agent` with
its turn grammar, the same `Agent` decoding freely, and llama-cpp-python's own function calling.

    python -m bench.agent_tasks --model qwen2.5-coder-0.5b
    python -m bench.agent_tasks --model qwen2.5-coder-0.5b --modes constrained free --json out.json

Per mode: tasks whose final answer states the expected facts (success), tasks whose tools'
successful results held them (facts found: the calls were right, whatever the answer), model
turns, completion tokens and wall time (each task run alone, greedy, `--max-steps` turns of up to `--max-tokens`).
`--tool-choice required` runs both agent modes with `tool_choice="required"` (calls until one
succeeds). In both agent modes an answer is asked for, and the turn held to it, once the model
goes in circles (the agent's `answer_on_repeat`).

- **constrained**: `Agent(TOOLS, runtime=LlamaCpp(model))`, each turn held to
  `tool_calls_or_text`.
- **free**: the same agent, prompts and loop, but each turn decoded without a grammar; its
  calls are read in every form models write them (`bench.free_calls`, as BFCL's free baseline)
  and handed to the agent as calls, so a free failure is the model's, not the parser's. A turn
  with no call is the final answer.
- **llama-cpp-python**: `Llama(model, chat_format="chatml-function-calling")` and
  `create_chat_completion(tools=..., tool_choice="auto")` in the usual OpenAI loop, with the
  same tools, validation and error messages. Its template lists the tools only beside a system
  message and prints nothing of a `tool` message, so the system prompt is always sent and each
  result goes back as a user message (`functions.NAME returned: ...`); otherwise the model
  would never see a result.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import runtimes
from agentkit import Agent, RunError, Tool, ToolPrompt, UnexpectedModelOutput
from agentkit._messages import render_error, render_result
from bench import models
from bench._progress import progress
from bench.agent_world import SYSTEM_PROMPT, TASKS, TOOLS, Task
from bench.free_calls import parse_free_calls
from runtimes import Generation, Runtime, TextStream

# What `Agent(tools)` asks the model for with no options, read from its signature: the
# benchmarks' default runs are the user's.
AGENT_TOOL_PROMPT: ToolPrompt = inspect.signature(Agent).parameters["tool_prompt"].default

if TYPE_CHECKING:
    from runtimes._protocol import Request

ToolChoice = Literal["auto", "required"]
MODES = ("constrained", "free", "llama-cpp-python")


@dataclass
class Outcome:
    """One task's run in one mode."""

    task: str
    mode: str
    answer: str
    success: bool
    steps: int
    completion_tokens: int
    seconds: float
    calls: list[str] = field(default_factory=list)
    error: str | None = None
    found: bool = False
    """Whether the tools' successful results, together, held every expected fact: the model
    made the calls that answer the task, whatever its final answer."""


class FreeDecoding(Runtime):
    """`inner` with every grammar dropped: the model answers freely, and any calls it wrote, in
    whatever form, are handed on in the envelope the agent reads."""

    def __init__(self, inner: Runtime, tools: Sequence[Tool], tool_prompt: ToolPrompt = AGENT_TOOL_PROMPT):
        self.inner = inner
        self.name = f"{inner.name} (free)"
        self.tool_call_envelope = inner.tool_call_envelope
        self._envelope = "python" if tool_prompt == "python" else inner.tool_call_envelope
        self._parameters = {t.name: list(t.schema.get("properties", {})) for t in tools}

    async def _generate(self, request: Request) -> Generation:
        generation = await self.inner.generate(
            request.messages, max_tokens=request.max_tokens, temperature=request.temperature,
            top_p=request.top_p, seed=request.seed, tools=request.tools,
        )
        return dataclasses.replace(generation, text=self.as_calls(generation.text))

    def _stream(self, request: Request) -> TextStream:
        raise NotImplementedError("FreeDecoding answers whole turns only")

    def as_calls(self, text: str) -> str:
        """`text`'s calls in the agent's envelope; `text` itself when it holds none."""
        calls = parse_free_calls(text, self._parameters)
        if not calls:
            return text
        if self._envelope == "python":
            return "[" + ", ".join(
                f"{c['name']}(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in c["arguments"].items())
                + ")" for c in calls
            ) + "]"
        lines = [json.dumps({"name": c["name"], "arguments": c["arguments"]}, ensure_ascii=False) for c in calls]
        if self._envelope == "hermes":
            return "\n".join(f"<tool_call>\n{line}\n</tool_call>" for line in lines)
        return "\n".join(lines)


def task_agent(runtime: Runtime, max_steps: int, max_tokens: int, tool_choice: ToolChoice = "auto",
               tool_prompt: ToolPrompt = AGENT_TOOL_PROMPT) -> Agent:
    """The agent every task runs on: all the world's tools, the benchmark's system prompt."""
    return Agent(list(TOOLS), runtime=runtime, system_prompt=SYSTEM_PROMPT, max_steps=max_steps,
                 max_tokens=max_tokens, tool_choice=tool_choice, tool_prompt=tool_prompt)


async def run_agent(task: Task, agent: Agent, mode: str) -> Outcome:
    start = time.perf_counter()
    try:
        result = await agent.run(task.question)
    except UnexpectedModelOutput as exc:  # free text no parser reads as calls: its final answer
        return _failed(task, mode, exc, start, answer=exc.text if mode == "free" else "")
    except RunError as exc:
        return _failed(task, mode, exc, start)
    answer = str(result.output)
    return Outcome(task.id, mode, answer, task.check(answer), result.steps, result.usage.completion_tokens,
                   time.perf_counter() - start, [f"{r.call.name}({json.dumps(r.call.arguments)})" for r in result.tool_calls],
                   found=_found(task, result.messages))


def _failed(task: Task, mode: str, exc: RunError, start: float, answer: str = "") -> Outcome:
    usage = getattr(exc, "usage", None)
    messages = getattr(exc, "messages", [])
    turns = [str(m.get("content")) for m in messages if m.get("role") == "assistant"]
    return Outcome(task.id, mode, answer, bool(answer) and task.check(answer), len(turns),
                   usage.completion_tokens if usage else 0, time.perf_counter() - start,
                   [" ".join(t.split())[:120] for t in turns], f"{type(exc).__name__}: {exc}",
                   _found(task, messages))


def _found(task: Task, messages: Sequence[dict[str, Any]]) -> bool:
    """Whether the run's successful tool results hold the task's facts."""
    results = [str(m["content"]) for m in messages if m.get("role") == "tool"]
    return _holds(task, results)


def _holds(task: Task, results: Sequence[str]) -> bool:
    return task.check(" ".join(r for r in results if not r.startswith("Error:")))


def run_llama_cpp_python(task: Task, llm: Any, max_steps: int, max_tokens: int) -> Outcome:
    """The OpenAI tool loop over llama-cpp-python's chatml-function-calling handler."""
    tools = {t.name: t for t in TOOLS}
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": task.question}]
    openai_tools = [t.to_openai() for t in TOOLS]
    start, tokens, calls, results = time.perf_counter(), 0, [], []
    for step in range(1, max_steps + 1):
        try:
            response = llm.create_chat_completion(messages=messages, tools=openai_tools, tool_choice="auto",
                                                  max_tokens=max_tokens, temperature=0.0)
        except Exception as exc:  # the handler's own failures (bad JSON, grammar errors) end the task
            return Outcome(task.id, "llama-cpp-python", "", False, step, tokens, time.perf_counter() - start,
                           calls, f"{type(exc).__name__}: {exc}", _holds(task, results))
        tokens += response["usage"]["completion_tokens"]
        message = response["choices"][0]["message"]
        if not message.get("tool_calls"):
            answer = message.get("content") or ""
            return Outcome(task.id, "llama-cpp-python", answer, task.check(answer), step, tokens,
                           time.perf_counter() - start, calls, found=_holds(task, results))
        messages.append({"role": "assistant", "content": None, "tool_calls": message["tool_calls"]})
        for call in message["tool_calls"]:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            calls.append(f"{name}({arguments})")
            results.append(_run_tool(tools, name, arguments))
            messages.append({"role": "user", "content": f"functions.{name} returned: {results[-1]}"})
    return Outcome(task.id, "llama-cpp-python", "", False, max_steps, tokens, time.perf_counter() - start, calls,
                   f"StepLimitExceeded: no final answer after {max_steps} model turns", _holds(task, results))


def _run_tool(tools: dict[str, Tool], name: str, arguments: str) -> str:
    """A call's result or error, as the agent would report it to the model."""
    if name not in tools:
        return f"Error: no tool named {name!r}"
    t = tools[name]
    try:
        return render_result(asyncio.run(t.call(t.validate(arguments))))
    except Exception as exc:  # invalid arguments or a failing tool: reported to the model
        return render_error(exc)


def evaluate(modes: Sequence[str], model: str | None, tasks: Sequence[Task], max_steps: int, max_tokens: int,
             verbose: bool, tool_choice: ToolChoice = "auto", tool_prompt: ToolPrompt = AGENT_TOOL_PROMPT) -> list[Outcome]:
    outcomes: list[Outcome] = []
    path = str(models.resolve(model)) if model else None
    runtime: Runtime | None = None
    for mode in modes:
        if mode == "llama-cpp-python":
            found = _run_llama_cpp_python(path, tasks, max_steps, max_tokens)
        else:
            runtime = runtime or (runtimes.LlamaCpp(path, n_threads=2) if path else runtimes.default())
            used = FreeDecoding(runtime, TOOLS, tool_prompt) if mode == "free" else runtime
            agent = task_agent(used, max_steps, max_tokens, tool_choice, tool_prompt)
            found = asyncio.run(_run_agents(tasks, agent, mode))
        for outcome in found:
            outcomes.append(outcome)
            if verbose:
                mark = "ok  " if outcome.success else "FAIL"
                print(f"  {mode:<16} {mark} {outcome.task:<24} {outcome.steps} steps  {'; '.join(outcome.calls)}"
                      f"  -> {outcome.answer[:80]!r}{'  ' + outcome.error if outcome.error else ''}", file=sys.stderr)
    return outcomes


async def _run_agents(tasks: Sequence[Task], agent: Agent, mode: str) -> list[Outcome]:
    return [await run_agent(task, agent, mode) for task in progress(tasks, mode)]


def _run_llama_cpp_python(path: str | None, tasks: Sequence[Task], max_steps: int, max_tokens: int) -> list[Outcome]:
    from llama_cpp import Llama

    llm = Llama(path or str(runtimes.default_model_path()), chat_format="chatml-function-calling", n_ctx=4096,
                n_threads=2, verbose=False)
    try:
        return [run_llama_cpp_python(task, llm, max_steps, max_tokens) for task in progress(tasks, "llama-cpp-python")]
    finally:
        llm.close()


def report(outcomes: Sequence[Outcome], modes: Sequence[str]) -> str:
    head = (f"{'mode':<18} {'tasks':>5} {'success':>8} {'facts found':>11} {'steps/task':>10} {'tokens/task':>11} "
            f"{'s/task':>7} {'errors':>6}")
    lines = [head, "-" * len(head)]
    for mode in modes:
        rows = [o for o in outcomes if o.mode == mode]
        if not rows:
            continue
        n = len(rows)
        lines.append(
            f"{mode:<18} {n:>5} {sum(o.success for o in rows) / n:>8.1%} {sum(o.found for o in rows) / n:>11.1%} "
            f"{sum(o.steps for o in rows) / n:>10.2f} "
            f"{sum(o.completion_tokens for o in rows) / n:>11.1f} {sum(o.seconds for o in rows) / n:>7.2f} "
            f"{sum(o.error is not None for o in rows):>6}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_tasks", description=__doc__.split("\n\n")[0])
    models.add_model_option(parser)
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--tasks", nargs="+", metavar="ID", help="only these task ids")
    parser.add_argument("--max-steps", type=int, default=8, help="model turns per task (default 8)")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens per turn (default 256)")
    parser.add_argument("--tool-choice", choices=["auto", "required"], default="auto",
                        help="the agent's tool_choice (both agent modes; llama-cpp-python stays auto)")
    parser.add_argument("--tool-prompt", choices=get_args(ToolPrompt), default=AGENT_TOOL_PROMPT,
                        help="the agent's tool_prompt (both agent modes; default: the agent's default)")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--verbose", action="store_true", help="print each task's calls and answer")
    args = parser.parse_args(argv)
    tasks = [t for t in TASKS if not args.tasks or t.id in args.tasks]
    if not tasks:
        parser.error(f"no task among {args.tasks}; ids: {', '.join(t.id for t in TASKS)}")
    outcomes = evaluate(args.modes, args.model, tasks, args.max_steps, args.max_tokens, args.verbose,
                        args.tool_choice, args.tool_prompt)
    print(report(outcomes, args.modes))
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(o) for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

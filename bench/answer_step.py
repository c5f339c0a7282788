"""The routed answer step alone: given the right calls and their results, does the model state
the result? Separates how a routed run asks for its answer from which tool it routed to and
which arguments it wrote.

    python -m bench.answer_step --split tune                  # default model
    python -m bench.answer_step --model qwen2.5-coder-0.5b

For each request of `bench.values_world` that needs tools, its needed calls run with their true
arguments (a later call's arguments are the request's own, fixed when it was written), the
conversation is built as a routed run would have it (the request, the calls, one tool message
each), and the model is asked for the answer as `agentkit`'s routing asks it
(`routed_answer_messages`), with and without the answered example it shows first. Each answer
is scored by `bench.agent_values`' rule. Greedy, 120 tokens, the two ways of asking one request
read side by side (batched).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

from agentkit._loop.results import ANSWERED_EXAMPLE, routed_answer_messages
from agentkit._messages import Message, render_result
from bench import models
from bench.agent_values import held_numbers, is_right, select
from bench.values_world import TOOLS, Request
from runtimes import Runtime

MAX_TOKENS = 120
WAYS = ("context alone", "with the answered example")


async def conversation(request: Request) -> list[Message]:
    """The request, then each needed call and its result, as a routed run stores them."""
    tools = {t.name: t for t in TOOLS}
    messages: list[Message] = [{"role": "user", "content": request.text}]
    for i, (name, arguments) in enumerate(request.calls):
        result = tools[name].fn(**arguments)
        if asyncio.iscoroutine(result):
            result = await result
        call_id = f"call_{i}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": render_result(result)})
    return messages


def asked(messages: list[Message], way: str) -> list[Message]:
    """The answer's messages, the routed way, or without the answered example."""
    routed = routed_answer_messages(messages, 0)
    if way == WAYS[1]:
        return routed
    return [m for m in routed if not any(m is e for e in ANSWERED_EXAMPLE)]


async def measure(runtime: Runtime, requests: Sequence[Request], verbose: bool) -> dict[str, int]:
    right = dict.fromkeys(WAYS, 0)
    for request in requests:
        messages = await conversation(request)
        answers = await asyncio.gather(*(runtime.generate(asked(messages, way), max_tokens=MAX_TOKENS)
                                         for way in WAYS))
        for way, answer in zip(WAYS, answers):
            ok = is_right(request, answer.text, held_numbers(request, messages), request.calls)
            right[way] += ok
            if verbose:
                print(f"  {'ok  ' if ok else 'FAIL'} {way:<26} {request.id:<16} {answer.text[:100]!r}", file=sys.stderr)
    return right


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answer_step", description=__doc__.split("\n\n")[0])
    models.add_model_option(parser)
    parser.add_argument("--split", choices=["measure", "tune", "all"], default="measure")
    parser.add_argument("--verbose", action="store_true", help="print each answer on stderr")
    args = parser.parse_args(argv)
    requests = [r for r in select(args.split, None) if r.calls]
    right = asyncio.run(measure(models.runtime(args.model), requests, args.verbose))
    print("| asked | right answers |\n|---|---|")
    for way, count in right.items():
        print(f"| {way} | {count}/{len(requests)} ({count / len(requests):.0%}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

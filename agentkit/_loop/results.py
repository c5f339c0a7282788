"""How a turn after tool calls is asked: the calls made since the run's request and their
results as context, in one user message that asks the request again.

Shown its own call and the tool's message after it, a small model writes the call again:
Qwen2.5-Coder-0.5B repeated its first call in 17 of the 18 runs of `bench.agent_values`' tune
half that needed a tool (a repeat ends the run in its answer, so a request that needed a second
tool never got it). Asked with the result as context, as if the request came with it, it
calls the next tool on that result (`convert_temperature(celsius=24.6)` after the weather)
or answers. So a model that calls by itself is asked so for its calls after a success
(`calling_messages`), and a routed model for its answer (`routed_answer_messages`). The
conversation itself is kept as it was; only what the model is sent changes.
"""

from __future__ import annotations

import json

from .._messages import Message
from .repeats import REUSE_NOTE

ANSWERED_EXAMPLE: tuple[Message, ...] = (
    {"role": "user", "content": 'Context: get_distance(start="Lyon", end="Nice") = 471\n'
                                "Question: How far is it from Lyon to Nice?"},
    {"role": "assistant", "content": "It is 471 km from Lyon to Nice."},
)
"""A question answered from its context, shown before the routed one. Asked with context alone,
SmolLM2-135M explains how one would find the answer (a formula, code) for most requests; shown
one answered, it states the result (`python -m bench.answer_step`, the right calls made and
their results given: 5 → 14 of 18 right on the tune half, 10 → 15 on the measured half)."""


def context_message(messages: list[Message], start: int) -> tuple[Message, list[Message]]:
    """The request `messages[start]` asked again after one line per call made since it
    (`name(argument=value, ...) = result`), and the turns after the calls that are no calls
    (an answer refused and the correction asked) as they were. A repeat answered with an
    earlier call's outcome adds no line."""
    request = messages[start]
    calls = {c["id"]: c["function"] for m in messages[start:] for c in m.get("tool_calls") or ()}
    results: dict[str, str] = {}  # per call as written, its latest outcome; a repeat given an
    # earlier call's outcome again (a call made again, one fed on its own result) adds no line
    later: list[Message] = []
    for m in messages[start + 1:]:
        if m.get("role") == "tool":
            function = calls.get(m.get("tool_call_id"), {"name": m.get("name"), "arguments": "{}"})
            arguments = json.loads(function["arguments"])
            written = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())
            content = str(m.get("content"))
            if not any(content == f"{REUSE_NOTE} {earlier}" for earlier in results.values()):
                results[f"{function['name']}({written})"] = content
        elif not m.get("tool_calls"):
            later.append(m)
    lines = [f"{call} = {content}" for call, content in results.items()]
    context = {"role": "user", "content": "Context: " + "\n".join(lines) + f"\nQuestion: {request['content']}"}
    return context, later


def routed_answer_messages(messages: list[Message], start: int) -> list[Message]:
    """What a routed model is asked for its answer, `messages[start]` being the request it was
    routed on: the system prompt, one such question answered (`ANSWERED_EXAMPLE`), then the
    request with its calls' results as context (`context_message`). A model never trained on
    tool messages writes out a listed call or code after them; asked so, it answers the
    question. A run that went in circles is asked so too, on any model: after its own calls
    and a note asking for the answer, Qwen2.5-Coder-0.5B wrote code (the tools as Python
    functions) where the results held the answer (tune half of `bench.agent_values`: 8 → 11
    of 23 right)."""
    context, later = context_message(messages, start)
    system = [m for m in messages[:start] if m.get("role") == "system"]
    return [*system, *ANSWERED_EXAMPLE, context, *later]


def calling_messages(messages: list[Message], start: int) -> list[Message]:
    """What a model that calls by itself is sent for a turn after a call succeeded: the
    conversation before the request as it was, then the request with its calls' results as
    context (`context_message`); the turn may call again or answer."""
    context, later = context_message(messages, start)
    return [*messages[:start], context, *later]

"""The decision to call, asked as a step of its own, for models whose chat template teaches no
tool calls.

Such a model (the default, SmolLM2-135M) shown a tool listing answers every request in text:
the probability it gives the tokens that open a call at a turn's first step is 0.03–4.5% on
requests a tool answers, so no threshold on it tells a request that needs a tool from one
that does not, and forcing a call makes it pick a tool at random. Asked the choice alone, in a
short prompt of the tools' names and summaries, and held to one of those names or `none`, it
picks well enough to use: the turn is then held to calls of the tool it named (or left free
where it named none), so the model writes the arguments of one tool it chose.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import grammar
from grammar import Grammar
from runtimes import Runtime

from .._messages import Message
from .._tools.tool import Tool
from .state import RunState
from .turns import TurnKind

NONE = "none"
"""The choice that no tool fits, or that the results so far answer the request."""

CHOICE_TOKENS = 64
"""The choice's token budget: a tool's name, which the grammar ends."""

CHOICE_PROMPT = (
    "You choose the tool that answers the user's request. Answer with the tool's name alone, or "
    f"{NONE} when no tool fits the request or the results below already answer it."
)


async def decided_turn(state: RunState, runtime: Runtime, tools: dict[str, Tool],
                       kind: TurnKind) -> tuple[dict[str, Tool], TurnKind]:
    """The tools a turn may call and its kind, once the model has chosen: where the turn may
    call or answer and the runtime `chooses_first`, the model is asked which tool (its tokens
    count in the run's usage; the choice is no step of its own) and a turn whose model named
    one is held to calls of it alone; otherwise as given."""
    if kind != "calls_or_answer" or not tools or not chooses_first(runtime):
        return tools, kind
    with state.model_errors(runtime.name):
        g = choice_grammar(tools)
    options = {k: v for k, v in state.settings.generation_options().items() if k != "scores"}
    generation = await state.within(
        runtime.generate(choice_messages(tools, state.messages), grammar=g, max_tokens=CHOICE_TOKENS, **options),
        runtime.name)
    state.usage = state.usage + generation.usage
    chosen = read_choice(generation.text, tools)
    return ({chosen: tools[chosen]}, "calls") if chosen is not None else (tools, kind)


def chooses_first(runtime: Any) -> bool:
    """Whether a turn's call is decided by a step of its own on this runtime: its chat template
    is known (a local model's) and takes no tools, so it never learnt to open a call.
    Templates that render tools, servers and test runtimes decide within the turn."""
    template = getattr(runtime, "template", None)
    return template is not None and getattr(template, "takes_tools", True) is False


def choice_messages(tools: Mapping[str, Tool], messages: Sequence[Message]) -> list[Message]:
    """The choice as the model is asked it: the tools' names and one-line summaries, the
    user's latest request, and each tool result since (so it may answer `none` once they hold
    the answer)."""
    lines = [f"- {name}: {_summary(t)}" for name, t in tools.items()]
    lines.append(f"- {NONE}: no tool fits, or the results answer the request")
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    request = _text(messages[last_user]) if last_user >= 0 else ""
    results = [_text(m) for m in messages[last_user + 1:] if m.get("role") == "tool"]
    text = f"Request: {request}\n\nTools:\n" + "\n".join(lines)
    if results:
        text += "\n\nResults so far:\n" + "\n".join(f"- {r}" for r in results)
    return [{"role": "system", "content": CHOICE_PROMPT}, {"role": "user", "content": text}]


def choice_grammar(tools: Mapping[str, Tool]) -> Grammar:
    """One of the tools' names, or `none`."""
    return grammar.from_regex("|".join([*tools, NONE]))


def read_choice(text: str, tools: Mapping[str, Tool]) -> str | None:
    """The tool the model chose, or None (it chose `none`)."""
    name = text.strip()
    return name if name in tools else None


def _summary(t: Tool) -> str:
    description = (t.description or "").strip()
    return description.splitlines()[0] if description else t.name


def _text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""

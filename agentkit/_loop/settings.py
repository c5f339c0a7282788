"""Per-run settings: the model settings a run's generations are asked with, and the tools a run
may call (the agent's, some more, or fewer), with the `tool_choice` that holds its turns."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from runtimes import checks

from .._errors import InvalidArgument
from .._inputs import as_argument_error, check_tool_item
from .._outputs.grounding import check_mode
from .._tools.tool import Tool, tool


class ModelSettings(TypedDict, total=False):
    """What each generation is asked with; any subset, given to `Agent(model_settings=...)` or
    `agent.run(..., model_settings=...)` (the run's override the agent's, key by key).

    `temperature` (0 is greedy), `top_p` (nucleus sampling, in (0, 1]), `seed` (an int, or
    None for no fixed seed), `max_tokens` (per model turn), `confidence` (True: each call's
    `ToolCallRecord.confidence` says how sure the model was of each argument value; local
    runtimes then read a model pass per token), `grounded_arguments` (True, False or "auto":
    which tool arguments are held to the conversation's text, as `Agent(grounded_arguments=...)`
    says), `grounded_answers` (the same values: which text answers write only the numbers the
    conversation holds, as `Agent(grounded_answers=...)` says)."""

    temperature: float
    top_p: float
    seed: int | None
    max_tokens: int
    confidence: bool
    grounded_arguments: bool | Literal["auto"]
    grounded_answers: bool | Literal["auto"]


MODEL_SETTINGS = frozenset(ModelSettings.__annotations__)


def check_model_settings(settings: Any, argument: str = "model_settings") -> ModelSettings:
    """`settings` checked key by key: a mapping of known keys with valid values, else an
    `InvalidArgument` naming the key and the cause."""
    if settings is None:
        return ModelSettings()
    if not isinstance(settings, Mapping):
        raise InvalidArgument(argument, f"must be a dict of model settings, not {type(settings).__name__}")
    unknown = sorted(map(str, set(settings) - MODEL_SETTINGS))
    if unknown:
        raise InvalidArgument(f"{argument}[{unknown[0]!r}]",
                              f"is not a model setting; the settings are {', '.join(sorted(MODEL_SETTINGS))}")
    with as_argument_error():
        if "temperature" in settings:
            checks.check_number(f"{argument}['temperature']", settings["temperature"])
        if "top_p" in settings:
            checks.check_number(f"{argument}['top_p']", settings["top_p"], high=1.0, low_open=True)
        if "seed" in settings:
            checks.check_seed(f"{argument}['seed']", settings["seed"])
        if "max_tokens" in settings:
            checks.check_count(f"{argument}['max_tokens']", settings["max_tokens"])
    if "confidence" in settings and not isinstance(settings["confidence"], bool):
        raise InvalidArgument(f"{argument}['confidence']", f"must be True or False, not {type(settings['confidence']).__name__}")
    for key in ("grounded_arguments", "grounded_answers"):
        if key in settings:
            check_mode(settings[key], f"{argument}[{key!r}]")
    return ModelSettings(**settings)  # type: ignore[typeddict-item]


@dataclass(frozen=True)
class RunSettings:
    """What one run uses: its `tools` (by name), its `tool_choice` ("auto", "required", or a
    tool's name) and the complete model settings of its generations."""

    tools: dict[str, Tool]
    tool_choice: str
    model: ModelSettings

    @property
    def max_tokens(self) -> int:
        return self.model["max_tokens"]

    def generation_options(self) -> dict[str, Any]:
        """The model settings as a runtime's `generate` keywords (less `max_tokens`, which a
        turn's budget decides)."""
        return {"temperature": self.model["temperature"], "top_p": self.model["top_p"], "seed": self.model["seed"],
                "scores": self.model.get("confidence", False)}


def run_tools(
    agent_tools: Mapping[str, Tool],
    extra: Sequence[Tool | Callable[..., Any]],
    allowed: Collection[str] | None,
) -> dict[str, Tool]:
    """A run's tools: the agent's and `extra` (a name may not be both), kept to the names in
    `allowed` when it is given (each must name one of them)."""
    if isinstance(extra, (str, bytes)) or not isinstance(extra, Sequence):
        raise InvalidArgument("extra_tools", f"must be a sequence of Tools or functions, not {type(extra).__name__}")
    tools = dict(agent_tools)
    for i, item in enumerate(extra):
        check_tool_item(i, item)
        t = item if isinstance(item, Tool) else tool(item)
        if t.name in tools:
            raise InvalidArgument(f"extra_tools[{i}]", f"a tool named {t.name!r} is already the agent's or the run's")
        tools[t.name] = t
    if allowed is None:
        return tools
    if isinstance(allowed, (str, bytes)) or not isinstance(allowed, Collection):
        raise InvalidArgument("allowed_tools", f"must be a collection of tool names, not {type(allowed).__name__}")
    for i, name in enumerate(allowed):
        if not isinstance(name, str):
            raise InvalidArgument("allowed_tools", f"must hold tool names (strings); item {i} is a {type(name).__name__}")
        if name not in tools:
            raise InvalidArgument("allowed_tools", f"{name!r} names none of the run's tools ({', '.join(tools) or 'none'})")
    return {name: t for name, t in tools.items() if name in allowed}


def check_tool_choice(tool_choice: Any, tools: Mapping[str, Tool], argument: str = "tool_choice") -> str:
    """"auto"; "required" (with tools); or the name of one of `tools`, which forces it."""
    if tool_choice == "auto" or (tool_choice == "required" and tools) or (
        isinstance(tool_choice, str) and tool_choice not in ("auto", "required") and tool_choice in tools
    ):
        return tool_choice
    raise InvalidArgument(
        argument,
        f"must be 'auto', 'required' (with tools) or the name of one of the tools ({', '.join(tools) or 'none'}), "
        f"got {tool_choice!r}",
    )

"""The checks at agentkit's entry points (`Agent(...)`, `Agent.run`, `extract`): a bad argument
is an `InvalidArgument` naming it and the cause before any model is asked, never an error from
deep inside a template, a tokenizer or numpy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from runtimes import InvalidRequest, Runtime, checks

from ._errors import InvalidArgument


@contextmanager
def as_argument_error() -> Iterator[None]:
    """A runtime check's `InvalidRequest` as this package's `InvalidArgument`."""
    try:
        yield
    except InvalidRequest as exc:
        raise InvalidArgument(exc.argument, exc.reason) from None


def check_prompt(prompt: Any) -> None:
    """A prompt string, or a list of message dicts (each with a string `role`), holding only
    text that has a UTF-8 encoding."""
    if not isinstance(prompt, (str, list)):
        raise InvalidArgument("prompt", f"must be a string or a list of message dicts, not {type(prompt).__name__}")
    with as_argument_error():
        checks.check_messages(prompt, "prompt")


def check_text(argument: str, text: Any, *, optional: bool = True) -> None:
    """A string (None too, where `optional`) with a UTF-8 encoding."""
    if text is None and optional:
        return
    if not isinstance(text, str):
        raise InvalidArgument(argument, f"must be a string, not {type(text).__name__}")
    with as_argument_error():
        checks.check_text(argument, text)


def check_generation_settings(*, max_tokens: Any, temperature: Any, seed: Any) -> None:
    """What every generation of a run or an extraction is asked with."""
    with as_argument_error():
        checks.check_count("max_tokens", max_tokens)
        checks.check_number("temperature", temperature)
        checks.check_seed("seed", seed)


def check_agent_settings(settings: dict[str, Any]) -> None:
    """An agent's limits: counts are ints (not bools, not floats), times finite and positive."""
    with as_argument_error():
        for name in ("max_steps", "max_calls_per_turn"):
            checks.check_count(name, settings[name])
        checks.check_count("max_retries", settings["max_retries"], least=0)
        checks.check_count("token_budget", settings["token_budget"], optional=True)
        for name in ("timeout", "tool_timeout"):
            checks.check_number(name, settings[name], low_open=True, optional=True)
    if not isinstance(settings["answer_on_repeat"], bool):
        raise InvalidArgument("answer_on_repeat", f"must be a bool, not {type(settings['answer_on_repeat']).__name__}")


def check_runtime(runtime: Any) -> None:
    """None (the default model) or a `Runtime`."""
    if runtime is not None and not isinstance(runtime, Runtime):
        raise InvalidArgument("runtime", f"must be a runtimes.Runtime or None, not {type(runtime).__name__}")


def check_tool_item(index: int, item: Any) -> None:
    """A `Tool` or a function to make one of (a `Tool` is callable too)."""
    if not callable(item):
        raise InvalidArgument(f"tools[{index}]", f"must be a Tool or a function, not {type(item).__name__}")

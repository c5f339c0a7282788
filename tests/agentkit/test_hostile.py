"""Hostile inputs to the agent loop and extraction: arguments and outputs nested past the stack,
numbers past Python's digit limit, tool results that cannot become text, tools that raise
`SystemExit`, async tools that block the loop, malformed prompts and settings, runtimes that
fail mid-run. Each gives a typed error (a `RunError` keeping the messages so far) or the right
behaviour, never a raw exception."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from typing import Any

import pytest
from pydantic import BaseModel

from agentkit import (
    Agent,
    InvalidArgument,
    ModelRequestFailed,
    OutputValidationError,
    ToolAborted,
    ToolArgumentsError,
    ToolTimeout,
    UnreadableOutput,
    UnreadableResult,
    extract,
    tool,
)
from agentkit._bounds import MAX_NESTING
from runtimes import Generation, InvalidRequest, ServerError, Usage
from runtimes.testing import ScriptedRuntime


def call(name: str, arguments: str) -> str:
    return f'{{"name":"{name}","arguments":{arguments}}}'


class Node(BaseModel):
    children: list[Node] = []


@tool
def walk(node: Node) -> str:
    """Count a tree's nodes."""

    def count(n: Node) -> int:
        return 1 + sum(count(c) for c in n.children)

    return f"{count(node)} nodes"


def tree(levels: int) -> str:
    """A `Node` as JSON, `levels` nodes deep (two JSON levels per node: object and list)."""
    return '{"children":[' * (levels - 1) + "{}" + "]}" * (levels - 1)


def tool_message(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in messages if m["role"] == "tool")


# --- deep and long values -----------------------------------------------------------------------


def test_arguments_at_the_nesting_bound_run() -> None:
    levels = MAX_NESTING // 2  # node objects and their lists: the arguments nest exactly MAX_NESTING
    assert json.dumps(json.loads('{"node":' + tree(levels) + "}")).count("[") == levels - 1
    rt = ScriptedRuntime([call("walk", '{"node":' + tree(levels) + "}"), "done"])
    result = Agent([walk], rt, max_tokens=10**5).run_sync("count")
    assert tool_message(result.messages) == f"{levels} nodes"


@pytest.mark.parametrize("levels", [MAX_NESTING // 2 + 1, 300, 5000])
def test_a_call_nested_past_the_bound_goes_back_to_the_model(levels: int) -> None:
    deep = call("walk", '{"node":' + tree(levels) + "}")
    rt = ScriptedRuntime([deep, call("walk", '{"node":{}}'), "done"])
    result = Agent([walk], rt, max_tokens=10**6).run_sync("count")
    refusal = result.messages[2]
    assert refusal["role"] == "user" and f"at most {MAX_NESTING}" in refusal["content"]
    assert tool_message(result.messages) == "1 nodes"


def test_deep_turns_past_max_retries_end_the_run_with_the_messages() -> None:
    deep = call("walk", '{"node":' + tree(2000) + "}")
    rt = ScriptedRuntime([deep, deep])
    with pytest.raises(UnreadableOutput) as info:
        Agent([walk], rt, max_tokens=10**6, max_retries=1).run_sync("count")
    assert info.value.text == deep
    assert "4001 levels" in info.value.reason
    assert [m["role"] for m in info.value.messages] == ["user", "assistant", "user", "assistant"]


def test_a_tool_validates_deep_arguments_without_recursion() -> None:
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"children": [deep]}
    for arguments in ({"node": deep}, json.dumps({"node": {"children": []}})[:-1] + "," + '"x":' + "[" * 5000):
        with pytest.raises(ToolArgumentsError) as info:
            walk.validate(arguments)
        assert info.value.violations[0].keyword == "bounds"


def test_a_number_past_the_digit_limit_is_refused_not_raised() -> None:
    digits = sys.get_int_max_str_digits() + 1
    long = call("walk", '{"node":{"children":[]},"size":' + "7" * digits + "}")
    rt = ScriptedRuntime([Generation(long, "grammar_complete", Usage()), "done"])
    result = Agent([walk], rt).run_sync("count")
    assert f"a number of {digits} digits" in result.messages[2]["content"]
    with pytest.raises(OutputValidationError) as info:
        extract(int, "seven", runtime=ScriptedRuntime([Generation("7" * digits, "grammar_complete", Usage())]), max_retries=0)
    assert info.value.violations[0].keyword == "bounds" and info.value.messages


def test_extract_refuses_deep_output_with_the_messages() -> None:
    deep = tree(3000)
    with pytest.raises(OutputValidationError) as info:
        extract(Node, "a tree", runtime=ScriptedRuntime([Generation(deep, "grammar_complete", Usage())]), max_retries=0)
    assert info.value.violations[0].keyword == "bounds"
    assert info.value.messages[-1] == {"role": "assistant", "content": deep}


# --- tool results and what tools raise ----------------------------------------------------------


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")

    __repr__ = __str__


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")

    __repr__ = __str__


class Custom(BaseException):
    """A BaseException of a library's own, neither an Exception nor an interrupt."""


def _raise(exc: BaseException) -> Any:
    raise exc


RESULTS: dict[str, Any] = {
    "unprintable": lambda: Unprintable(),
    "huge_int_beside_an_object": lambda: [10**5000, object()],  # no JSON, and no repr past the digit limit
    "system_exit": lambda: _raise(SystemExit(3)),
    "generator_exit": lambda: _raise(GeneratorExit()),
    "custom_base": lambda: _raise(Custom("mine")),
    "unprintable_error": lambda: _raise(UnprintableError()),
    "surrogates": lambda: "half \ud83d of a pair, a pair \ud83d\ude00",
}


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("kind", list(RESULTS))
def test_what_a_tool_returns_or_raises_goes_back_to_the_model(kind: str, is_async: bool) -> None:
    make = RESULTS[kind]

    def misbehave() -> Any:
        """Misbehave."""
        return make()

    async def misbehave_async() -> Any:
        """Misbehave."""
        return make()

    t = tool(misbehave_async if is_async else misbehave, name="misbehave")
    rt = ScriptedRuntime([call("misbehave", "{}"), "done"])
    result = Agent([t], rt).run_sync("go")
    assert result.output == "done"
    (record,) = result.tool_calls
    text = tool_message(result.messages)
    text.encode("utf-8")  # the model can read it
    if kind == "surrogates":
        assert record.ok and text == "half \ufffd of a pair, a pair \U0001f600"
    elif kind in ("unprintable", "huge_int_beside_an_object"):
        assert isinstance(record.error, UnreadableResult) and text.startswith("Error: UnreadableResult")
    elif kind == "unprintable_error":
        assert isinstance(record.error, UnprintableError) and "cannot be shown" in text
    else:
        raised = {"system_exit": SystemExit, "generator_exit": GeneratorExit, "custom_base": Custom}[kind]
        assert isinstance(record.error, ToolAborted) and type(record.error.__cause__) is raised
        assert text.startswith(f"Error: ToolAborted: tool 'misbehave' raised {raised.__name__}")


# An interrupt leaves the run's coroutine unfinished, as asyncio leaves any task it interrupts;
# collected here, its closing is reported as unraisable.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_keyboard_interrupt_from_a_tool_still_interrupts() -> None:
    @tool
    async def interrupt() -> str:
        """Interrupt."""
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Agent([interrupt], ScriptedRuntime([call("interrupt", "{}"), "done"])).run_sync("go")
    gc.collect()


def test_an_async_tool_that_blocks_the_loop_past_its_timeout_times_out() -> None:
    @tool(timeout=0.05)
    async def blocking() -> str:
        """Block the event loop."""
        time.sleep(0.2)  # noqa: ASYNC251  the point: no await, so no timer can fire
        return "late"

    result = Agent([blocking], ScriptedRuntime([call("blocking", "{}"), "done"])).run_sync("go")
    (record,) = result.tool_calls
    assert isinstance(record.error, ToolTimeout)
    assert tool_message(result.messages) == "Error: ToolTimeout: tool 'blocking' did not finish within 0.05 s"


# --- malformed arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "argument"),
    [
        ([{"content": "hi"}], "prompt[0].role"),
        ([{"role": 3, "content": "hi"}], "prompt[0].role"),
        (["hello"], "prompt[0]"),
        ([{"role": "user", "content": 5}], "prompt[0].content"),
        ([{"role": "user", "content": "a\ud800"}], "prompt[0].content"),
        ("a\udfff", "prompt"),
        (None, "prompt"),
        (5, "prompt"),
    ],
)
def test_a_malformed_prompt_is_refused_naming_where(prompt: Any, argument: str) -> None:
    rt = ScriptedRuntime(["unused"])
    with pytest.raises(InvalidArgument) as info:
        Agent([], rt).run_sync(prompt)
    assert info.value.argument == argument
    assert rt.calls == []


@pytest.mark.parametrize(
    ("settings", "argument"),
    [
        ({"max_tokens": "5"}, "max_tokens"),
        ({"max_tokens": float("nan")}, "max_tokens"),
        ({"max_tokens": 2.5}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"seed": -1}, "seed"),
        ({"seed": 2**64}, "seed"),
        ({"temperature": float("inf")}, "temperature"),
        ({"temperature": -0.5}, "temperature"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_retries": -1}, "max_retries"),
        ({"timeout": float("nan")}, "timeout"),
        ({"tool_timeout": 0}, "tool_timeout"),
        ({"token_budget": 1.5}, "token_budget"),
        ({"system_prompt": b"bytes"}, "system_prompt"),
        ({"runtime": "scripted"}, "runtime"),
        ({"tools": [walk, walk]}, "tools[1]"),
        ({"tools": [5]}, "tools[0]"),
        ({"tools": "walk"}, "tools"),
    ],
)
def test_a_bad_agent_setting_is_refused_naming_it(settings: dict[str, Any], argument: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        Agent(**settings)
    assert info.value.argument == argument
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("options", "argument"),
    [({"max_tokens": "5"}, "max_tokens"), ({"seed": -1}, "seed"), ({"runtime": object()}, "runtime")],
)
def test_a_bad_extract_argument_is_refused_naming_it(options: dict[str, Any], argument: str) -> None:
    options.setdefault("runtime", ScriptedRuntime(["1"]))
    with pytest.raises(InvalidArgument) as info:
        extract(int, "one", **options)
    assert info.value.argument == argument
    with pytest.raises(InvalidArgument, match="text"):
        extract(int, None, runtime=ScriptedRuntime(["1"]))  # type: ignore[arg-type]


def test_a_scripted_text_no_model_could_write_is_refused() -> None:
    with pytest.raises(InvalidRequest, match=r"responses\[1\]"):
        ScriptedRuntime(["fine", "a\ud800"])


# --- runtimes that fail mid-run -----------------------------------------------------------------


class FailingRuntime(ScriptedRuntime):
    """Answers from its script, then raises `error` on the call after it."""

    def __init__(self, responses: list[str], error: Exception):
        super().__init__(responses)
        self.error = error

    async def _generate(self, request: Any) -> Generation:
        if not self.responses:
            raise self.error
        return await super()._generate(request)


@pytest.mark.parametrize("stream", [False, True], ids=["run", "run_stream"])
@pytest.mark.parametrize(
    "error",
    [ServerError("502 from the server", status=502), InvalidRequest("messages", "bad"), ValueError("a bug"),
     RecursionError("deep")],
    ids=["server", "invalid", "value", "recursion"],
)
def test_a_runtime_failing_mid_run_keeps_the_messages(error: Exception, stream: bool) -> None:
    rt = FailingRuntime([call("walk", '{"node":{}}')], error)
    if stream:
        rt._stream = lambda request: _failing_stream(rt, request)  # type: ignore[method-assign]
    agent = Agent([walk], rt)

    async def go() -> None:
        if stream:
            async for _ in agent.run_stream("count"):
                pass
        else:
            await agent.run("count")

    with pytest.raises(ModelRequestFailed) as info:
        asyncio.run(go())
    assert info.value.__cause__ is error
    assert [m["role"] for m in info.value.messages] == ["user", "assistant", "tool"]
    assert info.value.messages[-1]["content"] == "1 nodes"


def _failing_stream(rt: FailingRuntime, request: Any) -> Any:
    if not rt.responses:
        raise rt.error  # raised by the call itself, before any piece
    return ScriptedRuntime._stream(rt, request)
